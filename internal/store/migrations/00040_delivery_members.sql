-- +goose Up
-- The replicas that make webhook first attempts announce themselves here with a heartbeat
-- (internal/fleet): each endpoint's concurrency bound is split among the live ones. A row
-- is kept only while its replica beats (the others delete rows long silent).
CREATE TABLE delivery_members (
    id           text PRIMARY KEY,
    joined_at    timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE delivery_members;
