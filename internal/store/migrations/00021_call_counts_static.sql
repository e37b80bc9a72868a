-- +goose Up
-- The statement triggers on calls with static SQL.
--
-- call_counts_apply (00002), call_caller_counts_apply (00012) and call_counts_sentiment_apply
-- (00013) built their statements as text and ran them with EXECUTE, so PostgreSQL parsed and
-- planned them on every run: with call reports written one per transaction (an idle API records
-- each report as a group of one), that was about 0.9 ms of the 1.2 ms of a one-row INSERT INTO
-- calls, the aggregations themselves taking 0.15 ms. Here each function has one branch per
-- operation (INSERT reads new_calls, DELETE old_calls, UPDATE both) with the statements written
-- out, generated below from one template per function as call_counts_local_* are (00010), so
-- PL/pgSQL plans each statement once per session and trigger and keeps the plan. The triggers,
-- the order in which they fire, the advisory lock shared with the directory triggers and the
-- key order in which count rows are locked are unchanged. call_counts_hourly and
-- call_counts_daily are now written by one statement (one pass over the changes), as are
-- call_caller_counts and call_name_counts.
-- +goose StatementBegin
DO $do$
DECLARE
    fn record;
    body text;
BEGIN
    FOR fn IN SELECT * FROM (VALUES
        ('call_counts_apply',
         'account_id, started_at, number_id, filtered, disposition, forward_seconds', '',
         $t$
        -- The primary INSERT runs first, the one in WITH after it: hourly rows are locked before
        -- daily ones, as before.
        WITH changes AS (%s),
        daily AS (
            INSERT INTO call_counts_daily AS d (account_id, day, filtered, disposition, calls)
            SELECT account_id, (started_at AT TIME ZONE 'UTC')::date, filtered, disposition, sum(sign)
            FROM changes
            GROUP BY 1, 2, 3, 4
            HAVING sum(sign) <> 0
            ORDER BY 1, 2, 3, 4
            ON CONFLICT (account_id, day, filtered, disposition) DO UPDATE SET calls = d.calls + EXCLUDED.calls)
        INSERT INTO call_counts_hourly AS h (account_id, hour, number_id, filtered, disposition, calls, forward_seconds)
        SELECT account_id, date_trunc('hour', started_at, 'UTC'), COALESCE(number_id, 0), filtered, disposition,
            sum(sign), sum(sign * forward_seconds)
        FROM changes
        GROUP BY 1, 2, 3, 4, 5
        HAVING sum(sign) <> 0 OR sum(sign * forward_seconds) <> 0
        ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT (account_id, hour, number_id, filtered, disposition) DO UPDATE
            SET calls = h.calls + EXCLUDED.calls, forward_seconds = h.forward_seconds + EXCLUDED.forward_seconds;$t$),
        ('call_caller_counts_apply',
         'account_id, filtered, from_e164, lower(caller_name) AS caller_name_lower', '',
         $t$
        -- The directory triggers take this lock exclusive; alone in its statement, so it is held
        -- before the counts and the directory are read.
        PERFORM count(pg_advisory_xact_lock_shared(20120, call_directory_lock_key(account_id)))
        FROM (SELECT DISTINCT account_id FROM (%1$s) changes ORDER BY 1) a;
        WITH changes AS (%1$s),
        names AS (
            INSERT INTO call_name_counts AS n (account_id, filtered, caller_name_lower, calls, calls_from_directory)
            SELECT account_id, filtered, caller_name_lower, sum(sign),
                COALESCE(sum(sign) FILTER (WHERE EXISTS (
                    SELECT 1 FROM contact_phones cp WHERE cp.account_id = changes.account_id AND cp.e164 = changes.from_e164)), 0)
            FROM changes WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.id = changes.account_id)
            GROUP BY account_id, caller_name_lower, filtered
            HAVING sum(sign) <> 0 OR sum(sign) FILTER (WHERE EXISTS (
                    SELECT 1 FROM contact_phones cp WHERE cp.account_id = changes.account_id AND cp.e164 = changes.from_e164)) <> 0
            ORDER BY account_id, caller_name_lower, filtered
            ON CONFLICT (account_id, caller_name_lower, filtered) DO UPDATE
                SET calls = n.calls + EXCLUDED.calls, calls_from_directory = n.calls_from_directory + EXCLUDED.calls_from_directory)
        INSERT INTO call_caller_counts AS k (account_id, filtered, from_e164, caller_name_lower, calls)
        SELECT account_id, filtered, from_e164, caller_name_lower, sum(sign)
        FROM changes WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.id = changes.account_id)
        GROUP BY account_id, from_e164, caller_name_lower, filtered
        HAVING sum(sign) <> 0
        ORDER BY account_id, from_e164, caller_name_lower, filtered
        ON CONFLICT (account_id, from_e164, caller_name_lower, filtered) DO UPDATE SET calls = k.calls + EXCLUDED.calls;$t$),
        ('call_counts_sentiment_apply',
         $c$account_id, (started_at AT TIME ZONE 'UTC')::date AS day, filtered, disposition, COALESCE(sentiment, '') AS sentiment, COALESCE(urgency, '') AS urgency$c$,
         ' WHERE sentiment IS NOT NULL OR urgency IS NOT NULL',
         $t$
        WITH changes AS (%s)
        INSERT INTO call_counts_sentiment_daily AS d (account_id, day, filtered, disposition, sentiment, urgency, calls)
        SELECT account_id, day, filtered, disposition, sentiment, urgency, sum(sign)
        FROM changes
        GROUP BY 1, 2, 3, 4, 5, 6
        HAVING sum(sign) <> 0
        ORDER BY 1, 2, 3, 4, 5, 6
        ON CONFLICT (account_id, day, filtered, disposition, sentiment, urgency) DO UPDATE SET calls = d.calls + EXCLUDED.calls;$t$)
    ) v(name, cols, keep, statements)
    LOOP
        body := format($b$
BEGIN
    IF TG_OP = 'INSERT' THEN%s
    ELSIF TG_OP = 'DELETE' THEN%s
    ELSE%s
    END IF;
    RETURN NULL;
END$b$,
            format(fn.statements, format('SELECT %s, 1 AS sign FROM new_calls%s', fn.cols, fn.keep)),
            format(fn.statements, format('SELECT %s, -1 AS sign FROM old_calls%s', fn.cols, fn.keep)),
            format(fn.statements, format('SELECT %s, 1 AS sign FROM new_calls%s UNION ALL SELECT %s, -1 FROM old_calls%s',
                fn.cols, fn.keep, fn.cols, fn.keep)));
        EXECUTE format('CREATE OR REPLACE FUNCTION %I() RETURNS trigger LANGUAGE plpgsql AS %L', fn.name, body);
    END LOOP;
