package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Analytics is GET /analytics.
type Analytics struct {
	Days    int              `json:"days" required:"true"`
	Summary AnalyticsSummary `json:"summary" required:"true"`
	// ByDay maps every date of the window (YYYY-MM-DD, account time zone) to its business calls.
	ByDay map[string]int `json:"by_day" required:"true" nullable:"false"`
	// ByHour counts business calls by hour of day (0 to 23, account time zone).
	ByHour    []int              `json:"by_hour" required:"true" nullable:"false" minItems:"24" maxItems:"24"`
	ByNumber  []AnalyticsNumber  `json:"by_number" required:"true" nullable:"false"`
	Sentiment AnalyticsSentiment `json:"sentiment" required:"true"`
}

// AnalyticsSummary counts the window's calls. Every count but filtered is over business calls
// (not screened out by call protection); filtered counts the screened-out ones.
type AnalyticsSummary struct {
	Total    int `json:"total" required:"true"`
	Filtered int `json:"filtered" required:"true"`
	Answered int `json:"answered" required:"true"`
	// Missed is no-answer, busy and failed calls.
	Missed    int `json:"missed" required:"true"`
	Voicemail int `json:"voicemail" required:"true"`
	Blocked   int `json:"blocked" required:"true"`
	// AnswerRate is round(answered * 100 / total); 0 without calls.
	AnswerRate int `json:"answer_rate" required:"true"`
	// AvgForwardSeconds is the rounded mean forward_seconds of answered calls; 0 without any.
	AvgForwardSeconds int `json:"avg_forward_seconds" required:"true"`
}

// AnalyticsNumber is one live number's business calls in the window.
type AnalyticsNumber struct {
	PublicID string `json:"public_id" required:"true"`
	E164     string `json:"e164" required:"true"`
	Label    string `json:"label" required:"true"`
	Total    int    `json:"total" required:"true"`
	Answered int    `json:"answered" required:"true"`
}

// AnalyticsSentiment counts the summary sentiment of the window's business calls.
type AnalyticsSentiment struct {
	Positive int `json:"positive" required:"true"`
	Neutral  int `json:"neutral" required:"true"`
	Negative int `json:"negative" required:"true"`
}

// AnalyticsQuery asks for the analytics of the last Days calendar days (today included) in Location.
type AnalyticsQuery struct {
	AccountID int64
	// NumberPublicID, when set, keeps only calls to that live number (by_number still lists all).
	NumberPublicID string
	Days           int
	Location       *time.Location
	Now            time.Time
}

// AnalyticsWindow is the half-open interval [From, To) of the last days calendar days in loc,
// today included, and the dates it covers, oldest first.
func AnalyticsWindow(now time.Time, loc *time.Location, days int) (from, to time.Time, dates []string) {
	local := now.In(loc)
	from = time.Date(local.Year(), local.Month(), local.Day()-(days-1), 0, 0, 0, 0, loc)
	to = time.Date(local.Year(), local.Month(), local.Day()+1, 0, 0, 0, 0, loc)
	dates = make([]string, 0, days)
	for i := range days {
		dates = append(dates, time.Date(from.Year(), from.Month(), from.Day()+i, 0, 0, 0, 0, loc).Format(time.DateOnly))
	}
	return from, to, dates
}

// wholeHourOffsets reports whether loc is a whole number of hours from UTC at every day
// boundary of [from, to), so that every UTC hour falls within one local hour.
func wholeHourOffsets(loc *time.Location, from, to time.Time) bool {
	for t := from; t.Before(to); t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc) {
		if _, offset := t.Zone(); offset%3600 != 0 {
			return false
		}
	}
	_, offset := to.Zone()
	return offset%3600 == 0
}

// roundedRatio is round(num / den) for non-negative integers, 0 when den is 0.
func roundedRatio(num, den int64) int {
	if den <= 0 {
		return 0
	}
	return int((2*num + den) / (2 * den))
}

// CallAnalytics aggregates the window's calls in PostgreSQL: grouped rows come back, never the
// calls. ErrNotFound when NumberPublicID names none of the account's live numbers.
//
// Counts come from call_counts_hourly (migration 00002) when every UTC hour of the window lies
// within one local hour, which holds for every zone whose offset is a whole number of hours;
// otherwise from the window's calls. The three independent aggregates run concurrently.
func (s *Store) CallAnalytics(ctx context.Context, q AnalyticsQuery) (Analytics, error) {
	var numberID *int64
	if q.NumberPublicID != "" {
		var id int64
		err := s.Pool.QueryRow(ctx, `SELECT id FROM numbers WHERE account_id = $1 AND public_id = $2 AND status <> 'released'`,
			q.AccountID, q.NumberPublicID).Scan(&id)
		if err != nil {
			return Analytics{}, notFound(err)
		}
		numberID = &id
	}
	from, to, dates := AnalyticsWindow(q.Now, q.Location, q.Days)
	out := Analytics{Days: q.Days, ByDay: make(map[string]int, len(dates)), ByHour: make([]int, 24), ByNumber: []AnalyticsNumber{}}
	for _, d := range dates {
		out.ByDay[d] = 0
	}

	// source is a relation shaped like call_counts_hourly over the window ($1 account, $2 and
	// $3 the window). Read from calls, "hour" is the start of the call's local hour.
	source := `call_counts_hourly`
	if !wholeHourOffsets(q.Location, from, to) {
		source = `(SELECT c.account_id, date_trunc('hour', c.started_at, ` + quoteLiteral(q.Location.String()) + `) AS hour,
				COALESCE(c.number_id, 0) AS number_id, c.filtered, c.disposition, 1 AS calls, c.forward_seconds
			FROM calls c WHERE c.account_id = $1 AND c.started_at >= $2 AND c.started_at < $3)`
	}
	args := []any{q.AccountID, from, to}
	onNumber := ""
	if numberID != nil {
		// Written out rather than "$4 IS NULL OR ..." so that a cached generic plan cannot
		// ignore the index on number_id.
		args = append(args, *numberID)
		onNumber = " AND number_id = $4"
	}

	var wg sync.WaitGroup
	errs := make([]error, 3)
	wg.Go(func() { errs[0] = s.analyticsCounts(ctx, &out, q.Location, source, onNumber, args) })
	wg.Go(func() { out.ByNumber, errs[1] = s.analyticsByNumber(ctx, source, q.AccountID, from, to) })
	wg.Go(func() { out.Sentiment, errs[2] = s.analyticsSentiment(ctx, onNumber, args) })
	wg.Wait()
	return out, errors.Join(errs...)
}

