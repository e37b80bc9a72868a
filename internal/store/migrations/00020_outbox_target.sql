-- +goose Up
-- Test events and resends go to one endpoint, not to every endpoint that subscribes to the
-- event's type: they are queued in the outbox like every other event (so they get the
-- dispatcher's back-pressure and the engine's first attempt) with the endpoint they are for.
-- A resend is a row of its own (its id is the outbox row's, not the event's): resends names
-- the event it sends again (same body, same event id on the wire) and resend_of the delivery
-- it repeats. NULL: an ordinary event, fanned out as before.
ALTER TABLE events ADD COLUMN endpoint_public_id text, ADD COLUMN resends uuid, ADD COLUMN resend_of text;

-- A resend is not a new event: the live channel does not announce it again.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION realtime_outbox_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    msg text;
BEGIN
    IF NEW.type = 'test' OR NEW.resends IS NOT NULL THEN
        RETURN NULL;
    END IF;
    msg := '{"a":' || NEW.account_id || ',"e":' || to_json(NEW.type)::text || ',"d":' || convert_from(NEW.body, 'UTF8') || '}';
    IF octet_length(msg) > 7900 THEN
        msg := json_build_object('a', NEW.account_id, 'e', NEW.type, 'ref', NEW.id)::text;
    END IF;
    PERFORM pg_notify('switchboard_realtime', msg);
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION realtime_outbox_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    msg text;
BEGIN
    IF NEW.type = 'test' THEN
        RETURN NULL;
    END IF;
    msg := '{"a":' || NEW.account_id || ',"e":' || to_json(NEW.type)::text || ',"d":' || convert_from(NEW.body, 'UTF8') || '}';
    IF octet_length(msg) > 7900 THEN
        msg := json_build_object('a', NEW.account_id, 'e', NEW.type, 'ref', NEW.id)::text;
    END IF;
    PERFORM pg_notify('switchboard_realtime', msg);
    RETURN NULL;
END $$;
-- +goose StatementEnd
ALTER TABLE events DROP COLUMN endpoint_public_id, DROP COLUMN resends, DROP COLUMN resend_of;
