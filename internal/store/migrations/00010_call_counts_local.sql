-- +goose Up
-- GET /analytics from one row per (account, local day, number) instead of the hourly counts and
-- the calls themselves (issue 3 benchmark).
--
-- A 90-day window read call_counts_hourly (up to 36 rows an hour: number x filtered x
-- disposition, ~75,000 rows at 1M calls) and counted sentiment over the window's calls, and an
-- account whose zone is not a whole number of hours from UTC aggregated every call of the window.
-- call_counts_local holds, per day of the account's own time zone and per number, every figure
-- the endpoint shows, so a 90-day window is at most 90 rows per number, in every zone.
--
-- Days are those of the account's time zone at the time of counting; a change of accounts.time_zone
-- recounts the account (call_counts_local_rezone). The zone is call_counts_zone(time_zone): a name
-- PostgreSQL does not know counts as Europe/London, the application's own fallback, so that a
-- zone cannot stop calls from being stored; GET /analytics compares that zone with its own and
-- counts from calls when they differ.
CREATE TABLE call_counts_local (
    account_id      bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    day             date NOT NULL,    -- in the account's time zone
    number_id       bigint NOT NULL,  -- 0: no number
    calls           bigint NOT NULL,  -- business calls: not filtered by call protection
    filtered        bigint NOT NULL,  -- calls filtered by call protection
    answered        bigint NOT NULL,  -- business calls by disposition from here
    missed          bigint NOT NULL,  -- no-answer, busy, failed
    voicemail       bigint NOT NULL,
    blocked         bigint NOT NULL,
    forward_seconds bigint NOT NULL,  -- sum over answered business calls
    positive        bigint NOT NULL,  -- business calls by calls.sentiment (the latest transcript's)
    neutral         bigint NOT NULL,
    negative        bigint NOT NULL,
    hours           bigint[] NOT NULL, -- business calls by local hour, 0 to 23 (24 elements)
    PRIMARY KEY (account_id, day, number_id)
);
-- The key to accounts deletes an account's rows with it: its calls go too, and their delete
-- trigger, no longer seeing the account, leaves this table alone.

-- call_counts_zone is zone when PostgreSQL knows it, else Europe/London.
-- +goose StatementBegin
CREATE FUNCTION call_counts_zone(zone text) RETURNS text LANGUAGE plpgsql STABLE AS $$
BEGIN
    PERFORM now() AT TIME ZONE zone;
    RETURN zone;
EXCEPTION WHEN invalid_parameter_value THEN
    RETURN 'Europe/London';
END $$;
-- +goose StatementEnd

-- call_counts_local_rows_sql is a query aggregating changes, a query giving account_id, tz (the
-- zone to count in), started_at, number_id, filtered, disposition, forward_seconds, sentiment
-- and sign (+1 to add the call, -1 to take it away), into rows of call_counts_local, leaving out
-- rows whose every figure is zero. SQL text rather than a function returning rows, so that the
-- trigger can run it where its transition tables are visible.
-- +goose StatementBegin
CREATE FUNCTION call_counts_local_rows_sql(changes text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT 'WITH changes AS (' || changes || '),
    local AS (
        SELECT account_id, (started_at AT TIME ZONE tz)::date AS day, extract(hour FROM started_at AT TIME ZONE tz)::int AS hour,
            COALESCE(number_id, 0) AS number_id, filtered, disposition, forward_seconds, sentiment, sign::bigint AS sign
        FROM changes),
    sums AS (
        SELECT account_id, day, number_id,
            COALESCE(sum(sign) FILTER (WHERE NOT filtered), 0)::bigint AS calls,
            COALESCE(sum(sign) FILTER (WHERE filtered), 0)::bigint AS filtered,
            COALESCE(sum(sign) FILTER (WHERE NOT filtered AND disposition = ''answered''), 0)::bigint AS answered,
            COALESCE(sum(sign) FILTER (WHERE NOT filtered AND disposition IN (''no-answer'', ''busy'', ''failed'')), 0)::bigint AS missed,
            COALESCE(sum(sign) FILTER (WHERE NOT filtered AND disposition = ''voicemail''), 0)::bigint AS voicemail,
            COALESCE(sum(sign) FILTER (WHERE NOT filtered AND disposition = ''blocked''), 0)::bigint AS blocked,
            COALESCE(sum(sign * forward_seconds) FILTER (WHERE NOT filtered AND disposition = ''answered''), 0)::bigint AS forward_seconds,
            COALESCE(sum(sign) FILTER (WHERE NOT filtered AND sentiment = ''positive''), 0)::bigint AS positive,
            COALESCE(sum(sign) FILTER (WHERE NOT filtered AND sentiment = ''neutral''), 0)::bigint AS neutral,
            COALESCE(sum(sign) FILTER (WHERE NOT filtered AND sentiment = ''negative''), 0)::bigint AS negative,
            ARRAY[' || (SELECT string_agg(format('COALESCE(sum(sign) FILTER (WHERE NOT filtered AND hour = %s), 0)', h), ', ' ORDER BY h)
                        FROM generate_series(0, 23) h) || ']::bigint[] AS hours
        FROM local
        GROUP BY 1, 2, 3)
    SELECT account_id, day, number_id, calls, filtered, answered, missed, voicemail, blocked, forward_seconds,
        positive, neutral, negative, hours
    FROM sums
    WHERE calls <> 0 OR filtered <> 0 OR answered <> 0 OR missed <> 0 OR voicemail <> 0 OR blocked <> 0
        OR forward_seconds <> 0 OR positive <> 0 OR neutral <> 0 OR negative <> 0 OR hours <> array_fill(0::bigint, ARRAY[24])'
$$;
-- +goose StatementEnd

-- call_counts_local_add_sql is a statement adding the rows of changes (as for
-- call_counts_local_rows_sql) to call_counts_local, locking them in key order so that
-- concurrent writers cannot deadlock on them.
-- +goose StatementBegin
CREATE FUNCTION call_counts_local_add_sql(changes text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT 'INSERT INTO call_counts_local AS l
    SELECT * FROM (' || call_counts_local_rows_sql(changes) || ') r ORDER BY account_id, day, number_id
    ON CONFLICT (account_id, day, number_id) DO UPDATE SET
        calls = l.calls + EXCLUDED.calls, filtered = l.filtered + EXCLUDED.filtered,
        answered = l.answered + EXCLUDED.answered, missed = l.missed + EXCLUDED.missed,
        voicemail = l.voicemail + EXCLUDED.voicemail, blocked = l.blocked + EXCLUDED.blocked,
        forward_seconds = l.forward_seconds + EXCLUDED.forward_seconds,
        positive = l.positive + EXCLUDED.positive, neutral = l.neutral + EXCLUDED.neutral,
        negative = l.negative + EXCLUDED.negative,
        hours = (SELECT array_agg(a + b ORDER BY i) FROM unnest(l.hours, EXCLUDED.hours) WITH ORDINALITY AS u(a, b, i))'
$$;
-- +goose StatementEnd

-- call_counts_local_zoned is changes (a query over calls) with the zone of each call's account,
-- for the backfill below. The zone is worked out once per account (OFFSET 0 keeps the subquery
-- from being merged into the join, which would call call_counts_zone once per call).
-- +goose StatementBegin
CREATE FUNCTION call_counts_local_zoned(changes text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT 'SELECT c.*, z.tz FROM (' || changes || ') c
    JOIN (SELECT id, call_counts_zone(time_zone) AS tz FROM accounts
          WHERE id IN (SELECT account_id FROM (' || changes || ') k) OFFSET 0) z ON z.id = c.account_id'
$$;
-- +goose StatementEnd

-- The statement-level triggers on calls, beside call_counts_apply (migration 00002): +1 for every
-- new call version, -1 for every old one, so inserts (COPY included), updates (a sentiment
-- copied from a transcript, a disposition, a number set to null when it is deleted) and deletes
-- keep the counts exact.
--
-- Account by account (one per statement but for rare bulk changes): a change of an account's
-- zone recounts the account under an exclusive advisory lock on it; here a shared one is taken
-- first, in a statement of its own, so that the zone is read after any such recount has
-- committed, and a recount waits for this transaction and then sees its calls (READ COMMITTED,
-- the store's isolation level). The zone is then a parameter of the aggregation, not a join.
--
-- One function per operation, generated here with the statements written out (static SQL), so
-- that PL/pgSQL keeps their plans for the session: planned on every call (EXECUTE), the
-- aggregation cost about 1 ms on every single-call insert.
-- +goose StatementBegin
DO $do$
DECLARE
    cols constant text := 'account_id, started_at, number_id, filtered, disposition, forward_seconds, sentiment';
    op record;
BEGIN
    FOR op IN SELECT * FROM (VALUES
        ('insert', format('SELECT %s, 1 AS sign FROM new_calls', cols)),
        ('update', format('SELECT %s, 1 AS sign FROM new_calls UNION ALL SELECT %s, -1 FROM old_calls', cols, cols)),
        ('delete', format('SELECT %s, -1 AS sign FROM old_calls', cols))) v(name, changes)
    LOOP
        EXECUTE format($f$CREATE FUNCTION %I() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE
    v_account bigint;
    v_zone text;
BEGIN
    FOR v_account IN SELECT DISTINCT account_id FROM (%s) c ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('call-counts-zone', v_account));
        SELECT call_counts_zone(time_zone) INTO v_zone FROM accounts WHERE id = v_account;
        CONTINUE WHEN NOT FOUND; -- the account is being deleted, and its rows with it
        %s;
    END LOOP;
    RETURN NULL;
END $body$$f$, 'call_counts_local_' || op.name, op.changes,
            call_counts_local_add_sql(format('SELECT c.*, v_zone AS tz FROM (%s) c WHERE c.account_id = v_account', op.changes)));
    END LOOP;
END $do$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION call_counts_local_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE call_counts_local;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- call_counts_local_rezone recounts an account whose zone changed.
-- +goose StatementBegin
CREATE FUNCTION call_counts_local_rezone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF call_counts_zone(OLD.time_zone) = call_counts_zone(NEW.time_zone) THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('call-counts-zone', NEW.id));
    DELETE FROM call_counts_local WHERE account_id = NEW.id;
    EXECUTE call_counts_local_add_sql(format('SELECT account_id, started_at, number_id, filtered, disposition, forward_seconds,
        sentiment, 1 AS sign, %L AS tz FROM calls WHERE account_id = %s', call_counts_zone(NEW.time_zone), NEW.id));
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- call_counts_local_window counts an account's calls in [from_at, to_at) by day of zone, as
-- call_counts_local would: GET /analytics uses it when the zone it was given is not the one the
-- table is kept in.
-- +goose StatementBegin
CREATE FUNCTION call_counts_local_window(account bigint, zone text, from_at timestamptz, to_at timestamptz)
RETURNS SETOF call_counts_local LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE call_counts_local_rows_sql('SELECT account_id, started_at, number_id, filtered, disposition,
        forward_seconds, sentiment, 1 AS sign, $2 AS tz FROM calls WHERE account_id = $1 AND started_at >= $3 AND started_at < $4')
        USING account, zone, from_at, to_at;
END $$;
-- +goose StatementEnd

CREATE TRIGGER calls_count_local_insert AFTER INSERT ON calls
    REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_counts_local_insert();
CREATE TRIGGER calls_count_local_update AFTER UPDATE ON calls
    REFERENCING OLD TABLE AS old_calls NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_counts_local_update();
CREATE TRIGGER calls_count_local_delete AFTER DELETE ON calls
    REFERENCING OLD TABLE AS old_calls FOR EACH STATEMENT EXECUTE FUNCTION call_counts_local_delete();
CREATE TRIGGER calls_count_local_truncate AFTER TRUNCATE ON calls
    FOR EACH STATEMENT EXECUTE FUNCTION call_counts_local_truncate();
CREATE TRIGGER accounts_rezone_call_counts AFTER UPDATE OF time_zone ON accounts
    FOR EACH ROW WHEN (OLD.time_zone IS DISTINCT FROM NEW.time_zone) EXECUTE FUNCTION call_counts_local_rezone();

-- Calls already stored.
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE call_counts_local_add_sql(call_counts_local_zoned(
        'SELECT account_id, started_at, number_id, filtered, disposition, forward_seconds, sentiment, 1 AS sign FROM calls'));
END $$;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER IF EXISTS accounts_rezone_call_counts ON accounts;
DROP TRIGGER IF EXISTS calls_count_local_truncate ON calls;
DROP TRIGGER IF EXISTS calls_count_local_delete ON calls;
DROP TRIGGER IF EXISTS calls_count_local_update ON calls;
DROP TRIGGER IF EXISTS calls_count_local_insert ON calls;
DROP FUNCTION IF EXISTS call_counts_local_window(bigint, text, timestamptz, timestamptz);
DROP FUNCTION IF EXISTS call_counts_local_rezone();
DROP FUNCTION IF EXISTS call_counts_local_truncate();
DROP FUNCTION IF EXISTS call_counts_local_delete();
DROP FUNCTION IF EXISTS call_counts_local_update();
DROP FUNCTION IF EXISTS call_counts_local_insert();
DROP FUNCTION IF EXISTS call_counts_local_zoned(text);
DROP FUNCTION IF EXISTS call_counts_local_add_sql(text);
DROP FUNCTION IF EXISTS call_counts_local_rows_sql(text);
DROP FUNCTION IF EXISTS call_counts_zone(text);
DROP TABLE IF EXISTS call_counts_local;