// analyticsCounts fills summary, by_day and by_hour from one row per hour of the window.
func (s *Store) analyticsCounts(ctx context.Context, out *Analytics, loc *time.Location, source, onNumber string, args []any) error {
	rows, err := s.Pool.Query(ctx, `SELECT hour,
			COALESCE(sum(calls) FILTER (WHERE NOT filtered), 0)::bigint,
			COALESCE(sum(calls) FILTER (WHERE filtered), 0)::bigint,
			COALESCE(sum(calls) FILTER (WHERE NOT filtered AND disposition = 'answered'), 0)::bigint,
			COALESCE(sum(calls) FILTER (WHERE NOT filtered AND disposition IN ('no-answer', 'busy', 'failed')), 0)::bigint,
			COALESCE(sum(calls) FILTER (WHERE NOT filtered AND disposition = 'voicemail'), 0)::bigint,
			COALESCE(sum(calls) FILTER (WHERE NOT filtered AND disposition = 'blocked'), 0)::bigint,
			COALESCE(sum(forward_seconds) FILTER (WHERE NOT filtered AND disposition = 'answered'), 0)::bigint
		FROM `+source+` h
		WHERE account_id = $1 AND hour >= $2 AND hour < $3`+onNumber+`
		GROUP BY hour`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var answeredSeconds int64
	sum := &out.Summary
	for rows.Next() {
		var hour time.Time
		var total, filtered, answered, missed, voicemail, blocked int
		var seconds int64
		if err := rows.Scan(&hour, &total, &filtered, &answered, &missed, &voicemail, &blocked, &seconds); err != nil {
			return err
		}
		local := hour.In(loc)
		if _, ok := out.ByDay[local.Format(time.DateOnly)]; ok {
			out.ByDay[local.Format(time.DateOnly)] += total
		}
		out.ByHour[local.Hour()] += total
		sum.Total += total
		sum.Filtered += filtered
		sum.Answered += answered
		sum.Missed += missed
		sum.Voicemail += voicemail
		sum.Blocked += blocked
		answeredSeconds += seconds
	}
	if err := rows.Err(); err != nil {
		return err
	}
	sum.AnswerRate = roundedRatio(int64(sum.Answered)*100, int64(sum.Total))
	sum.AvgForwardSeconds = roundedRatio(answeredSeconds, int64(sum.Answered))
	return nil
}

// analyticsByNumber lists every live number with its business calls in the window.
func (s *Store) analyticsByNumber(ctx context.Context, source string, accountID int64, from, to time.Time) ([]AnalyticsNumber, error) {
	rows, err := s.Pool.Query(ctx, `SELECT n.public_id, n.e164, n.label, COALESCE(k.total, 0), COALESCE(k.answered, 0)
		FROM numbers n
		LEFT JOIN (
			SELECT number_id, sum(calls)::bigint AS total, (sum(calls) FILTER (WHERE disposition = 'answered'))::bigint AS answered
			FROM `+source+` h
			WHERE account_id = $1 AND NOT filtered AND hour >= $2 AND hour < $3
			GROUP BY number_id) k ON k.number_id = n.id
		WHERE n.account_id = $1 AND n.status <> 'released'
		ORDER BY n.e164, n.id`, accountID, from, to)
	if err != nil {
		return nil, err
	}
	numbers, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AnalyticsNumber, error) {
		var n AnalyticsNumber
		return n, r.Scan(&n.PublicID, &n.E164, &n.Label, &n.Total, &n.Answered)
	})
	if numbers == nil {
		numbers = []AnalyticsNumber{}
	}
	return numbers, err
}

// analyticsSentiment counts the window's business calls by summary sentiment. Each call counts
// once, by its latest transcript (the one a call row shows), whose sentiment a trigger copies
// onto the call (migration 00009).
func (s *Store) analyticsSentiment(ctx context.Context, onNumber string, args []any) (AnalyticsSentiment, error) {
	var out AnalyticsSentiment
	err := s.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE sentiment = 'positive'),
			count(*) FILTER (WHERE sentiment = 'neutral'), count(*) FILTER (WHERE sentiment = 'negative')
		FROM calls
		WHERE account_id = $1 AND sentiment IS NOT NULL AND NOT filtered AND started_at >= $2 AND started_at < $3`+onNumber,
		args...).Scan(&out.Positive, &out.Neutral, &out.Negative)
	return out, err
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
