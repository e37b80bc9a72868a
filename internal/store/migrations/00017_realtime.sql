-- +goose Up
-- The live channel (internal/realtime). Every change an account's subscribers hear about is
-- announced with pg_notify on 'switchboard_realtime' by a trigger, so it is sent by the same
-- transaction that writes the change and delivered only when that transaction commits.
-- Payload: {"a": account id, "e": event name, "d": event object} or, for an outbox event too
-- large for NOTIFY's 8000 bytes, {"a", "e", "ref": events.id} (the listener reads the body);
-- {"revoke_key": id} / {"revoke_user": id} end the subscriptions a key or a user authorised.

-- Call progress reports of the platform (ringing, answered), once per call and state.
-- call_public_id is the id the finished call report will get, so every event of a call names
-- the same call.
CREATE TABLE call_progress (
    account_id     bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    platform_ref   text NOT NULL,
    state          text NOT NULL CHECK (state IN ('ringing', 'answered')),
    call_public_id text NOT NULL,
    body           jsonb NOT NULL,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (account_id, platform_ref, state)
);
CREATE INDEX call_progress_created ON call_progress (created_at);

-- Subscriptions /v1/realtime/auth allowed: which key authorised a socket's channel, so the
-- subscription ends when that key is revoked or its user leaves. Unlogged: a database crash
-- only makes clients authorise again.
CREATE UNLOGGED TABLE realtime_grants (
    socket_id  text NOT NULL,
    channel    text NOT NULL,
    key_id     bigint NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (socket_id, channel)
);
CREATE INDEX realtime_grants_created ON realtime_grants (created_at);

-- +goose StatementBegin
CREATE FUNCTION realtime_notify(account bigint, event text, data jsonb) RETURNS void LANGUAGE sql AS $$
    SELECT pg_notify('switchboard_realtime', json_build_object('a', account, 'e', event, 'd', data)::text)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION realtime_outbox_event() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER events_realtime AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION realtime_outbox_event();

-- +goose StatementBegin
CREATE FUNCTION realtime_call_progress() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM realtime_notify(NEW.account_id, 'call.' || NEW.state, NEW.body);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER call_progress_realtime AFTER INSERT ON call_progress FOR EACH ROW EXECUTE FUNCTION realtime_call_progress();

-- Texts: ids and numbers, not the body (fetch it through the API).
-- +goose StatementBegin
CREATE FUNCTION realtime_text_received() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.direction <> 'inbound' THEN
        RETURN NULL;
    END IF;
    PERFORM realtime_notify(NEW.account_id, 'text.received', json_build_object(
        'event', 'text.received', 'id', gen_random_uuid(), 'created_at', date_trunc('second', now()),
        'message', json_build_object('conversation_public_id', c.public_id, 'direction', NEW.direction,
            'from_e164', NEW.from_e164, 'to_e164', NEW.to_e164, 'segments', NEW.segments, 'received_at', NEW.received_at),
        'number', json_build_object('e164', n.e164, 'label', n.label))::jsonb)
    FROM sms_conversations c JOIN numbers n ON n.id = c.number_id WHERE c.id = NEW.conversation_id;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER sms_messages_realtime AFTER INSERT ON sms_messages FOR EACH ROW EXECUTE FUNCTION realtime_text_received();

-- Message slips: who left it and when, not its recordings or transcript.
-- +goose StatementBegin
CREATE FUNCTION realtime_message_slip() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM realtime_notify(NEW.account_id, 'message_slip.received', json_build_object(
        'event', 'message_slip.received', 'id', gen_random_uuid(), 'created_at', date_trunc('second', now()),
        'message_slip', json_build_object('public_id', NEW.public_id, 'from_e164', NEW.from_e164,
            'caller_name', NEW.caller_name, 'department', NEW.department, 'received_at', NEW.received_at),
        'number', (SELECT json_build_object('e164', n.e164, 'label', n.label) FROM numbers n WHERE n.id = NEW.number_id))::jsonb);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER message_slips_realtime AFTER INSERT ON message_slips FOR EACH ROW EXECUTE FUNCTION realtime_message_slip();

-- To-dos: the to-do as GET /tasks lists it (its text is the call card's to-do line).
-- +goose StatementBegin
CREATE FUNCTION realtime_todo() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM realtime_notify(NEW.account_id, 'todo.created', json_build_object(
        'event', 'todo.created', 'id', gen_random_uuid(), 'created_at', date_trunc('second', now()),
        'todo', json_build_object('public_id', NEW.public_id, 'text', NEW.text, 'status', NEW.status,
            'callback_e164', NEW.callback_e164, 'urgency', NEW.urgency, 'created_at', NEW.created_at,
            'call_id', (SELECT c.public_id FROM calls c WHERE c.id = NEW.call_id)))::jsonb);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER tasks_realtime AFTER INSERT ON tasks FOR EACH ROW EXECUTE FUNCTION realtime_todo();

-- Notifications belong to one user: the channel only says one exists and for whom; its
-- title and body are read through GET /notifications with that user's key.
-- +goose StatementBegin
CREATE FUNCTION realtime_notification() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM realtime_notify(NEW.account_id, 'notification.created', json_build_object(
        'event', 'notification.created', 'id', gen_random_uuid(), 'created_at', date_trunc('second', now()),
        'notification', json_build_object('id', NEW.id, 'type', NEW.type, 'created_at', NEW.created_at),
        'user', (SELECT json_build_object('public_id', u.public_id) FROM users u WHERE u.id = NEW.user_id))::jsonb);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER notifications_realtime AFTER INSERT ON notifications FOR EACH ROW EXECUTE FUNCTION realtime_notification();

-- +goose StatementBegin
CREATE FUNCTION realtime_key_revoked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('switchboard_realtime', json_build_object('revoke_key', OLD.id)::text);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER api_keys_revoked_realtime AFTER UPDATE OF revoked_at ON api_keys
    FOR EACH ROW WHEN (NEW.revoked_at IS NOT NULL AND OLD.revoked_at IS NULL) EXECUTE FUNCTION realtime_key_revoked();
CREATE TRIGGER api_keys_deleted_realtime AFTER DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION realtime_key_revoked();

-- +goose StatementBegin
CREATE FUNCTION realtime_user_left() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('switchboard_realtime', json_build_object('revoke_user', NEW.id)::text);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER users_left_realtime AFTER UPDATE OF left_at ON users
    FOR EACH ROW WHEN (NEW.left_at IS NOT NULL AND OLD.left_at IS NULL) EXECUTE FUNCTION realtime_user_left();

-- +goose Down
DROP TRIGGER users_left_realtime ON users;
DROP FUNCTION realtime_user_left();
DROP TRIGGER api_keys_deleted_realtime ON api_keys;
DROP TRIGGER api_keys_revoked_realtime ON api_keys;
DROP FUNCTION realtime_key_revoked();
DROP TRIGGER notifications_realtime ON notifications;
DROP FUNCTION realtime_notification();
DROP TRIGGER tasks_realtime ON tasks;
DROP FUNCTION realtime_todo();
DROP TRIGGER message_slips_realtime ON message_slips;
DROP FUNCTION realtime_message_slip();
DROP TRIGGER sms_messages_realtime ON sms_messages;
DROP FUNCTION realtime_text_received();
DROP TRIGGER call_progress_realtime ON call_progress;
DROP FUNCTION realtime_call_progress();
DROP TRIGGER events_realtime ON events;
DROP FUNCTION realtime_outbox_event();
DROP FUNCTION realtime_notify(bigint, text, jsonb);
DROP TABLE realtime_grants;
DROP TABLE call_progress;
