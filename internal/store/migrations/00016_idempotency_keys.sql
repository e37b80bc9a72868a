-- +goose Up
-- Idempotency-Key records of POST requests (apiserver/idempotency.go, store/idempotency.go).
-- state: running (claimed, no PostgreSQL work committed yet), committed (the request's
-- PostgreSQL work committed in the same transaction that set this state; answer not saved
-- yet), completed (answer saved for replay).
CREATE TABLE idempotency_keys (
    account_id   bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key          text        NOT NULL,
    route        text        NOT NULL,
    body_sha256  bytea       NOT NULL,
    state        text        NOT NULL CHECK (state IN ('running', 'committed', 'completed')),
    token        uuid        NOT NULL,
    locked_until timestamptz NOT NULL,
    status       integer,
    header       jsonb,
    body         bytea,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
