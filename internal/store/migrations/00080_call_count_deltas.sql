-- +goose Up
-- Counts of new calls as deltas, folded in later, so that a call report does not pay for them.
--
-- Four statement triggers on calls (00002, 00010, 00012, 00013 as 00060 left them) add every
-- new call to six count tables: seven upserts, a zone lookup and three advisory locks, about
-- half of PostgreSQL's work for a report of one call. A transaction that sets
-- switchboard.count_deltas to 'on' (the ingestion path does, for its own transaction only)
-- instead appends its new calls to call_count_deltas, one row per call; call_counts_fold
-- moves them into the count tables in batches, through the same trigger functions, so the
-- counts come out as the triggers would have made them. Readers read the *_current views:
-- a count table plus the pending deltas, in one snapshot, so every figure stays exact whether
-- or not a delta has been folded yet (a fold deletes the deltas and adds them to the tables in
-- one transaction).
--
-- Updates and deletes of calls, and inserts by any other transaction (the previous release's
-- ingestion, imports, the demo), keep the full path: sums are additive, so a delta folded after
-- a later update or delete of its call comes out the same. The directory's share of a caller's
-- calls (call_name_counts.calls_from_directory) is worked out when a delta is folded, against
-- the directory as it is then, and a change of the directory adjusts only folded counts
-- (call_directory_apply), which together give the same figure. A change of an account's zone
-- folds the account's deltas before it recounts (call_counts_local_rezone below).
--
-- The previous release reads the tables, not the views: while it runs beside this one it sees
-- a call in the counts once the call's delta is folded (within a second), and its own inserts
-- fold any deltas left behind.
CREATE TABLE call_count_deltas (
    call_id         bigint NOT NULL,
    account_id      bigint NOT NULL,
    started_at      timestamptz NOT NULL,
    number_id       bigint,
    filtered        boolean NOT NULL,
    disposition     text NOT NULL,
    forward_seconds integer NOT NULL,
    sentiment       text,
    urgency         text,
    from_e164       text NOT NULL,
    caller_name     text NOT NULL
);
-- Readers pick an account's pending deltas. No key to accounts (a check per call): the
-- deletion of an account folds its deltas (accounts_drop_call_count_deltas).
CREATE INDEX call_count_deltas_account ON call_count_deltas (account_id);

-- The rows being folded, seen only inside the folding transaction: inserting them fires the
-- count triggers of calls, which read them as new_calls.
CREATE UNLOGGED TABLE call_count_folds (LIKE call_count_deltas);

-- A deferring insert takes the zone lock of its accounts (shared), as the full path does, so
-- that a change of zone waits for it and then finds its deltas (call_counts_local_rezone).
-- +goose StatementBegin
CREATE FUNCTION call_counts_defer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM count(pg_advisory_xact_lock_shared(hashtextextended('call-counts-zone', account_id)))
    FROM (SELECT DISTINCT account_id FROM new_calls ORDER BY 1) a;
    INSERT INTO call_count_deltas (call_id, account_id, started_at, number_id, filtered, disposition, forward_seconds,
        sentiment, urgency, from_e164, caller_name)
    SELECT id, account_id, started_at, number_id, filtered, disposition, forward_seconds, sentiment, urgency, from_e164, caller_name
    FROM new_calls;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- The insert triggers of calls, full path or deltas by the transaction's setting.
DROP TRIGGER calls_count_insert ON calls;
DROP TRIGGER calls_count_local_insert ON calls;
DROP TRIGGER calls_caller_count_insert ON calls;
DROP TRIGGER calls_sentiment_count_insert ON calls;
CREATE TRIGGER calls_count_insert AFTER INSERT ON calls REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT
    WHEN (current_setting('switchboard.count_deltas', true) IS DISTINCT FROM 'on') EXECUTE FUNCTION call_counts_apply();
CREATE TRIGGER calls_count_local_insert AFTER INSERT ON calls REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT
    WHEN (current_setting('switchboard.count_deltas', true) IS DISTINCT FROM 'on') EXECUTE FUNCTION call_counts_local_insert();
CREATE TRIGGER calls_caller_count_insert AFTER INSERT ON calls REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT
    WHEN (current_setting('switchboard.count_deltas', true) IS DISTINCT FROM 'on') EXECUTE FUNCTION call_caller_counts_apply();
CREATE TRIGGER calls_sentiment_count_insert AFTER INSERT ON calls REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT
    WHEN (current_setting('switchboard.count_deltas', true) IS DISTINCT FROM 'on') EXECUTE FUNCTION call_counts_sentiment_apply();
CREATE TRIGGER calls_count_defer AFTER INSERT ON calls REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT
    WHEN (current_setting('switchboard.count_deltas', true) = 'on') EXECUTE FUNCTION call_counts_defer();

