-- +goose Up
-- The sentiment and urgency of a call's latest transcript, copied onto the call by a trigger,
-- so the sentiment/urgency filters of GET /calls and the sentiment counts of GET /analytics
-- read one index of calls instead of joining transcripts row by row (issue 3 benchmark).
ALTER TABLE calls ADD COLUMN sentiment text, ADD COLUMN urgency text;

-- +goose StatementBegin
CREATE FUNCTION calls_follow_latest_transcript() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER transcripts_set_call_sentiment AFTER INSERT OR DELETE OR UPDATE OF sentiment, urgency, call_id ON transcripts
    FOR EACH ROW EXECUTE FUNCTION calls_follow_latest_transcript();

UPDATE calls c SET (sentiment, urgency) = (l.sentiment, l.urgency)
FROM (SELECT DISTINCT ON (call_id) call_id, sentiment, urgency FROM transcripts
      WHERE call_id IS NOT NULL ORDER BY call_id, id DESC) l
WHERE c.id = l.call_id AND (l.sentiment IS NOT NULL OR l.urgency IS NOT NULL);

CREATE INDEX calls_account_sentiment_started ON calls (account_id, sentiment, started_at DESC, id DESC) WHERE sentiment IS NOT NULL;
CREATE INDEX calls_account_urgency_started ON calls (account_id, urgency, started_at DESC, id DESC) WHERE urgency IS NOT NULL;

-- +goose Down
DROP TRIGGER transcripts_set_call_sentiment ON transcripts;
DROP FUNCTION calls_follow_latest_transcript();
DROP INDEX calls_account_urgency_started;
DROP INDEX calls_account_sentiment_started;
ALTER TABLE calls DROP COLUMN urgency, DROP COLUMN sentiment;
