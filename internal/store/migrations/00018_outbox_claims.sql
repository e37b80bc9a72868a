-- +goose Up
-- The webhook dispatcher claims outbox events with a lease instead of holding their row
-- locks while it creates deliveries in kube-apiserver: a claim is one short statement that
-- sets claimed_until, the fan-out runs with no transaction open, and a second statement marks
-- the events dispatched. A dispatcher that stops in between leaves claimed_until in the past
-- once the lease ends, and the next pass takes the events again (the deliveries keep their
-- names, so the repeat is harmless).
ALTER TABLE events ADD COLUMN claimed_until timestamptz;

-- +goose Down
ALTER TABLE events DROP COLUMN claimed_until;
