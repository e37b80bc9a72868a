-- +goose Up
-- The webhook dispatcher claims outbox events with a lease instead of holding their row
-- locks while it creates deliveries in kube-apiserver: a claim is one short statement that
-- sets claimed_until, the fan-out runs with no transaction open, and a second statement marks
-- the events dispatched. A dispatcher that stops in between leaves claimed_until in the past
-- once the lease ends, and the next pass takes the events again (the deliveries keep their
-- names, so the repeat is harmless). claims counts the claims: a repeat (claims > 1) is
-- never a first attempt made straight from the outbox, since an attempt of the earlier claim
-- may have been made and recorded; it goes to the controller, which checks the history.
ALTER TABLE events ADD COLUMN claimed_until timestamptz, ADD COLUMN claims integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE events DROP COLUMN claimed_until, DROP COLUMN claims;
