package store

import (
	"context"
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

// roundedRatio is round(num / den) for non-negative integers, 0 when den is 0.
func roundedRatio(num, den int64) int {
	if den <= 0 {
		return 0
	}
	return int((2*num + den) / (2 * den))
}

// CallAnalytics answers from call_counts_local (migration 00010): one row per day of the
// account's time zone and number, kept by triggers on calls, so a 90-day window reads at most 90
// rows per number whatever the zone. The rows are summed here. ErrNotFound when NumberPublicID
// names none of the account's live numbers.
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
	// The zone comes with the rows, read in the same statement: one row with a null day when the
	// window has no counts.
	batch.Queue(`SELECT z.tz, `+analyticsColumns+`
		FROM (SELECT call_counts_zone(time_zone) AS tz FROM accounts WHERE id = $1) z
		LEFT JOIN call_counts_local l ON l.account_id = $1 AND l.day >= $2::date AND l.day <= $3::date`,
		q.AccountID, dates[0], dates[len(dates)-1])
	br := s.Pool.SendBatch(ctx, batch)
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
	var numberID *int64
	if q.NumberPublicID != "" {
		for _, n := range numbers {
			if n.PublicID == q.NumberPublicID {
				numberID = &n.id
			}
		}
		if numberID == nil {
			return Analytics{}, ErrNotFound
		}
	}

	rows, _ = br.Query()
	var zone string
	counts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (analyticsRow, error) {
		var c analyticsRow
		err := r.Scan(append([]any{&zone}, c.fields()...)...)
		return c, err
	})
	if err != nil {
		return Analytics{}, err
	}
	if err := br.Close(); err != nil {
		return Analytics{}, err
	}
	if zone != q.Location.String() {
		rows, _ := s.Pool.Query(ctx, `SELECT `+analyticsColumns+` FROM call_counts_local_window($1, $2, $3, $4) l`,
			q.AccountID, q.Location.String(), from, to)
		counts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (analyticsRow, error) {
			var c analyticsRow
			err := r.Scan(c.fields()...)
			return c, err
		})
		if err != nil {
			return Analytics{}, err
		}
	}

	byNumber := make(map[int64]*AnalyticsNumber, len(numbers))
	for i := range numbers {
		byNumber[numbers[i].id] = &numbers[i].AnalyticsNumber
	}
	var answeredSeconds int64
	sum := &out.Summary
	for i := range counts {
		c := &counts[i]
		if c.day == nil {
			continue // the window has no counts
		}
		if n := byNumber[c.numberID]; n != nil {
			n.Total += int(c.calls)
			n.Answered += int(c.answered)
		}
		if numberID != nil && c.numberID != *numberID {
			continue
		}
		d := c.day.Format(time.DateOnly)
		if _, ok := out.ByDay[d]; ok {
			out.ByDay[d] += int(c.calls)
		}
		for h, v := range c.hours {
			if h < len(out.ByHour) {
				out.ByHour[h] += int(v)
			}
		}
		sum.Total += int(c.calls)
		sum.Filtered += int(c.filtered)
		sum.Answered += int(c.answered)
		sum.Missed += int(c.missed)
		sum.Voicemail += int(c.voicemail)
		sum.Blocked += int(c.blocked)
		answeredSeconds += c.forwardSeconds
		out.Sentiment.Positive += int(c.positive)
		out.Sentiment.Neutral += int(c.neutral)
		out.Sentiment.Negative += int(c.negative)
	}
	sum.AnswerRate = roundedRatio(int64(sum.Answered)*100, int64(sum.Total))
	sum.AvgForwardSeconds = roundedRatio(answeredSeconds, int64(sum.Answered))
	for _, n := range numbers {
		out.ByNumber = append(out.ByNumber, n.AnalyticsNumber)
	}
	return out, nil
}

// analyticsColumns are the columns of call_counts_local (alias l) that analyticsRow scans.
const analyticsColumns = `l.day, COALESCE(l.number_id, 0), COALESCE(l.calls, 0), COALESCE(l.filtered, 0), COALESCE(l.answered, 0),
	COALESCE(l.missed, 0), COALESCE(l.voicemail, 0), COALESCE(l.blocked, 0), COALESCE(l.forward_seconds, 0),
	COALESCE(l.positive, 0), COALESCE(l.neutral, 0), COALESCE(l.negative, 0), l.hours`

// analyticsRow is a row of call_counts_local.
type analyticsRow struct {
	day                                                   *time.Time
	numberID                                              int64
	calls, filtered, answered, missed, voicemail, blocked int64
	forwardSeconds, positive, neutral, negative           int64
	hours                                                 []int64
}

func (c *analyticsRow) fields() []any {
	return []any{&c.day, &c.numberID, &c.calls, &c.filtered, &c.answered, &c.missed, &c.voicemail, &c.blocked,
		&c.forwardSeconds, &c.positive, &c.neutral, &c.negative, &c.hours}
}