END $do$;
-- +goose StatementEnd

-- +goose Down
-- The functions as 00002, 00012 and 00013 created them.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION call_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE OR REPLACE FUNCTION call_caller_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    cols constant text := 'account_id, filtered, from_e164, lower(caller_name) AS caller_name_lower';
    changes text;
BEGIN
    changes := CASE TG_OP
        WHEN 'INSERT' THEN format('SELECT %s, 1 AS sign FROM new_calls', cols)
        WHEN 'DELETE' THEN format('SELECT %s, -1 AS sign FROM old_calls', cols)
        ELSE format('SELECT %s, 1 AS sign FROM new_calls UNION ALL SELECT %s, -1 FROM old_calls', cols, cols)
    END;
    EXECUTE 'WITH changes AS (' || changes || ')
        SELECT count(pg_advisory_xact_lock_shared(20120, call_directory_lock_key(account_id)))
        FROM (SELECT DISTINCT account_id FROM changes ORDER BY 1) a';
    EXECUTE 'WITH changes AS (' || changes || ')
        INSERT INTO call_caller_counts AS k (account_id, filtered, from_e164, caller_name_lower, calls)
        SELECT account_id, filtered, from_e164, caller_name_lower, sum(sign)
        FROM changes WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.id = changes.account_id)
        GROUP BY account_id, from_e164, caller_name_lower, filtered
        HAVING sum(sign) <> 0
        ORDER BY account_id, from_e164, caller_name_lower, filtered
        ON CONFLICT (account_id, from_e164, caller_name_lower, filtered) DO UPDATE SET calls = k.calls + EXCLUDED.calls';
    EXECUTE 'WITH changes AS (' || changes || ')
        INSERT INTO call_name_counts AS n (account_id, filtered, caller_name_lower, calls, calls_from_directory)
        SELECT account_id, filtered, caller_name_lower, sum(sign),
            COALESCE(sum(sign) FILTER (WHERE EXISTS (
                SELECT 1 FROM contact_phones cp WHERE cp.account_id = changes.account_id AND cp.e164 = changes.from_e164)), 0)
        FROM changes WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.id = changes.account_id)
        GROUP BY account_id, caller_name_lower, filtered
        HAVING sum(sign) <> 0 OR sum(sign) FILTER (WHERE EXISTS (
                SELECT 1 FROM contact_phones cp WHERE cp.account_id = changes.account_id AND cp.e164 = changes.from_e164)) <> 0
        ORDER BY account_id, caller_name_lower, filtered
        ON CONFLICT (account_id, caller_name_lower, filtered) DO UPDATE
            SET calls = n.calls + EXCLUDED.calls, calls_from_directory = n.calls_from_directory + EXCLUDED.calls_from_directory';
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION call_counts_sentiment_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    cols constant text := 'account_id, (started_at AT TIME ZONE ''UTC'')::date AS day, filtered, disposition, '
        'COALESCE(sentiment, '''') AS sentiment, COALESCE(urgency, '''') AS urgency';
    keep constant text := ' WHERE sentiment IS NOT NULL OR urgency IS NOT NULL';
    changes text;
BEGIN
    changes := CASE TG_OP
        WHEN 'INSERT' THEN format('SELECT %s, 1 AS sign FROM new_calls %s', cols, keep)
        WHEN 'DELETE' THEN format('SELECT %s, -1 AS sign FROM old_calls %s', cols, keep)
        ELSE format('SELECT %s, 1 AS sign FROM new_calls %s UNION ALL SELECT %s, -1 FROM old_calls %s', cols, keep, cols, keep)
    END;
    EXECUTE 'WITH changes AS (' || changes || ')
        INSERT INTO call_counts_sentiment_daily AS d (account_id, day, filtered, disposition, sentiment, urgency, calls)
        SELECT account_id, day, filtered, disposition, sentiment, urgency, sum(sign)
        FROM changes
        GROUP BY 1, 2, 3, 4, 5, 6
        HAVING sum(sign) <> 0
        ORDER BY 1, 2, 3, 4, 5, 6
        ON CONFLICT (account_id, day, filtered, disposition, sentiment, urgency) DO UPDATE SET calls = d.calls + EXCLUDED.calls';
    RETURN NULL;
END
$$;
-- +goose StatementEnd
