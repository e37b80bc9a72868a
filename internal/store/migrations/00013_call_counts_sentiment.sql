-- +goose Up
-- Exact totals for GET /calls filtered by sentiment or urgency.
--
-- The page itself is quick (the partial indexes of 00009 give the newest matching calls), but
-- its total counted every matching call: a filter such as status=answered&sentiment=negative
-- counted some 20,000 rows of a million-call account for every page. call_counts_sentiment_daily
-- holds, per UTC day, the calls that have a sentiment or an urgency by (filtered, disposition,
-- sentiment, urgency), kept exact by statement-level triggers as call_counts_daily is: a
-- transcript changing a call's sentiment updates calls (00009), and that update moves the call
-- from one bucket to another. '' stands for "none" in sentiment and urgency.
CREATE TABLE call_counts_sentiment_daily (
    account_id  bigint NOT NULL,
    day         date NOT NULL,
    filtered    boolean NOT NULL,
    disposition text NOT NULL,
    sentiment   text NOT NULL,
    urgency     text NOT NULL,
    calls       bigint NOT NULL,
    PRIMARY KEY (account_id, day, filtered, disposition, sentiment, urgency)
);

-- +goose StatementBegin
CREATE FUNCTION call_counts_sentiment_apply() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- +goose StatementBegin
CREATE FUNCTION call_counts_sentiment_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE call_counts_sentiment_daily;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER calls_sentiment_count_insert AFTER INSERT ON calls
    REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_counts_sentiment_apply();
CREATE TRIGGER calls_sentiment_count_update AFTER UPDATE ON calls
    REFERENCING OLD TABLE AS old_calls NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_counts_sentiment_apply();
CREATE TRIGGER calls_sentiment_count_delete AFTER DELETE ON calls
    REFERENCING OLD TABLE AS old_calls FOR EACH STATEMENT EXECUTE FUNCTION call_counts_sentiment_apply();
CREATE TRIGGER calls_sentiment_count_truncate AFTER TRUNCATE ON calls
    FOR EACH STATEMENT EXECUTE FUNCTION call_counts_sentiment_truncate();

-- Calls already stored.
INSERT INTO call_counts_sentiment_daily (account_id, day, filtered, disposition, sentiment, urgency, calls)
SELECT account_id, (started_at AT TIME ZONE 'UTC')::date, filtered, disposition, COALESCE(sentiment, ''), COALESCE(urgency, ''), count(*)
FROM calls WHERE sentiment IS NOT NULL OR urgency IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6;

-- +goose Down
DROP TRIGGER IF EXISTS calls_sentiment_count_truncate ON calls;
DROP TRIGGER IF EXISTS calls_sentiment_count_delete ON calls;
DROP TRIGGER IF EXISTS calls_sentiment_count_update ON calls;
DROP TRIGGER IF EXISTS calls_sentiment_count_insert ON calls;
DROP FUNCTION IF EXISTS call_counts_sentiment_truncate();
DROP FUNCTION IF EXISTS call_counts_sentiment_apply();
DROP TABLE IF EXISTS call_counts_sentiment_daily;
