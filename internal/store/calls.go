package store

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
)

// CallTranscript is the transcript and AI summary of a call, as a call row shows it.
type CallTranscript struct {
	Status         string
	SummaryStatus  string
	Summary        *string
	Intent         *string
	Sentiment      *string
	Urgency        *string
	ActionItems    []string
	CallbackNumber *string
}

// Call is a call as the store reads it; the facade shapes it into GET /calls' rows.
type Call struct {
	ID                    int64
	PublicID              string
	From                  string
	CallerDisplayName     string
	To                    string
	ToName                string
	Direction             string
	Disposition           string
	StartedAt             time.Time
	ForwardSeconds        int
	TotalRatedAmountPence int64
	// RecordingPublicID is the call's recording (kind call or voicemail, not deleted); null without one.
	RecordingPublicID *string
	// Transcript is null until the call's recording has a transcript.
	Transcript *CallTranscript
}

// Call outcomes (calls.disposition), the values of the list's status filter.
var CallDispositions = []string{"answered", "no-answer", "voicemail", "failed", "in-progress", "busy", "blocked"}

// The values CallFilter's Activity, Sentiment and Urgency take (Activity's first is the default).
var (
	CallActivities = []string{"business", "filtered", "all"}
	CallSentiments = []string{"positive", "neutral", "negative"}
	CallUrgencies  = []string{"low", "normal", "high"}
)

// CallSearchDigits is the number part of a call search: its digits when it reads as a phone
// number (digits, spaces, "+" and punctuation), none when it has letters. "Unit 4" is a name;
// matching its "4" against every number would return nearly every call.
func CallSearchDigits(q string) string {
	if strings.IndexFunc(q, unicode.IsLetter) >= 0 {
		return ""
	}
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, q)
}

// CallFilter selects calls of one account. Empty fields do not filter.
type CallFilter struct {
	// Activity is business (filtered = false), filtered (filtered = true) or all.
	Activity string
	// Search is free text: its digits match part of the caller's or dialled number, the
	// whole text matches part of the caller's name (case-insensitive).
	Search       string
	SearchDigits string
	// From and To bound started_at: [From, To).
	From, To  *time.Time
	Status    string
	Sentiment string
	Urgency   string
	Limit     int
	Offset    int
}

// callQueryArgs numbers positional parameters as they are added.
type callQueryArgs []any

