-- +goose Up
-- The live channel is an Integrations operation: when an account is paused or loses the
-- Integrations gate (plan, add-ons, the service-side switch), every replica is told to check
-- the account again and end its subscriptions if the gate now refuses it (internal/realtime).
-- +goose StatementBegin
CREATE FUNCTION realtime_account_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('switchboard_realtime', json_build_object('recheck_account', NEW.id)::text);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER accounts_gate_realtime AFTER UPDATE OF status, plan, addons, integrations_disabled ON accounts
    FOR EACH ROW WHEN ((OLD.status, OLD.plan, OLD.addons, OLD.integrations_disabled)
        IS DISTINCT FROM (NEW.status, NEW.plan, NEW.addons, NEW.integrations_disabled))
    EXECUTE FUNCTION realtime_account_changed();

-- +goose Down
DROP TRIGGER accounts_gate_realtime ON accounts;
DROP FUNCTION realtime_account_changed();
