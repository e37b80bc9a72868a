package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Analytics is GET /analytics.
type Analytics struct {
	Days    int
	Summary AnalyticsSummary
	// ByDay maps every date of the window (YYYY-MM-DD, account time zone) to its business calls.
	ByDay map[string]int
	// ByHour counts business calls by hour of day (0 to 23, account time zone).
	ByHour    []int
	ByNumber  []AnalyticsNumber
	Sentiment AnalyticsSentiment
}

// AnalyticsSummary counts the window's calls. Every count but filtered is over business calls
// (not screened out by call protection); filtered counts the screened-out ones.
type AnalyticsSummary struct {
	Total    int
	Filtered int
	Answered int
	// Missed is no-answer, busy and failed calls.
	Missed    int
	Voicemail int
	Blocked   int
	// AnswerRate is round(answered * 100 / total); 0 without calls.
	AnswerRate int
	// AvgForwardSeconds is the rounded mean forward_seconds of answered calls; 0 without any.
	AvgForwardSeconds int
}

// AnalyticsNumber is one live number's business calls in the window.
type AnalyticsNumber struct {
	PublicID string
	E164     string
	Label    string
	Total    int
	Answered int
}

// AnalyticsSentiment counts the summary sentiment of the window's business calls.
type AnalyticsSentiment struct {
	Positive int
	Neutral  int
	Negative int
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

// roundedRatio is round(num / den) for non-negative integers, 0 when den is 0.
func roundedRatio(num, den int64) int {
	if den <= 0 {
		return 0
	}
	return int((2*num + den) / (2 * den))
}

// CallAnalytics answers from call_counts_local (migration 00010): one row per day of the
// account's time zone and number, kept by triggers on calls, so a 90-day window reads at most 90
// rows per number whatever the zone, summed in PostgreSQL (analyticsSQL). The live numbers and
// the sums go in one round trip. ErrNotFound when NumberPublicID names none of the account's
// live numbers.
//
// The table is kept in the zone PostgreSQL makes of accounts.time_zone; when that is not
// q.Location (the application could not load the zone, or the zone has just changed) the same
// rows are counted from the window's calls instead.
func (s *Store) CallAnalytics(ctx context.Context, q AnalyticsQuery) (Analytics, error) {
	from, to, dates := AnalyticsWindow(q.Now, q.Location, q.Days)
	out := Analytics{Days: q.Days, ByDay: make(map[string]int, len(dates)), ByHour: make([]int, 24), ByNumber: []AnalyticsNumber{}}
	for _, d := range dates {
		out.ByDay[d] = 0
	}

	batch := &pgx.Batch{}
	batch.Queue(`SELECT id, public_id, e164, label FROM numbers WHERE account_id = $1 AND status <> 'released' ORDER BY e164, id`, q.AccountID)
	args := []any{q.AccountID, dates[0], dates[len(dates)-1], q.NumberPublicID}
	batch.Queue(analyticsSQL(analyticsFromTable, accountPendingSQL), args...)
	br := s.pool.SendBatch(ctx, batch)
	defer br.Close()

	rows, _ := br.Query()
	type number struct {
		id int64
		AnalyticsNumber
	}
	numbers, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (number, error) {
		var n number
		err := r.Scan(&n.id, &n.PublicID, &n.E164, &n.Label)
		return n, err
	})
	if err != nil {
		return Analytics{}, err
	}
	if q.NumberPublicID != "" && !slices.ContainsFunc(numbers, func(n number) bool { return n.PublicID == q.NumberPublicID }) {
		return Analytics{}, ErrNotFound
	}
	rows, _ = br.Query()
	counts, err := pgx.CollectRows(rows, scanAnalyticsRow)
	if err != nil {
		return Analytics{}, err
	}
	if err := br.Close(); err != nil {
		return Analytics{}, err
	}
	i := slices.IndexFunc(counts, func(c analyticsRow) bool { return c.kind == "summary" })
	if i >= 0 && counts[i].pending {
		// Deltas of the account wait to be folded: the table alone is short of them.
		rows, _ := s.pool.Query(ctx, analyticsSQL(analyticsFromCurrent, "false"), args...)
		if counts, err = pgx.CollectRows(rows, scanAnalyticsRow); err != nil {
			return Analytics{}, err
		}
		i = slices.IndexFunc(counts, func(c analyticsRow) bool { return c.kind == "summary" })
	}
	if i < 0 || counts[i].zone == nil || *counts[i].zone != q.Location.String() {
		rows, _ := s.pool.Query(ctx, analyticsSQL(analyticsFromCalls, "false"), append(args, q.Location.String(), from, to)...)
		if counts, err = pgx.CollectRows(rows, scanAnalyticsRow); err != nil {
			return Analytics{}, err
		}
	}

	byNumber := make(map[int64]*AnalyticsNumber, len(numbers))
	for i := range numbers {
		byNumber[numbers[i].id] = &numbers[i].AnalyticsNumber
	}
	sum := &out.Summary
	for _, c := range counts {
		switch c.kind {
		case "summary":
			sum.Total, sum.Filtered, sum.Answered = int(c.calls), int(c.filtered), int(c.answered)
			sum.Missed, sum.Voicemail, sum.Blocked = int(c.missed), int(c.voicemail), int(c.blocked)
			sum.AnswerRate = roundedRatio(c.answered*100, c.calls)
			sum.AvgForwardSeconds = roundedRatio(c.forwardSeconds, c.answered)
			out.Sentiment = AnalyticsSentiment{Positive: int(c.positive), Neutral: int(c.neutral), Negative: int(c.negative)}
			for h, v := range c.hours {
				if h < len(out.ByHour) {
					out.ByHour[h] = int(v)
				}
			}
		case "day":
			if c.day == nil {
				continue
			}
			d := c.day.Format(time.DateOnly)
			if _, ok := out.ByDay[d]; ok {
				out.ByDay[d] = int(c.calls)
			}
		case "number":
			if n := byNumber[c.numberID]; n != nil {
				n.Total, n.Answered = int(c.calls), int(c.answered)
			}
		}
	}
	for _, n := range numbers {
		out.ByNumber = append(out.ByNumber, n.AnalyticsNumber)
	}
	return out, nil
}

