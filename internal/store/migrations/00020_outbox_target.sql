-- +goose Up
-- A test event goes to one endpoint, not to every endpoint that subscribes to its type: it is
-- queued in the outbox like every other event (so it gets the dispatcher's back-pressure and
-- the engine's first attempt) with the endpoint it is for. NULL: fan out as before.
ALTER TABLE events ADD COLUMN endpoint_public_id text;

-- +goose Down
ALTER TABLE events DROP COLUMN endpoint_public_id;
