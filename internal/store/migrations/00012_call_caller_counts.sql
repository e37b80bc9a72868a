-- +goose Up
-- Exact totals for a search by caller name.
--
-- A name search matches calls whose network caller name contains the text (when no contact
-- has the caller's number) or whose caller's number belongs to a contact whose name contains
-- it. Counting those calls one by one costs as much as there are matches: a search for a
-- common surname on an account with a million calls matched a hundred thousand rows for
-- every page. Two count tables, kept exact by statement-level triggers in the same
-- transaction as the calls (as call_counts_hourly is), answer it instead:
--   call_name_counts: calls by network caller name (an account has as many rows as
--     distinct names); the name arm is the sum over matching names,
--   call_caller_counts: calls by (caller number, network name); it takes out of that sum
--     the calls from numbers a contact names, and adds those of matching contacts' numbers.
CREATE TABLE call_name_counts (
    account_id        bigint NOT NULL,
    filtered          boolean NOT NULL,
    caller_name_lower text NOT NULL,
    calls             bigint NOT NULL,
    PRIMARY KEY (account_id, caller_name_lower, filtered)
);
CREATE INDEX call_name_counts_name_trgm ON call_name_counts USING gin (caller_name_lower gin_trgm_ops);

CREATE TABLE call_caller_counts (
    account_id        bigint NOT NULL,
    filtered          boolean NOT NULL,
    from_e164         text NOT NULL,
    caller_name_lower text NOT NULL,
    calls             bigint NOT NULL,
    PRIMARY KEY (account_id, from_e164, caller_name_lower, filtered)
);

-- The contacts whose name matches a search, for both the calls and their total.
CREATE INDEX contacts_display_name_trgm ON contacts USING gin (lower(display_name) gin_trgm_ops);

-- call_caller_counts_apply adds +1 to the rows of every new call version and -1 to those of
-- every old one, skipping rows that do not change (an update of a call's sentiment leaves
-- them alone); rows are locked in key order so concurrent writers cannot deadlock.
-- +goose StatementBegin
CREATE FUNCTION call_caller_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
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
        INSERT INTO call_caller_counts AS k (account_id, filtered, from_e164, caller_name_lower, calls)
        SELECT account_id, filtered, from_e164, caller_name_lower, sum(sign)
        FROM changes
        GROUP BY account_id, from_e164, caller_name_lower, filtered
        HAVING sum(sign) <> 0
        ORDER BY account_id, from_e164, caller_name_lower, filtered
        ON CONFLICT (account_id, from_e164, caller_name_lower, filtered) DO UPDATE SET calls = k.calls + EXCLUDED.calls';
    EXECUTE 'WITH changes AS (' || changes || ')
        INSERT INTO call_name_counts AS n (account_id, filtered, caller_name_lower, calls)
        SELECT account_id, filtered, caller_name_lower, sum(sign)
        FROM changes
        GROUP BY account_id, caller_name_lower, filtered
        HAVING sum(sign) <> 0
        ORDER BY account_id, caller_name_lower, filtered
        ON CONFLICT (account_id, caller_name_lower, filtered) DO UPDATE SET calls = n.calls + EXCLUDED.calls';
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION call_caller_counts_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE call_caller_counts, call_name_counts;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER calls_caller_count_insert AFTER INSERT ON calls
    REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_caller_counts_apply();
CREATE TRIGGER calls_caller_count_update AFTER UPDATE ON calls
    REFERENCING OLD TABLE AS old_calls NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION call_caller_counts_apply();
CREATE TRIGGER calls_caller_count_delete AFTER DELETE ON calls
    REFERENCING OLD TABLE AS old_calls FOR EACH STATEMENT EXECUTE FUNCTION call_caller_counts_apply();
CREATE TRIGGER calls_caller_count_truncate AFTER TRUNCATE ON calls
    FOR EACH STATEMENT EXECUTE FUNCTION call_caller_counts_truncate();

-- Calls already stored.
INSERT INTO call_caller_counts (account_id, filtered, from_e164, caller_name_lower, calls)
SELECT account_id, filtered, from_e164, lower(caller_name), count(*) FROM calls GROUP BY 1, 2, 3, 4;
INSERT INTO call_name_counts (account_id, filtered, caller_name_lower, calls)
SELECT account_id, filtered, lower(caller_name), count(*) FROM calls GROUP BY 1, 2, 3;

-- +goose Down
DROP TRIGGER IF EXISTS calls_caller_count_truncate ON calls;
DROP TRIGGER IF EXISTS calls_caller_count_delete ON calls;
DROP TRIGGER IF EXISTS calls_caller_count_update ON calls;
DROP TRIGGER IF EXISTS calls_caller_count_insert ON calls;
DROP FUNCTION IF EXISTS call_caller_counts_truncate();
DROP FUNCTION IF EXISTS call_caller_counts_apply();
DROP TABLE IF EXISTS call_caller_counts;
DROP TABLE IF EXISTS call_name_counts;
DROP INDEX IF EXISTS contacts_display_name_trgm;
