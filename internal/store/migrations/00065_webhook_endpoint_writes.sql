-- +goose Up
-- The last write to an account's webhook endpoints made through the API, as kube-apiserver
-- versioned it (the object's resourceVersion). The delivery dispatcher reads an account's
-- endpoints from its watched cache once the cache has seen this version, and from
-- kube-apiserver before then, so an endpoint created or changed through the API gets every
-- event claimed after the API answered. resource_version is NULL while a write is under way
-- (or when its version could not be recorded): the dispatcher then reads live. An account
-- without a row has had no such write since this table exists: its endpoints are read from
-- the cache.
CREATE TABLE webhook_endpoint_writes (
    account_id bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    resource_version bigint CHECK (resource_version > 0)
);

-- +goose Down
DROP TABLE webhook_endpoint_writes;
