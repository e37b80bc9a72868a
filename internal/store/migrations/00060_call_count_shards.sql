-- +goose Up
-- Count rows in shards, so that one account's concurrent call writers do not queue on them.
--
-- The statement triggers on calls (00002, 00010, 00012, 00013, 00021) add each call to count
-- rows that are the same for every call of an account in a period: the hour's and the day's
-- buckets, the local day's row of the called number, the row of calls without a network caller
-- name. A row lock is held until commit, so every ingestion transaction of an account waited
-- for the one before it to commit: with three replicas, three backends waited while one ran.
--
-- Each count table now has a shard column (0 to 7) in its primary key. A writing transaction
-- takes a shard of the account for itself (call_counts_shard: the lowest shard whose
-- transaction-scoped advisory lock it can take without waiting) and adds its changes to the
-- rows of that shard only, so concurrent writers of one account write different rows. A key's
-- figures are the sum over its shards; readers always summed rows, and still do. An update or
-- a delete takes its own shard too, so a shard's row may hold a negative figure; the sum is
-- exact. A quiet account writes shard 0 only, and a key has at most 8 rows, so nothing needs
-- compacting: the tables grow with keys, as before, never with writes. With more than 8
-- writers of one account at once the extra ones share a shard and wait, as all did before.
--
-- Writers that already exclude the account's call writers (a change of the directory, a
-- change of the account's zone) write shard 0.
-- +goose StatementBegin
CREATE FUNCTION call_counts_shard(account bigint) RETURNS smallint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    FOR s IN 0 .. 7 LOOP
        -- Held until commit, as the row locks it stands for; taken again at once by the same
        -- transaction (advisory locks are re-entrant), so its later statements find it free.
        IF pg_try_advisory_xact_lock(20600 + s, (account % 2147483647)::integer) THEN
            RETURN s;
        END IF;
    END LOOP;
    RETURN pg_backend_pid() % 8;
END $$;
-- +goose StatementEnd

-- Call and directory writers take calls (contact_phones) before the count tables, whose locks
-- their triggers then take in their own order; the ALTERs below take them in another. Holding
-- calls and contact_phones first makes writers running during the upgrade wait for this
-- migration instead of deadlocking with it.
LOCK TABLE calls, contact_phones IN SHARE MODE;

ALTER TABLE call_counts_hourly ADD COLUMN shard smallint NOT NULL DEFAULT 0,
    DROP CONSTRAINT call_counts_hourly_pkey,
    ADD CONSTRAINT call_counts_hourly_pkey PRIMARY KEY (account_id, hour, number_id, filtered, disposition, shard);
ALTER TABLE call_counts_daily ADD COLUMN shard smallint NOT NULL DEFAULT 0,
    DROP CONSTRAINT call_counts_daily_pkey,
    ADD CONSTRAINT call_counts_daily_pkey PRIMARY KEY (account_id, day, filtered, disposition, shard);
ALTER TABLE call_counts_sentiment_daily ADD COLUMN shard smallint NOT NULL DEFAULT 0,
    DROP CONSTRAINT call_counts_sentiment_daily_pkey,
    ADD CONSTRAINT call_counts_sentiment_daily_pkey PRIMARY KEY (account_id, day, filtered, disposition, sentiment, urgency, shard);
ALTER TABLE call_counts_local ADD COLUMN shard smallint NOT NULL DEFAULT 0,
    DROP CONSTRAINT call_counts_local_pkey,
    ADD CONSTRAINT call_counts_local_pkey PRIMARY KEY (account_id, day, number_id, shard);
ALTER TABLE call_name_counts ADD COLUMN shard smallint NOT NULL DEFAULT 0,
    DROP CONSTRAINT call_name_counts_pkey,
    ADD CONSTRAINT call_name_counts_pkey PRIMARY KEY (account_id, caller_name_lower, filtered, shard);
-- Hot only when one number calls an account many times at once (a campaign of nuisance
-- calls, a call centre), and as cheap as the others when not: a key used by one writer at a
-- time keeps one row.
ALTER TABLE call_caller_counts ADD COLUMN shard smallint NOT NULL DEFAULT 0,
    DROP CONSTRAINT call_caller_counts_pkey,
    ADD CONSTRAINT call_caller_counts_pkey PRIMARY KEY (account_id, from_e164, caller_name_lower, filtered, shard);

