-- +goose Up
-- Call list totals and analytics on accounts with many calls.
--
-- call_counts_hourly and call_counts_daily are exact running counts of calls, kept in step with
-- the calls table by statement-level triggers in the same transaction, so GET /calls can give
-- an exact total and GET /analytics can aggregate a 90-day window without reading every call.
-- Buckets are UTC hours and UTC days: a period that starts and ends on whole UTC hours (the
-- local midnights of every zone with a whole-hour offset) is a sum of buckets. Other periods
-- are counted on calls directly.

-- Calls in a (UTC hour, number, filtered, disposition) bucket; number_id 0 is "no number".
CREATE TABLE call_counts_hourly (
    account_id      bigint NOT NULL,
    hour            timestamptz NOT NULL,
    number_id       bigint NOT NULL,
    filtered        boolean NOT NULL,
    disposition     text NOT NULL,
    calls           bigint NOT NULL,
    forward_seconds bigint NOT NULL,
    PRIMARY KEY (account_id, hour, number_id, filtered, disposition)
);

-- The same by UTC day without the number, for long and unbounded periods.
CREATE TABLE call_counts_daily (
    account_id  bigint NOT NULL,
    day         date NOT NULL,
    filtered    boolean NOT NULL,
    disposition text NOT NULL,
    calls       bigint NOT NULL,
    PRIMARY KEY (account_id, day, filtered, disposition)
);
-- No foreign key to accounts: deleting an account deletes its calls, whose trigger then brings
-- the counts to zero, which a key to the account being deleted would refuse.

-- call_counts_apply adds +1 to the bucket of every new call version (new_calls) and -1 to that
-- of every old one (old_calls). Buckets whose count and seconds do not change are left alone;
-- rows are locked in key order so that concurrent writers cannot deadlock on them.
-- +goose StatementBegin
CREATE FUNCTION call_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    cols constant text := 'account_id, started_at, number_id, filtered, disposition, forward_seconds';
    changes text;
BEGIN
    changes := CASE TG_OP
        WHEN 'INSERT' THEN format('SELECT %s, 1 AS sign FROM new_calls', cols)
        WHEN 'DELETE' THEN format('SELECT %s, -1 AS sign FROM old_calls', cols)
        ELSE format('SELECT %s, 1 AS sign FROM new_calls UNION ALL SELECT %s, -1 FROM old_calls', cols, cols)
    END;
    EXECUTE 'WITH changes AS (' || changes || ')
        INSERT INTO call_counts_hourly AS h (account_id, hour, number_id, filtered, disposition, calls, forward_seconds)
        SELECT account_id, date_trunc(''hour'', started_at, ''UTC''), COALESCE(number_id, 0), filtered, disposition,
            sum(sign), sum(sign * forward_seconds)
        FROM changes
        GROUP BY 1, 2, 3, 4, 5
        HAVING sum(sign) <> 0 OR sum(sign * forward_seconds) <> 0
        ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT (account_id, hour, number_id, filtered, disposition) DO UPDATE
            SET calls = h.calls + EXCLUDED.calls, forward_seconds = h.forward_seconds + EXCLUDED.forward_seconds';
    EXECUTE 'WITH changes AS (' || changes || ')
        INSERT INTO call_counts_daily AS d (account_id, day, filtered, disposition, calls)
        SELECT account_id, (started_at AT TIME ZONE ''UTC'')::date, filtered, disposition, sum(sign)
        FROM changes
        GROUP BY 1, 2, 3, 4
        HAVING sum(sign) <> 0
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (account_id, day, filtered, disposition) DO UPDATE SET calls = d.calls + EXCLUDED.calls';
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION call_counts_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE call_counts_hourly, call_counts_daily;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER calls_count_insert AFTER INSERT ON calls
    REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_counts_apply();
CREATE TRIGGER calls_count_update AFTER UPDATE ON calls
    REFERENCING OLD TABLE AS old_calls NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_counts_apply();
CREATE TRIGGER calls_count_delete AFTER DELETE ON calls
    REFERENCING OLD TABLE AS old_calls FOR EACH STATEMENT EXECUTE FUNCTION call_counts_apply();
CREATE TRIGGER calls_count_truncate AFTER TRUNCATE ON calls
    FOR EACH STATEMENT EXECUTE FUNCTION call_counts_truncate();

-- Calls already stored.
INSERT INTO call_counts_hourly (account_id, hour, number_id, filtered, disposition, calls, forward_seconds)
SELECT account_id, date_trunc('hour', started_at, 'UTC'), COALESCE(number_id, 0), filtered, disposition, count(*), sum(forward_seconds)
FROM calls GROUP BY 1, 2, 3, 4, 5;
INSERT INTO call_counts_daily (account_id, day, filtered, disposition, calls)
SELECT account_id, (started_at AT TIME ZONE 'UTC')::date, filtered, disposition, count(*)
FROM calls GROUP BY 1, 2, 3, 4;

-- activity=all lists every call newest first, and the analytics fallback reads a window of them.
CREATE INDEX calls_account_started ON calls (account_id, started_at DESC, id DESC);
-- search by a contact's name finds the calls from that contact's numbers.
CREATE INDEX calls_account_from ON calls (account_id, from_e164);

-- +goose Down
DROP INDEX IF EXISTS calls_account_from;
DROP INDEX IF EXISTS calls_account_started;
DROP TRIGGER IF EXISTS calls_count_truncate ON calls;
DROP TRIGGER IF EXISTS calls_count_delete ON calls;
DROP TRIGGER IF EXISTS calls_count_update ON calls;
DROP TRIGGER IF EXISTS calls_count_insert ON calls;
DROP FUNCTION IF EXISTS call_counts_truncate();
DROP FUNCTION IF EXISTS call_counts_apply();
DROP TABLE IF EXISTS call_counts_daily;
DROP TABLE IF EXISTS call_counts_hourly;