// Sources of analyticsSQL's rows: the table alone, the table with the account's pending deltas
// (call_counts_local_current), or the window's calls counted in zone $5 ([$6, $7) the window)
// when the table is kept in another zone.
const (
	analyticsFromTable   = `SELECT * FROM call_counts_local WHERE account_id = $1 AND day >= $2::date AND day <= $3::date`
	analyticsFromCurrent = `SELECT * FROM call_counts_local_current WHERE account_id = $1 AND day >= $2::date AND day <= $3::date`
	analyticsFromCalls   = `SELECT * FROM call_counts_local_window($1, $5, $6, $7) WHERE day >= $2::date AND day <= $3::date`
)

// analyticsSQL sums the rows of call_counts_local that source gives ($1 account, $2 and $3 the
// window's first and last dates, $4 a number's public id or ”) in PostgreSQL, in one statement (one
// snapshot): a summary row (with the zone the table is kept in, the 24 hourly counts and pending,
// whether the source falls short of deltas in that snapshot), a row per day and a row per
// number, whatever $4. 94 rows for 90 days instead of 90 per number. The table alone is exact
// when the account has no deltas pending, the usual case, and then the statement neither plans
// nor runs the pending branch of call_counts_local_current.
func analyticsSQL(source, pending string) string {
	hours := make([]string, 24)
	for h := range hours {
		hours[h] = fmt.Sprintf("COALESCE(sum(hours[%d]), 0)", h+1)
	}
	return `WITH l AS (` + source + `),
		chosen AS (SELECT * FROM l WHERE $4::text = '' OR number_id = (SELECT id FROM numbers WHERE account_id = $1 AND public_id = $4))
	SELECT 'summary', NULL::date, (SELECT call_counts_zone(time_zone) FROM accounts WHERE id = $1), 0::bigint,
		COALESCE(sum(calls), 0)::bigint, COALESCE(sum(filtered), 0)::bigint, COALESCE(sum(answered), 0)::bigint,
		COALESCE(sum(missed), 0)::bigint, COALESCE(sum(voicemail), 0)::bigint, COALESCE(sum(blocked), 0)::bigint,
		COALESCE(sum(forward_seconds), 0)::bigint, COALESCE(sum(positive), 0)::bigint, COALESCE(sum(neutral), 0)::bigint,
		COALESCE(sum(negative), 0)::bigint, ARRAY[` + strings.Join(hours, ", ") + `]::bigint[], ` + pending + `
	FROM chosen
	UNION ALL
	SELECT 'day', day, NULL, 0, sum(calls)::bigint, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, false FROM chosen GROUP BY day
	UNION ALL
	SELECT 'number', NULL, NULL, number_id, sum(calls)::bigint, 0, sum(answered)::bigint, 0, 0, 0, 0, 0, 0, 0, NULL, false
	FROM l GROUP BY number_id`
}

// analyticsRow is a row of analyticsSQL.
type analyticsRow struct {
	kind                                                  string
	day                                                   *time.Time
	zone                                                  *string
	numberID                                              int64
	calls, filtered, answered, missed, voicemail, blocked int64
	forwardSeconds, positive, neutral, negative           int64
	hours                                                 []int64
	pending                                               bool
}

func scanAnalyticsRow(r pgx.CollectableRow) (analyticsRow, error) {
	var c analyticsRow
	err := r.Scan(&c.kind, &c.day, &c.zone, &c.numberID, &c.calls, &c.filtered, &c.answered, &c.missed, &c.voicemail,
		&c.blocked, &c.forwardSeconds, &c.positive, &c.neutral, &c.negative, &c.hours, &c.pending)
	return c, err
}