-- The three functions of 00021 with the shard: the same statements, templates and lock order.
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
        WITH changes AS (%s),
        shards AS (SELECT account_id, call_counts_shard(account_id) AS shard FROM (SELECT DISTINCT account_id FROM changes) a),
        daily AS (
            INSERT INTO call_counts_daily AS d (account_id, day, filtered, disposition, shard, calls)
            SELECT account_id, (started_at AT TIME ZONE 'UTC')::date, filtered, disposition, shard, sum(sign)
            FROM changes JOIN shards USING (account_id)
            GROUP BY 1, 2, 3, 4, 5
            HAVING sum(sign) <> 0
            ORDER BY 1, 2, 3, 4, 5
            ON CONFLICT (account_id, day, filtered, disposition, shard) DO UPDATE SET calls = d.calls + EXCLUDED.calls)
        INSERT INTO call_counts_hourly AS h (account_id, hour, number_id, filtered, disposition, shard, calls, forward_seconds)
        SELECT account_id, date_trunc('hour', started_at, 'UTC'), COALESCE(number_id, 0), filtered, disposition, shard,
            sum(sign), sum(sign * forward_seconds)
        FROM changes JOIN shards USING (account_id)
        GROUP BY 1, 2, 3, 4, 5, 6
        HAVING sum(sign) <> 0 OR sum(sign * forward_seconds) <> 0
        ORDER BY 1, 2, 3, 4, 5, 6
        ON CONFLICT (account_id, hour, number_id, filtered, disposition, shard) DO UPDATE
            SET calls = h.calls + EXCLUDED.calls, forward_seconds = h.forward_seconds + EXCLUDED.forward_seconds;$t$),
        ('call_caller_counts_apply',
         'account_id, filtered, from_e164, lower(caller_name) AS caller_name_lower', '',
         $t$
        PERFORM count(pg_advisory_xact_lock_shared(20120, call_directory_lock_key(account_id)))
        FROM (SELECT DISTINCT account_id FROM (%1$s) changes ORDER BY 1) a;
        WITH changes AS (%1$s),
        shards AS (SELECT account_id, call_counts_shard(account_id) AS shard FROM (SELECT DISTINCT account_id FROM changes) a),
        names AS (
            INSERT INTO call_name_counts AS n (account_id, filtered, caller_name_lower, shard, calls, calls_from_directory)
            SELECT account_id, filtered, caller_name_lower, shard, sum(sign),
                COALESCE(sum(sign) FILTER (WHERE EXISTS (
                    SELECT 1 FROM contact_phones cp WHERE cp.account_id = changes.account_id AND cp.e164 = changes.from_e164)), 0)
            FROM changes JOIN shards USING (account_id) WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.id = changes.account_id)
            GROUP BY account_id, caller_name_lower, filtered, shard
            HAVING sum(sign) <> 0 OR sum(sign) FILTER (WHERE EXISTS (
                    SELECT 1 FROM contact_phones cp WHERE cp.account_id = changes.account_id AND cp.e164 = changes.from_e164)) <> 0
            ORDER BY account_id, caller_name_lower, filtered, shard
            ON CONFLICT (account_id, caller_name_lower, filtered, shard) DO UPDATE
                SET calls = n.calls + EXCLUDED.calls, calls_from_directory = n.calls_from_directory + EXCLUDED.calls_from_directory)
        INSERT INTO call_caller_counts AS k (account_id, filtered, from_e164, caller_name_lower, shard, calls)
        SELECT account_id, filtered, from_e164, caller_name_lower, shard, sum(sign)
        FROM changes JOIN shards USING (account_id) WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.id = changes.account_id)
        GROUP BY account_id, from_e164, caller_name_lower, filtered, shard
        HAVING sum(sign) <> 0
        ORDER BY account_id, from_e164, caller_name_lower, filtered, shard
        ON CONFLICT (account_id, from_e164, caller_name_lower, filtered, shard) DO UPDATE SET calls = k.calls + EXCLUDED.calls;$t$),
        ('call_counts_sentiment_apply',
         $c$account_id, (started_at AT TIME ZONE 'UTC')::date AS day, filtered, disposition, COALESCE(sentiment, '') AS sentiment, COALESCE(urgency, '') AS urgency$c$,
         ' WHERE sentiment IS NOT NULL OR urgency IS NOT NULL',
         $t$
        WITH changes AS (%s),
        shards AS (SELECT account_id, call_counts_shard(account_id) AS shard FROM (SELECT DISTINCT account_id FROM changes) a)
        INSERT INTO call_counts_sentiment_daily AS d (account_id, day, filtered, disposition, sentiment, urgency, shard, calls)
        SELECT account_id, day, filtered, disposition, sentiment, urgency, shard, sum(sign)
        FROM changes JOIN shards USING (account_id)
        GROUP BY 1, 2, 3, 4, 5, 6, 7
        HAVING sum(sign) <> 0
        ORDER BY 1, 2, 3, 4, 5, 6, 7
        ON CONFLICT (account_id, day, filtered, disposition, sentiment, urgency, shard) DO UPDATE SET calls = d.calls + EXCLUDED.calls;$t$)
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

