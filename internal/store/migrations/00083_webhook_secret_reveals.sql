-- +goose Up
-- Each time an owner had an endpoint's signing secret shown again in the portal: who and when,
-- listed on the endpoint's page. The retention maintainer deletes rows older than 90 days, and
-- rows go with their account or user. The previous release never reads or writes this table.
CREATE TABLE webhook_secret_reveals (
    id bigserial PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    endpoint_public_id text NOT NULL,
    user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    revealed_at timestamptz NOT NULL
);

CREATE INDEX webhook_secret_reveals_endpoint ON webhook_secret_reveals (account_id, endpoint_public_id, revealed_at DESC);
-- The maintainer's prune.
CREATE INDEX webhook_secret_reveals_revealed_at ON webhook_secret_reveals (revealed_at);

-- +goose Down
DROP TABLE webhook_secret_reveals;
