-- +goose Up
-- Each attempt of a webhook delivery that needed more than one (the delivery page shows them):
-- a first attempt that succeeds writes nothing here, its history row says all there is. Range-
-- partitioned by the attempt's time (created_at) like webhook_delivery_history, one partition
-- a day, made ahead and dropped after the retention window by the retention maintainer, which
-- makes today's and the next days' partitions when the leader starts (rows written before
-- then wait in the DEFAULT partition and move into them). The previous release never reads or
-- writes this table.
CREATE TABLE webhook_delivery_attempts (
    account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    endpoint_public_id text NOT NULL,
    delivery_name text NOT NULL,
    event_id uuid NOT NULL,
    -- attempt is the delivery's count of attempts with this one (1: its first).
    attempt integer NOT NULL,
    -- created_at is when the attempt was sent.
    created_at timestamptz NOT NULL,
    -- response_code is NULL when no answer arrived (error says why).
    response_code integer,
    error text NOT NULL DEFAULT '',
    duration_ms integer NOT NULL,
    -- response_body is the first bytes of the answer's body (at most 4 KiB).
    response_body bytea NOT NULL DEFAULT ''::bytea,
    -- next_attempt_at is when the retry after a failed attempt is due (NULL: none follows).
    next_attempt_at timestamptz,
    UNIQUE (delivery_name, created_at)
) PARTITION BY RANGE (created_at);

COMMENT ON TABLE webhook_delivery_attempts IS 'Attempts of webhook deliveries that needed more than one, partitioned by day of created_at and dropped after the retention window.';

-- The delivery page reads one endpoint's deliveries' attempts.
CREATE INDEX webhook_delivery_attempts_delivery
    ON webhook_delivery_attempts (account_id, endpoint_public_id, delivery_name, created_at);

CREATE TABLE webhook_delivery_attempts_default PARTITION OF webhook_delivery_attempts DEFAULT;
COMMENT ON TABLE webhook_delivery_attempts_default IS 'Rows no dated partition covers: should stay empty (alert SwitchboardRetentionDefaultPartitionRows).';

-- +goose Down
DROP TABLE webhook_delivery_attempts;