-- call_counts_local_add_sql (00010) with the shard: shard is an SQL expression giving it.
DROP FUNCTION call_counts_local_add_sql(text);
-- +goose StatementBegin
CREATE FUNCTION call_counts_local_add_sql(changes text, shard text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT 'INSERT INTO call_counts_local AS l (account_id, day, number_id, calls, filtered, answered, missed, voicemail,
        blocked, forward_seconds, positive, neutral, negative, hours, shard)
    SELECT r.*, ' || shard || ' FROM (' || call_counts_local_rows_sql(changes) || ') r ORDER BY account_id, day, number_id
    ON CONFLICT (account_id, day, number_id, shard) DO UPDATE SET
        calls = l.calls + EXCLUDED.calls, filtered = l.filtered + EXCLUDED.filtered,
        answered = l.answered + EXCLUDED.answered, missed = l.missed + EXCLUDED.missed,
        voicemail = l.voicemail + EXCLUDED.voicemail, blocked = l.blocked + EXCLUDED.blocked,
        forward_seconds = l.forward_seconds + EXCLUDED.forward_seconds,
        positive = l.positive + EXCLUDED.positive, neutral = l.neutral + EXCLUDED.neutral,
        negative = l.negative + EXCLUDED.negative,
        hours = (SELECT array_agg(a + b ORDER BY i) FROM unnest(l.hours, EXCLUDED.hours) WITH ORDINALITY AS u(a, b, i))'
$$;
-- +goose StatementEnd

-- call_counts_local_insert/update/delete (00010) with the account's shard.
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
        EXECUTE format($f$CREATE OR REPLACE FUNCTION %I() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE
    v_account bigint;
    v_zone text;
    v_shard smallint;
BEGIN
    FOR v_account IN SELECT DISTINCT account_id FROM (%s) c ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('call-counts-zone', v_account));
        SELECT call_counts_zone(time_zone) INTO v_zone FROM accounts WHERE id = v_account;
        CONTINUE WHEN NOT FOUND; -- the account is being deleted, and its rows with it
        v_shard := call_counts_shard(v_account);
        %s;
    END LOOP;
    RETURN NULL;
END $body$$f$, 'call_counts_local_' || op.name, op.changes,
            call_counts_local_add_sql(format('SELECT c.*, v_zone AS tz FROM (%s) c WHERE c.account_id = v_account', op.changes),
                'v_shard'));
    END LOOP;
END $do$;
-- +goose StatementEnd

-- The recount of an account whose zone changed holds the account's zone lock exclusively (its
-- call writers wait), so it writes shard 0.
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

-- call_counts_local_window returns rows of call_counts_local, which now end with the shard.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION call_counts_local_window(account bigint, zone text, from_at timestamptz, to_at timestamptz)
RETURNS SETOF call_counts_local LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE 'SELECT r.*, 0::smallint FROM (' || call_counts_local_rows_sql('SELECT account_id, started_at, number_id,
        filtered, disposition, forward_seconds, sentiment, 1 AS sign, $2 AS tz FROM calls
        WHERE account_id = $1 AND started_at >= $3 AND started_at < $4') || ') r'
        USING account, zone, from_at, to_at;
END $$;
-- +goose StatementEnd