-- The same functions fold: an insert into call_count_folds counts its rows as new calls.
CREATE TRIGGER call_count_folds_count AFTER INSERT ON call_count_folds
    REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_counts_apply();
CREATE TRIGGER call_count_folds_local AFTER INSERT ON call_count_folds
    REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_counts_local_insert();
CREATE TRIGGER call_count_folds_caller AFTER INSERT ON call_count_folds
    REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_caller_counts_apply();
CREATE TRIGGER call_count_folds_sentiment AFTER INSERT ON call_count_folds
    REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_counts_sentiment_apply();

-- call_counts_fold folds up to max_rows pending deltas and returns how many; 0 when another
-- transaction is folding (one at a time: they would wait on each other's rows) or there is
-- nothing to fold. It takes the zone locks of the accounts it folds (shared, in account
-- order, as the count triggers do) before it takes their rows, so that it waits for a change
-- of zone instead of holding rows the change folds itself.
-- +goose StatementBegin
CREATE FUNCTION call_counts_fold(max_rows integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    accounts bigint[];
    n integer;
BEGIN
    IF NOT pg_try_advisory_xact_lock(20800) THEN
        RETURN 0;
    END IF;
    accounts := ARRAY(SELECT DISTINCT account_id FROM (SELECT account_id FROM call_count_deltas LIMIT max_rows) d ORDER BY 1);
    PERFORM count(pg_advisory_xact_lock_shared(hashtextextended('call-counts-zone', a)))
    FROM (SELECT unnest(accounts) AS a ORDER BY 1) l;
    WITH taken AS (
        DELETE FROM call_count_deltas
        WHERE ctid = ANY (ARRAY(SELECT ctid FROM call_count_deltas WHERE account_id = ANY (accounts) LIMIT max_rows))
        RETURNING *)
    INSERT INTO call_count_folds SELECT * FROM taken;
    GET DIAGNOSTICS n = ROW_COUNT;
    DELETE FROM call_count_folds;
    RETURN n;
END $$;
-- +goose StatementEnd

-- call_counts_fold_account folds every pending delta of one account whose zone lock the
-- caller holds.
-- +goose StatementBegin
CREATE FUNCTION call_counts_fold_account(account bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    WITH taken AS (DELETE FROM call_count_deltas WHERE account_id = account RETURNING *)
    INSERT INTO call_count_folds SELECT * FROM taken;
    DELETE FROM call_count_folds;
END $$;
-- +goose StatementEnd

-- The deltas of a deleted account are folded as it goes: the deletes of its calls take theirs
-- away from the count tables without a key to accounts, and the count functions leave the
-- tables with one alone once the account is gone.
-- +goose StatementBegin
CREATE FUNCTION call_count_deltas_drop_account() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM call_counts_fold_account(OLD.id);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER accounts_drop_call_count_deltas AFTER DELETE ON accounts
    FOR EACH ROW EXECUTE FUNCTION call_count_deltas_drop_account();

-- The previous release's inserts take the full path, and fold what this release left.
-- +goose StatementBegin
CREATE FUNCTION call_counts_fold_left() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM call_count_deltas) THEN
        PERFORM call_counts_fold(100000);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER calls_count_fold_left AFTER INSERT ON calls FOR EACH STATEMENT
    WHEN (current_setting('switchboard.count_deltas', true) IS DISTINCT FROM 'on') EXECUTE FUNCTION call_counts_fold_left();

-- +goose StatementBegin
CREATE FUNCTION call_count_deltas_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE call_count_deltas;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER calls_count_deltas_truncate AFTER TRUNCATE ON calls
    FOR EACH STATEMENT EXECUTE FUNCTION call_count_deltas_truncate();

-- A change of zone folds the account's pending deltas first, under the zone lock (which
-- deferring inserts and folds take too, shared), and then recounts its local days from all its
-- calls: every call is counted once, in the new zone.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION call_counts_local_rezone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF call_counts_zone(OLD.time_zone) = call_counts_zone(NEW.time_zone) THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('call-counts-zone', NEW.id));
    PERFORM call_counts_fold_account(NEW.id);
    DELETE FROM call_counts_local WHERE account_id = NEW.id;
    EXECUTE call_counts_local_add_sql(format('SELECT account_id, started_at, number_id, filtered, disposition, forward_seconds,
        sentiment, 1 AS sign, %L AS tz FROM calls WHERE account_id = %s', call_counts_zone(NEW.time_zone), NEW.id), '0');
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- Each count table with the pending deltas, as the triggers would add them.
CREATE VIEW call_counts_daily_current AS
    SELECT account_id, day, filtered, disposition, calls FROM call_counts_daily
    UNION ALL
    SELECT account_id, (started_at AT TIME ZONE 'UTC')::date, filtered, disposition, 1 FROM call_count_deltas;
CREATE VIEW call_counts_hourly_current AS
    SELECT account_id, hour, number_id, filtered, disposition, calls, forward_seconds FROM call_counts_hourly
    UNION ALL
    SELECT account_id, date_trunc('hour', started_at, 'UTC'), COALESCE(number_id, 0), filtered, disposition, 1, forward_seconds
    FROM call_count_deltas;
CREATE VIEW call_counts_sentiment_daily_current AS
    SELECT account_id, day, filtered, disposition, sentiment, urgency, calls FROM call_counts_sentiment_daily
    UNION ALL
    SELECT account_id, (started_at AT TIME ZONE 'UTC')::date, filtered, disposition, COALESCE(sentiment, ''), COALESCE(urgency, ''), 1
    FROM call_count_deltas WHERE sentiment IS NOT NULL OR urgency IS NOT NULL;
CREATE VIEW call_caller_counts_current AS
    SELECT account_id, filtered, from_e164, caller_name_lower, calls FROM call_caller_counts
    UNION ALL
    SELECT account_id, filtered, from_e164, lower(caller_name), 1 FROM call_count_deltas;
CREATE VIEW call_name_counts_current AS
    SELECT account_id, filtered, caller_name_lower, calls, calls_from_directory FROM call_name_counts
    UNION ALL
    SELECT account_id, filtered, lower(caller_name), 1,
        CASE WHEN EXISTS (SELECT 1 FROM contact_phones cp WHERE cp.account_id = d.account_id AND cp.e164 = d.from_e164) THEN 1 ELSE 0 END
    FROM call_count_deltas d;
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE 'CREATE VIEW call_counts_local_current AS
        SELECT account_id, day, number_id, calls, filtered, answered, missed, voicemail, blocked, forward_seconds,
            positive, neutral, negative, hours FROM call_counts_local
        UNION ALL
        SELECT * FROM (' || call_counts_local_rows_sql('SELECT d.account_id, d.started_at, d.number_id, d.filtered,
            d.disposition, d.forward_seconds, d.sentiment, 1 AS sign, call_counts_zone(a.time_zone) AS tz
            FROM call_count_deltas d JOIN accounts a ON a.id = d.account_id') || ') pending';
END $$;
-- +goose StatementEnd

-- +goose Down
-- Fold what is pending, then the insert triggers of 00060 again.
SELECT call_counts_fold(2147483647);
DROP VIEW call_counts_local_current, call_name_counts_current, call_caller_counts_current,
    call_counts_sentiment_daily_current, call_counts_hourly_current, call_counts_daily_current;
DROP TRIGGER calls_count_deltas_truncate ON calls;
DROP FUNCTION call_count_deltas_truncate();
DROP TRIGGER calls_count_fold_left ON calls;
DROP FUNCTION call_counts_fold_left();
DROP TRIGGER calls_count_defer ON calls;
DROP TRIGGER calls_count_insert ON calls;
DROP TRIGGER calls_count_local_insert ON calls;
DROP TRIGGER calls_caller_count_insert ON calls;
DROP TRIGGER calls_sentiment_count_insert ON calls;
CREATE TRIGGER calls_count_insert AFTER INSERT ON calls
    REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_counts_apply();
CREATE TRIGGER calls_count_local_insert AFTER INSERT ON calls
    REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_counts_local_insert();
CREATE TRIGGER calls_caller_count_insert AFTER INSERT ON calls
    REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_caller_counts_apply();
CREATE TRIGGER calls_sentiment_count_insert AFTER INSERT ON calls
    REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_counts_sentiment_apply();
DROP TRIGGER accounts_drop_call_count_deltas ON accounts;
DROP FUNCTION call_count_deltas_drop_account();
DROP FUNCTION call_counts_fold(integer);
DROP FUNCTION call_counts_fold_account(bigint);
DROP FUNCTION call_counts_defer();
DROP TABLE call_count_folds;
DROP TABLE call_count_deltas;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION call_counts_local_rezone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF call_counts_zone(OLD.time_zone) = call_counts_zone(NEW.time_zone) THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('call-counts-zone', NEW.id));
    DELETE FROM call_counts_local WHERE account_id = NEW.id;
    EXECUTE call_counts_local_add_sql(format('SELECT account_id, started_at, number_id, filtered, disposition, forward_seconds,
        sentiment, 1 AS sign, %L AS tz FROM calls WHERE account_id = %s', call_counts_zone(NEW.time_zone), NEW.id), '0');
    RETURN NULL;
END $$;
-- +goose StatementEnd
