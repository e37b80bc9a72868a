-- +goose Up
-- Deliveries that need a WebhookDelivery resource (their first attempt failed, or the
-- endpoint is failing) while the live resources are at a cap (all of them, or the endpoint's):
-- they wait here, durable and in order, and the dispatcher of each replica turns them into
-- resources as room frees (oldest first per endpoint), then deletes the row. A row claimed
-- for promotion holds claimed_until; past it another replica may take it. The previous
-- release never reads this table.
CREATE TABLE webhook_deferred_deliveries (
    delivery_name text PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    endpoint_public_id text NOT NULL,
    event_id uuid NOT NULL,
    -- outbox_id is the outbox row the delivery came from (a resend's own row).
    outbox_id uuid NOT NULL,
    event_type text NOT NULL,
    resend_of text NOT NULL DEFAULT '',
    salt text NOT NULL DEFAULT '',
    event_created_at timestamptz NOT NULL,
    deferred_at timestamptz NOT NULL,
    claimed_until timestamptz
);

-- The promoter's scan of endpoints with rows waiting, and each endpoint's oldest first.
CREATE INDEX webhook_deferred_deliveries_endpoint
    ON webhook_deferred_deliveries (account_id, endpoint_public_id, event_created_at, delivery_name);

-- +goose Down
DROP TABLE webhook_deferred_deliveries;
