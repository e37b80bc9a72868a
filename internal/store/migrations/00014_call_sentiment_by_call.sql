-- +goose Up
-- calls_follow_latest_transcript (00009) ran an UPDATE of calls for every transcript write,
-- even when the call's sentiment and urgency were already right (a new pending transcript). An
-- UPDATE that changes no row still fires the four statement triggers of calls (00002, 00010,
-- 00012, 00013), whose dynamic SQL is planned on every run: about 1.3 ms per transcript write,
-- under the account lock the transcription charge holds, which halved its throughput. Now the
-- call row is locked and read by its key, and updated only when a value changes. Locking
-- first keeps what the UPDATE's own re-check gave: a concurrent writer's change is seen.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION calls_follow_latest_transcript() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    affected bigint[];
    cid bigint;
    cs text;
    cu text;
    s text;
    u text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        affected := ARRAY[NEW.call_id];
    ELSIF TG_OP = 'DELETE' THEN
        affected := ARRAY[OLD.call_id];
    ELSIF NEW.call_id IS DISTINCT FROM OLD.call_id THEN
        affected := ARRAY[NEW.call_id, OLD.call_id];
    ELSE
        affected := ARRAY[NEW.call_id];
    END IF;
    FOREACH cid IN ARRAY affected LOOP
        CONTINUE WHEN cid IS NULL;
        SELECT c.sentiment, c.urgency INTO cs, cu FROM calls c WHERE c.id = cid FOR NO KEY UPDATE;
        CONTINUE WHEN NOT FOUND;
        s := NULL;
        u := NULL;
        SELECT t.sentiment, t.urgency INTO s, u FROM transcripts t WHERE t.call_id = cid ORDER BY t.id DESC LIMIT 1;
        IF cs IS DISTINCT FROM s OR cu IS DISTINCT FROM u THEN
            UPDATE calls SET sentiment = s, urgency = u WHERE id = cid;
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION calls_follow_latest_transcript() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    affected bigint[];
BEGIN
    affected := ARRAY[]::bigint[];
    IF TG_OP <> 'DELETE' AND NEW.call_id IS NOT NULL THEN
        affected := affected || NEW.call_id;
    END IF;
    IF TG_OP <> 'INSERT' AND OLD.call_id IS NOT NULL THEN
        affected := affected || OLD.call_id;
    END IF;
    UPDATE calls c SET sentiment = l.sentiment, urgency = l.urgency
    FROM (SELECT a.id, t.sentiment, t.urgency
          FROM unnest(affected) AS a(id)
          LEFT JOIN LATERAL (SELECT sentiment, urgency FROM transcripts
                             WHERE call_id = a.id ORDER BY id DESC LIMIT 1) t ON true) l
    WHERE c.id = l.id AND (c.sentiment IS DISTINCT FROM l.sentiment OR c.urgency IS DISTINCT FROM l.urgency);
    RETURN NULL;
END $$;
-- +goose StatementEnd
