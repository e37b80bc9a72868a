-- +goose Up
-- The telephony platform's own id of each call report, so a report sent twice is recorded once.
ALTER TABLE calls ADD COLUMN platform_ref text;
CREATE UNIQUE INDEX calls_platform_ref ON calls (account_id, platform_ref) WHERE platform_ref IS NOT NULL;

-- +goose Down
DROP INDEX calls_platform_ref;
ALTER TABLE calls DROP COLUMN platform_ref;