func (a *callQueryArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// callLikeContains is a LIKE pattern matching s anywhere, with LIKE's wildcards escaped.
func callLikeContains(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// callConditions is the WHERE clause over calls c for the filter; args[0] is the account id.
func callConditions(f CallFilter, args *callQueryArgs) string {
	acct := "$1"
	conds := []string{"c.account_id = " + acct}
	switch f.Activity {
	case "filtered":
		conds = append(conds, "c.filtered = true")
	case "all":
	default:
		conds = append(conds, "c.filtered = false")
	}
	if f.From != nil {
		conds = append(conds, "c.started_at >= "+args.add(*f.From))
	}
	if f.To != nil {
		conds = append(conds, "c.started_at < "+args.add(*f.To))
	}
	if f.Status != "" {
		conds = append(conds, "c.disposition = "+args.add(f.Status))
	}
	if f.Search != "" || f.SearchDigits != "" {
		var or []string
		if f.SearchDigits != "" {
			d := args.add(callLikeContains(f.SearchDigits))
			or = append(or, "c.from_e164 LIKE "+d, "c.to_e164 LIKE "+d)
		}
		if f.Search != "" {
			q := args.add(callLikeContains(f.Search))
			// The caller's name is the matching contact's display name when a contact has
			// the caller's number (the most recently updated such contact), else the name the
			// network gave. Both arms are written so the trigram indexes can drive them.
			or = append(or,
				`(lower(c.caller_name) LIKE lower(`+q+`) AND NOT `+callerHasContactSQL(acct, "c.from_e164")+`)`,
				// ARRAY(...) is computed once, so the index on (account_id, from_e164) serves it.
				`c.from_e164 = ANY (`+contactNamePhonesSQL(acct, q)+`)`)
		}
		conds = append(conds, "("+strings.Join(or, " OR ")+")")
	}
	// calls.sentiment and calls.urgency are those of the call's latest transcript (the one the
	// row shows), kept by a trigger on transcripts (migration 00009).
	if f.Sentiment != "" {
		conds = append(conds, "c.sentiment = "+args.add(f.Sentiment))
	}
	if f.Urgency != "" {
		conds = append(conds, "c.urgency = "+args.add(f.Urgency))
	}
	return strings.Join(conds, " AND ")
}

// callerHasContactSQL is true when a contact of the account has the phone number e164.
func callerHasContactSQL(acct, e164 string) string {
	return `EXISTS (SELECT 1 FROM contact_phones cp JOIN contacts ct ON ct.id = cp.contact_id
		WHERE cp.account_id = ` + acct + ` AND ct.account_id = ` + acct + ` AND cp.e164 = ` + e164 + `)`
}

// contactNamePhonesSQL is the array of phone numbers whose contact (the most recently updated
// contact having that number, the one that names its calls) has a name matching pattern q.
func contactNamePhonesSQL(acct, q string) string {
	return `ARRAY(
		SELECT cp.e164 FROM contact_phones cp JOIN contacts ct ON ct.id = cp.contact_id
		WHERE cp.account_id = ` + acct + ` AND ct.account_id = ` + acct + ` AND lower(ct.display_name) LIKE lower(` + q + `)
		AND NOT EXISTS (
			SELECT 1 FROM contact_phones cp2 JOIN contacts ct2 ON ct2.id = cp2.contact_id
			WHERE cp2.account_id = ` + acct + ` AND ct2.account_id = ` + acct + ` AND cp2.e164 = cp.e164
			AND (ct2.updated_at, ct2.id) > (ct.updated_at, ct.id)))`
}

// callRowsSQL completes the call rows of the calls that inner selects (all columns of calls,
// aliased c) with one query: the caller's contact name, the dialled number's label, the
// recording and the latest transcript come from LATERAL joins over those rows only.
func callRowsSQL(inner string) string {
	return `SELECT c.id, c.public_id, c.from_e164,
			COALESCE(NULLIF(cn.display_name, ''), NULLIF(c.caller_name, ''), c.from_e164),
			c.to_e164, COALESCE(n.label, ''), c.direction, c.disposition, c.started_at, c.forward_seconds,
			c.total_rated_amount_pence, rec.public_id,
			t.id IS NOT NULL, COALESCE(t.status, ''), COALESCE(t.summary_status, ''), t.summary, t.intent,
			t.sentiment, t.urgency, COALESCE(t.action_items, '{}'), t.callback_number
		FROM (` + inner + `) c
		LEFT JOIN numbers n ON n.id = c.number_id AND n.account_id = c.account_id
		LEFT JOIN LATERAL (
			SELECT ct.display_name FROM contact_phones cp JOIN contacts ct ON ct.id = cp.contact_id
			WHERE cp.account_id = c.account_id AND ct.account_id = c.account_id AND cp.e164 = c.from_e164
			ORDER BY ct.updated_at DESC, ct.id DESC LIMIT 1) cn ON true
		LEFT JOIN LATERAL (
			SELECT r.public_id FROM recordings r
			WHERE r.call_id = c.id AND r.account_id = c.account_id AND r.kind IN ('call', 'voicemail') AND r.deleted_at IS NULL
			ORDER BY r.id DESC LIMIT 1) rec ON true
		LEFT JOIN LATERAL (
			SELECT t.id, t.status, t.summary_status, t.summary, t.intent, t.sentiment, t.urgency, t.action_items, t.callback_number
			FROM transcripts t WHERE t.call_id = c.id AND t.account_id = c.account_id
			ORDER BY t.id DESC LIMIT 1) t ON true
		ORDER BY c.started_at DESC, c.id DESC`
}

func scanCall(r pgx.CollectableRow) (Call, error) {
	var c Call
	var hasTranscript bool
	var t CallTranscript
	err := r.Scan(&c.ID, &c.PublicID, &c.From, &c.CallerDisplayName, &c.To, &c.ToName, &c.Direction, &c.Disposition,
		&c.StartedAt, &c.ForwardSeconds, &c.TotalRatedAmountPence, &c.RecordingPublicID,
		&hasTranscript, &t.Status, &t.SummaryStatus, &t.Summary, &t.Intent, &t.Sentiment, &t.Urgency, &t.ActionItems, &t.CallbackNumber)
	if err != nil {
		return Call{}, err
	}
	c.StartedAt = c.StartedAt.UTC()
	if hasTranscript {
		if t.ActionItems == nil {
			t.ActionItems = []string{}
		}
		c.Transcript = &t
	}
	return c, nil
}

// callPageSQL selects the calls of one page of f, newest first, from those matching where.
// LIMIT and OFFSET are written into the statement (validated integers) rather than passed
// as parameters: with parameters, PostgreSQL's generic plan assumes an offset of a tenth of
// the rows and never beats a custom plan, so the statement was planned again on every
// request, and planning cost more than executing.
func callPageSQL(where string, f CallFilter) string {
	return `SELECT * FROM calls c WHERE ` + where + ` ORDER BY c.started_at DESC, c.id DESC LIMIT ` +
		strconv.Itoa(f.Limit) + ` OFFSET ` + strconv.Itoa(f.Offset)
}

// ListCalls returns one page of the account's calls matching f, newest first, and how many
// match in all.
func (s *Store) ListCalls(ctx context.Context, accountID int64, f CallFilter) ([]Call, int, error) {
	args := callQueryArgs{accountID}
	where := callConditions(f, &args)
	pageArgs := append(callQueryArgs{}, args...)
	inner := callPageSQL(where, f)
	countSQL, countArgs, fromBuckets := callCountSQL(accountID, f, where, args, false)
	planOnce := f.Search == "" && f.SearchDigits == "" && f.Sentiment == "" && f.Urgency == ""
	if planOnce && fromBuckets {
		// The total is a cheap sum of count buckets: send it with the page in one round trip.
		b := &pgx.Batch{}
		var calls []Call
		var total int64
		var pending bool
		b.Queue(callRowsSQL(inner), pageArgs...).Query(func(rows pgx.Rows) error {
			var err error
			calls, err = pgx.CollectRows(rows, scanCall)
			return err
		})
		b.Queue(countSQL, countArgs...).QueryRow(func(row pgx.Row) error { return row.Scan(&total, &pending) })
		if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
			return nil, 0, err
		}
		if pending {
			var err error
			if total, err = s.countCallsCurrent(ctx, accountID, f, where, args, nil); err != nil {
				return nil, 0, err
			}
		}
		return calls, int(total), nil
	}
	// Searches, sentiment and urgency are planned for their values on every request (an
	// unnamed statement): the best plan for a pattern matching ten calls is a disaster for
	// one matching a hundred thousand, and a cached generic plan cannot tell them apart.
	var mode []any
	if !planOnce {
		mode = []any{pgx.QueryExecModeExec}
	}
	rows, err := s.pool.Query(ctx, callRowsSQL(inner), append(mode, pageArgs...)...)
	if err != nil {
		return nil, 0, err
	}
	calls, err := pgx.CollectRows(rows, scanCall)
	if err != nil {
		return nil, 0, err
	}
	// A short page that is not past the end already says how many match.
	if len(calls) < f.Limit && (len(calls) > 0 || f.Offset == 0) {
		return calls, f.Offset + len(calls), nil
	}
	var total int64
	var pending bool
	if err := s.pool.QueryRow(ctx, countSQL, append(mode, countArgs...)...).Scan(&total, &pending); err != nil {
		return nil, 0, err
	}
	if pending {
		if total, err = s.countCallsCurrent(ctx, accountID, f, where, args, mode); err != nil {
			return nil, 0, err
		}
	}
	return calls, int(total), nil
}

// countCallsCurrent counts the calls matching f through the *_current views: the count tables
// with the account's pending deltas, for when the tables alone would not be exact.
func (s *Store) countCallsCurrent(ctx context.Context, accountID int64, f CallFilter, where string, args []any,
	mode []any) (int64, error) {
	countSQL, countArgs, _ := callCountSQL(accountID, f, where, args, true)
	var total int64
	var pending bool
	err := s.pool.QueryRow(ctx, countSQL, append(mode, countArgs...)...).Scan(&total, &pending)
	return total, err
}

// GetCall returns one of the account's calls by public id.
func (s *Store) GetCall(ctx context.Context, accountID int64, publicID string) (Call, error) {
	rows, err := s.pool.Query(ctx, callRowsSQL(`SELECT * FROM calls c WHERE c.account_id = $1 AND c.public_id = $2`), accountID, publicID)
	if err != nil {
		return Call{}, err
	}
	c, err := pgx.CollectExactlyOneRow(rows, scanCall)
	return c, notFound(err)
}

// accountPendingSQL is whether the account $1 has call-count deltas not yet folded.
const accountPendingSQL = `EXISTS (SELECT 1 FROM call_count_deltas WHERE account_id = $1)`

// callCountSQL is the query counting the calls matching f (whose WHERE clause over calls c is
// where), and whether it sums count buckets. Filters that call_counts_daily and
// call_counts_hourly can answer (activity, status, and a period bounded by whole UTC hours)
// are summed from them; others are counted on calls. Its row is the count and whether it must
// be read again with current: sums of the count tables alone, with whether the account has
// deltas pending in the same snapshot (when none, the tables alone are exact, and the
// statement neither plans nor runs the views' pending branches), or, with current, sums of the
// *_current views.
func callCountSQL(accountID int64, f CallFilter, where string, args []any, current bool) (string, []any, bool) {
	suffix, pending := "", accountPendingSQL
	if current {
		suffix, pending = "_current", "false"
	}
	rargs := callQueryArgs{accountID}
	conds := "account_id = $1"
	switch f.Activity {
	case "filtered":
		conds += " AND filtered = true"
	case "all":
	default:
		conds += " AND filtered = false"
	}
	if f.Search != "" && f.SearchDigits == "" && f.From == nil && f.To == nil && f.Status == "" &&
		f.Sentiment == "" && f.Urgency == "" {
		// A search by name alone: the two arms of callConditions' name match (disjoint: one
		// needs a contact with the caller's number, the other none). The first is the calls of
		// matching network names from numbers outside the directory, the second the calls
		// from the numbers of matching contacts (migration 00012).
		q := rargs.add(callLikeContains(f.Search))
		return `SELECT
			(SELECT COALESCE(sum(n.calls - n.calls_from_directory), 0)::bigint FROM call_name_counts` + suffix + ` n WHERE n.` + conds + `
				AND n.caller_name_lower LIKE lower(` + q + `))
			+ (SELECT COALESCE(sum(k.calls), 0)::bigint FROM call_caller_counts` + suffix + ` k WHERE k.` + conds + `
				AND k.from_e164 = ANY (` + contactNamePhonesSQL("$1", q) + `)), ` + pending, rargs, true
	}
	if (f.Sentiment != "" || f.Urgency != "") && f.Search == "" && f.SearchDigits == "" &&
		wholeUTCDay(f.From) && wholeUTCDay(f.To) {
		// Sentiment and urgency: summed from their daily buckets.
		q := `SELECT COALESCE(sum(calls), 0)::bigint FROM call_counts_sentiment_daily` + suffix + ` WHERE ` + conds
		if f.Status != "" {
			q += " AND disposition = " + rargs.add(f.Status)
		}
		if f.Sentiment != "" {
			q += " AND sentiment = " + rargs.add(f.Sentiment)
		}
		if f.Urgency != "" {
			q += " AND urgency = " + rargs.add(f.Urgency)
		}
		if f.From != nil {
			q += " AND day >= " + rargs.add(f.From.UTC().Format(time.DateOnly)) + "::date"
		}
		if f.To != nil {
			q += " AND day < " + rargs.add(f.To.UTC().Format(time.DateOnly)) + "::date"
		}
		return `SELECT (` + q + `), ` + pending, rargs, true
	}
	if f.Search != "" || f.SearchDigits != "" || f.Sentiment != "" || f.Urgency != "" ||
		!wholeUTCHour(f.From) || !wholeUTCHour(f.To) {
		return `SELECT count(*), false FROM calls c WHERE ` + where, args, false
	}
	if f.Status != "" {
		conds += " AND disposition = " + rargs.add(f.Status)
	}
	// Whole UTC days inside the period come from the daily counts, the hours at its ends
	// from the hourly ones.
	var parts []string
	fullFrom, fullTo := f.From, f.To
	if f.From != nil {
		d := ceilUTCDay(*f.From)
		fullFrom = &d
	}
	if f.To != nil {
		d := f.To.UTC().Truncate(24 * time.Hour)
		fullTo = &d
	}
	hourRanges := []string{}
	if fullFrom != nil && fullTo != nil && !fullFrom.Before(*fullTo) {
		hourRanges = append(hourRanges, "(hour >= "+rargs.add(*f.From)+" AND hour < "+rargs.add(*f.To)+")")
	} else {
		days := conds
		if fullFrom != nil {
			days += " AND day >= " + rargs.add(*fullFrom)
			if f.From.Before(*fullFrom) {
				hourRanges = append(hourRanges, "(hour >= "+rargs.add(*f.From)+" AND hour < "+rargs.add(*fullFrom)+")")
			}
		}
		if fullTo != nil {
			days += " AND day < " + rargs.add(*fullTo)
			if fullTo.Before(*f.To) {
				hourRanges = append(hourRanges, "(hour >= "+rargs.add(*fullTo)+" AND hour < "+rargs.add(*f.To)+")")
			}
		}
		parts = append(parts, `(SELECT COALESCE(sum(calls), 0)::bigint FROM call_counts_daily`+suffix+` WHERE `+days+`)`)
	}
	if len(hourRanges) > 0 {
		parts = append(parts, `(SELECT COALESCE(sum(calls), 0)::bigint FROM call_counts_hourly`+suffix+` WHERE `+conds+
			` AND (`+strings.Join(hourRanges, " OR ")+`))`)
	}
	return `SELECT ` + strings.Join(parts, " + ") + `, ` + pending, rargs, true
}

// wholeUTCHour reports whether t is absent or on a whole UTC hour (a bucket boundary).
func wholeUTCHour(t *time.Time) bool {
	return t == nil || t.Equal(t.Truncate(time.Hour))
}

// wholeUTCDay reports whether t is absent or a UTC midnight (a daily bucket boundary).
func wholeUTCDay(t *time.Time) bool {
	return t == nil || t.Equal(t.UTC().Truncate(24*time.Hour))
}

// ceilUTCDay is the first UTC midnight at or after t.
func ceilUTCDay(t time.Time) time.Time {
	d := t.UTC().Truncate(24 * time.Hour)
	if d.Before(t) {
		d = d.Add(24 * time.Hour)
	}
	return d
}

// CallAnswer is who answered a call, as the telephony platform reported it; each is null when
// not reported.
type CallAnswer struct {
	StaffMember, Department, TargetType, TargetLabel *string
}

// GetCallAnswer reads who answered the account's call publicID (the facts events carry as
// answer). ErrNotFound when the account has no such call.
func (s *Store) GetCallAnswer(ctx context.Context, accountID int64, publicID string) (CallAnswer, error) {
	var a CallAnswer
	err := s.pool.QueryRow(ctx, `SELECT answered_by_staff, answered_department, answer_target_type, answer_target_label
		FROM calls WHERE account_id = $1 AND public_id = $2`, accountID, publicID).Scan(
		&a.StaffMember, &a.Department, &a.TargetType, &a.TargetLabel)
	return a, notFound(err)
}
