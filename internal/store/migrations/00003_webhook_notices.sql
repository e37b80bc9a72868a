-- +goose Up
-- Webhooks: one row per switch-off of an endpoint whose owners were (or are being) emailed.
-- The controller inserts the row before sending; the primary key makes the claim exclusive,
-- so a restarted manager or a second replica never emails the owners twice for one episode
-- of failure (an episode is identified by the endpoint's UID and its failing_since).
CREATE TABLE webhook_switchoff_notices (
    endpoint_uid  text NOT NULL,
    failing_since timestamptz NOT NULL,
    account_id    bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    endpoint_name text NOT NULL,
    claimed_at    timestamptz NOT NULL,
    PRIMARY KEY (endpoint_uid, failing_since)
);

-- Resends and the deliveries list look finished deliveries up by event.
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (account_id, endpoint_public_id, event_id);

-- +goose Down
DROP INDEX webhook_deliveries_event;
DROP TABLE webhook_switchoff_notices;
