-- +goose Up
-- Exact totals for a search by caller name.
--
-- A name search matches calls whose network caller name contains the text when no contact
-- has the caller's number, and calls from the numbers of contacts whose name contains it.
-- Counting those calls one by one costs as much as there are matches: a search for a common
-- surname on an account with a million calls counted a hundred thousand rows for every page.
-- Two count tables answer it instead, kept exact by statement-level triggers in the same
-- transaction as the calls and the contacts' phones (as call_counts_hourly is):
--   call_caller_counts: calls by (caller number, network name), for the contacts' numbers;
--   call_name_counts: calls by network name, and how many of them came from numbers in the
--     account's directory (a contact has the number), so the first arm of a search is a sum
--     over the matching names, whatever the size of the directory.
--
-- Whether a number is in the directory changes with contacts, not calls. The two triggers
-- agree through a per-account advisory lock: call writers take it shared, directory writers
-- exclusive, and each statement then reads the directory or the counts afresh (READ COMMITTED),
-- so a call and a contact for the same number written at once cannot both miss each other.
-- Deleting an account deletes its calls and its contacts' phones in one statement, so neither
-- trigger could see the other's state before: the counts go with the account (the foreign
-- keys) and the triggers leave accounts that no longer exist alone.
CREATE TABLE call_caller_counts (
    account_id        bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    filtered          boolean NOT NULL,
    from_e164         text NOT NULL,
    caller_name_lower text NOT NULL,
    calls             bigint NOT NULL,
    PRIMARY KEY (account_id, from_e164, caller_name_lower, filtered)
);

CREATE TABLE call_name_counts (
    account_id           bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    filtered             boolean NOT NULL,
    caller_name_lower    text NOT NULL,
    calls                bigint NOT NULL,
    calls_from_directory bigint NOT NULL,
    PRIMARY KEY (account_id, caller_name_lower, filtered)
);
CREATE INDEX call_name_counts_name_trgm ON call_name_counts USING gin (caller_name_lower gin_trgm_ops);

-- The contacts whose name matches a search, for both the calls and their total.
CREATE INDEX contacts_display_name_trgm ON contacts USING gin (lower(display_name) gin_trgm_ops);

-- call_directory_lock_key is the advisory lock of an account's directory/name counts.
CREATE FUNCTION call_directory_lock_key(account_id bigint) RETURNS integer LANGUAGE sql IMMUTABLE
    RETURN (account_id % 2147483647)::integer;

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

-- call_directory_apply follows numbers into and out of the directory: a number whose first
-- phone row appears moves its calls into calls_from_directory, one whose last phone row goes
-- moves them out.
-- +goose StatementBegin
CREATE FUNCTION call_directory_apply() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- +goose StatementBegin
CREATE FUNCTION call_caller_counts_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE call_caller_counts, call_name_counts;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION call_directory_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE call_name_counts SET calls_from_directory = 0 WHERE calls_from_directory <> 0;
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

CREATE TRIGGER contact_phones_directory_insert AFTER INSERT ON contact_phones
    REFERENCING NEW TABLE AS new_phones FOR EACH STATEMENT EXECUTE FUNCTION call_directory_apply();
CREATE TRIGGER contact_phones_directory_update AFTER UPDATE ON contact_phones
    REFERENCING OLD TABLE AS old_phones NEW TABLE AS new_phones FOR EACH STATEMENT EXECUTE FUNCTION call_directory_apply();
CREATE TRIGGER contact_phones_directory_delete AFTER DELETE ON contact_phones
    REFERENCING OLD TABLE AS old_phones FOR EACH STATEMENT EXECUTE FUNCTION call_directory_apply();
CREATE TRIGGER contact_phones_directory_truncate AFTER TRUNCATE ON contact_phones
    FOR EACH STATEMENT EXECUTE FUNCTION call_directory_truncate();

-- Calls and contacts already stored.
INSERT INTO call_caller_counts (account_id, filtered, from_e164, caller_name_lower, calls)
SELECT account_id, filtered, from_e164, lower(caller_name), count(*) FROM calls GROUP BY 1, 2, 3, 4;
INSERT INTO call_name_counts (account_id, filtered, caller_name_lower, calls, calls_from_directory)
SELECT c.account_id, c.filtered, lower(c.caller_name), count(*),
    count(*) FILTER (WHERE EXISTS (SELECT 1 FROM contact_phones cp WHERE cp.account_id = c.account_id AND cp.e164 = c.from_e164))
FROM calls c GROUP BY 1, 2, 3;

-- +goose Down
DROP TRIGGER IF EXISTS contact_phones_directory_truncate ON contact_phones;
DROP TRIGGER IF EXISTS contact_phones_directory_delete ON contact_phones;
DROP TRIGGER IF EXISTS contact_phones_directory_update ON contact_phones;
DROP TRIGGER IF EXISTS contact_phones_directory_insert ON contact_phones;
DROP TRIGGER IF EXISTS calls_caller_count_truncate ON calls;
DROP TRIGGER IF EXISTS calls_caller_count_delete ON calls;
DROP TRIGGER IF EXISTS calls_caller_count_update ON calls;
DROP TRIGGER IF EXISTS calls_caller_count_insert ON calls;
DROP FUNCTION IF EXISTS call_directory_truncate();
DROP FUNCTION IF EXISTS call_caller_counts_truncate();
DROP FUNCTION IF EXISTS call_directory_apply();
DROP FUNCTION IF EXISTS call_caller_counts_apply();
DROP FUNCTION IF EXISTS call_directory_lock_key(bigint);
DROP TABLE IF EXISTS call_name_counts;
DROP TABLE IF EXISTS call_caller_counts;
DROP INDEX IF EXISTS contacts_display_name_trgm;
