-- +goose Up
-- Wake the webhook dispatcher when events are queued, instead of polling the outbox often: a
-- statement that inserts outbox rows sends one empty NOTIFY on 'switchboard_outbox', delivered
-- when its transaction commits (PostgreSQL folds identical notifications of one transaction
-- into one). The payload is empty: the listener only learns that there is something to claim.
-- +goose StatementBegin
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('switchboard_outbox', '');
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER events_outbox_notify AFTER INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

-- +goose Down
DROP TRIGGER events_outbox_notify ON events;
DROP FUNCTION outbox_notify();