-- call_directory_apply (00012) with the shard: it holds the account's directory lock
-- exclusively (the account's call writers wait), so it writes shard 0, and its sum over the
-- number's call_caller_counts rows adds their shards up.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION call_directory_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changes text;
BEGIN
    changes := CASE TG_OP
        WHEN 'INSERT' THEN 'SELECT account_id, e164, 1 AS n FROM new_phones'
        WHEN 'DELETE' THEN 'SELECT account_id, e164, -1 AS n FROM old_phones'
        ELSE 'SELECT account_id, e164, 1 AS n FROM new_phones UNION ALL SELECT account_id, e164, -1 FROM old_phones'
    END;
    EXECUTE 'WITH changes AS (' || changes || ')
        SELECT count(pg_advisory_xact_lock(20120, call_directory_lock_key(account_id)))
        FROM (SELECT DISTINCT account_id FROM changes ORDER BY 1) a';
    EXECUTE 'WITH changes AS (' || changes || '),
        added AS (SELECT account_id, e164, sum(n) AS n FROM changes GROUP BY 1, 2),
        flips AS (
            SELECT a.account_id, a.e164,
                CASE WHEN now.n > 0 AND now.n - a.n <= 0 THEN 1 WHEN now.n <= 0 AND now.n - a.n > 0 THEN -1 ELSE 0 END AS delta
            FROM added a CROSS JOIN LATERAL (
                SELECT count(*) AS n FROM contact_phones p WHERE p.account_id = a.account_id AND p.e164 = a.e164) now)
        INSERT INTO call_name_counts AS n (account_id, filtered, caller_name_lower, shard, calls, calls_from_directory)
        SELECT k.account_id, k.filtered, k.caller_name_lower, 0, 0, sum(f.delta * k.calls)
        FROM flips f JOIN call_caller_counts k ON k.account_id = f.account_id AND k.from_e164 = f.e164
        WHERE f.delta <> 0 AND EXISTS (SELECT 1 FROM accounts a WHERE a.id = f.account_id)
        GROUP BY k.account_id, k.caller_name_lower, k.filtered
        HAVING sum(f.delta * k.calls) <> 0
        ORDER BY k.account_id, k.caller_name_lower, k.filtered
        ON CONFLICT (account_id, caller_name_lower, filtered, shard) DO UPDATE
            SET calls_from_directory = n.calls_from_directory + EXCLUDED.calls_from_directory';
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- One row per key again. The counts are rebuilt from the calls, as the migrations that made the
-- tables filled them, and the functions are those of 00010, 00012 and 00021.
TRUNCATE call_counts_hourly, call_counts_daily, call_counts_sentiment_daily, call_counts_local, call_name_counts, call_caller_counts;
ALTER TABLE call_counts_hourly DROP CONSTRAINT call_counts_hourly_pkey, DROP COLUMN shard,
    ADD CONSTRAINT call_counts_hourly_pkey PRIMARY KEY (account_id, hour, number_id, filtered, disposition);
ALTER TABLE call_counts_daily DROP CONSTRAINT call_counts_daily_pkey, DROP COLUMN shard,
    ADD CONSTRAINT call_counts_daily_pkey PRIMARY KEY (account_id, day, filtered, disposition);
ALTER TABLE call_counts_sentiment_daily DROP CONSTRAINT call_counts_sentiment_daily_pkey, DROP COLUMN shard,
    ADD CONSTRAINT call_counts_sentiment_daily_pkey PRIMARY KEY (account_id, day, filtered, disposition, sentiment, urgency);
ALTER TABLE call_counts_local DROP CONSTRAINT call_counts_local_pkey, DROP COLUMN shard,
    ADD CONSTRAINT call_counts_local_pkey PRIMARY KEY (account_id, day, number_id);
ALTER TABLE call_name_counts DROP CONSTRAINT call_name_counts_pkey, DROP COLUMN shard,
    ADD CONSTRAINT call_name_counts_pkey PRIMARY KEY (account_id, caller_name_lower, filtered);
ALTER TABLE call_caller_counts DROP CONSTRAINT call_caller_counts_pkey, DROP COLUMN shard,
    ADD CONSTRAINT call_caller_counts_pkey PRIMARY KEY (account_id, from_e164, caller_name_lower, filtered);

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

DROP FUNCTION call_counts_local_add_sql(text, text);
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
        EXECUTE format($f$CREATE OR REPLACE FUNCTION %I() RETURNS trigger LANGUAGE plpgsql AS $body$
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
CREATE OR REPLACE FUNCTION call_counts_local_rezone() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION call_counts_local_window(account bigint, zone text, from_at timestamptz, to_at timestamptz)
RETURNS SETOF call_counts_local LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE call_counts_local_rows_sql('SELECT account_id, started_at, number_id, filtered, disposition,
        forward_seconds, sentiment, 1 AS sign, $2 AS tz FROM calls WHERE account_id = $1 AND started_at >= $3 AND started_at < $4')
        USING account, zone, from_at, to_at;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION call_directory_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changes text;
BEGIN
    changes := CASE TG_OP
        WHEN 'INSERT' THEN 'SELECT account_id, e164, 1 AS n FROM new_phones'
        WHEN 'DELETE' THEN 'SELECT account_id, e164, -1 AS n FROM old_phones'
        ELSE 'SELECT account_id, e164, 1 AS n FROM new_phones UNION ALL SELECT account_id, e164, -1 FROM old_phones'
    END;
    EXECUTE 'WITH changes AS (' || changes || ')
        SELECT count(pg_advisory_xact_lock(20120, call_directory_lock_key(account_id)))
        FROM (SELECT DISTINCT account_id FROM changes ORDER BY 1) a';
    EXECUTE 'WITH changes AS (' || changes || '),
        added AS (SELECT account_id, e164, sum(n) AS n FROM changes GROUP BY 1, 2),
        flips AS (
            SELECT a.account_id, a.e164,
                CASE WHEN now.n > 0 AND now.n - a.n <= 0 THEN 1 WHEN now.n <= 0 AND now.n - a.n > 0 THEN -1 ELSE 0 END AS delta
            FROM added a CROSS JOIN LATERAL (
                SELECT count(*) AS n FROM contact_phones p WHERE p.account_id = a.account_id AND p.e164 = a.e164) now)
        INSERT INTO call_name_counts AS n (account_id, filtered, caller_name_lower, calls, calls_from_directory)
        SELECT k.account_id, k.filtered, k.caller_name_lower, 0, sum(f.delta * k.calls)
        FROM flips f JOIN call_caller_counts k ON k.account_id = f.account_id AND k.from_e164 = f.e164
        WHERE f.delta <> 0 AND EXISTS (SELECT 1 FROM accounts a WHERE a.id = f.account_id)
        GROUP BY k.account_id, k.caller_name_lower, k.filtered
        HAVING sum(f.delta * k.calls) <> 0
        ORDER BY k.account_id, k.caller_name_lower, k.filtered
        ON CONFLICT (account_id, caller_name_lower, filtered) DO UPDATE
            SET calls_from_directory = n.calls_from_directory + EXCLUDED.calls_from_directory';
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP FUNCTION call_counts_shard(bigint);

INSERT INTO call_counts_hourly (account_id, hour, number_id, filtered, disposition, calls, forward_seconds)
SELECT account_id, date_trunc('hour', started_at, 'UTC'), COALESCE(number_id, 0), filtered, disposition, count(*), sum(forward_seconds)
FROM calls GROUP BY 1, 2, 3, 4, 5;
INSERT INTO call_counts_daily (account_id, day, filtered, disposition, calls)
SELECT account_id, (started_at AT TIME ZONE 'UTC')::date, filtered, disposition, count(*)
FROM calls GROUP BY 1, 2, 3, 4;
INSERT INTO call_counts_sentiment_daily (account_id, day, filtered, disposition, sentiment, urgency, calls)
SELECT account_id, (started_at AT TIME ZONE 'UTC')::date, filtered, disposition, COALESCE(sentiment, ''), COALESCE(urgency, ''), count(*)
FROM calls WHERE sentiment IS NOT NULL OR urgency IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6;
INSERT INTO call_caller_counts (account_id, filtered, from_e164, caller_name_lower, calls)
SELECT account_id, filtered, from_e164, lower(caller_name), count(*) FROM calls GROUP BY 1, 2, 3, 4;
INSERT INTO call_name_counts (account_id, filtered, caller_name_lower, calls, calls_from_directory)
SELECT c.account_id, c.filtered, lower(c.caller_name), count(*),
    count(*) FILTER (WHERE EXISTS (SELECT 1 FROM contact_phones cp WHERE cp.account_id = c.account_id AND cp.e164 = c.from_e164))
FROM calls c GROUP BY 1, 2, 3;
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE call_counts_local_add_sql(call_counts_local_zoned(
        'SELECT account_id, started_at, number_id, filtered, disposition, forward_seconds, sentiment, 1 AS sign FROM calls'));
END $$;
-- +goose StatementEnd
