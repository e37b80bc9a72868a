package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

// Bulk writes of the platform's call reports: a group of reports is recorded in one
// transaction of two round trips (BEGIN and the reads pipelined; one statement storing the
// calls, recordings and events, pipelined with COMMIT), so the statement-level triggers, the
// commit and its NOTIFY flush are paid once per group, and a report that arrives alone costs
// two round trips, not six.

// callRef is a call's key among the platform's reports.
type callRef struct {
	accountID int64
	ref       string
}

// CallReportKey names a report before its number is read: the number called and the
// platform's id of the call ("" when it has none).
type CallReportKey struct {
	ToE164      string
	PlatformRef string
}

// CallReports is one transaction recording a group of call reports in two round trips to
// PostgreSQL: BeginCallReports begins it and reads the numbers and the calls' earlier progress
// (pipelined); Plan names what each call and recording will be, so the caller can build the
// events from them; Commit stores the calls, recordings and events in one statement and
// commits in the same round trip. Close ends it, rolling back unless it committed.
type CallReports struct {
	conn      *pgxpool.Conn
	numbers   map[string]LiveNumber
	progress  map[callRef]string // call public ids announced by progress reports
	reports   []CallReport
	planned   []ReportedCall
	first     map[callRef]int // the first report of each platform_ref in the group
	committed bool
}

// BeginCallReports begins the transaction of a group of reports, reads the live numbers they
// are made to and takes the locks RecordCallProgress takes for their calls (in key order, so
// two groups cannot deadlock) before reading the ids progress reports gave them.
func (s *Store) BeginCallReports(ctx context.Context, keys []CallReportKey) (*CallReports, error) {
	e164s, refs := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		e164s[i], refs[i] = k.ToE164, k.PlatformRef
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	r := &CallReports{conn: conn, numbers: map[string]LiveNumber{}, progress: map[callRef]string{}}
	// Four statements, one round trip. Each statement after BEGIN takes its own snapshot (READ
	// COMMITTED), so the progress read follows the locks.
	batch := &pgx.Batch{}
	batch.Queue(`BEGIN`)
	// A report alone (the usual case below bursts) looks its number up by a scalar: PostgreSQL
	// keeps a generic plan for that, while a plan for an array is made again on every call.
	numbers, numbersArg := `ANY($1::text[])`, any(e164s)
	if len(keys) == 1 {
		numbers, numbersArg = `$1::text`, e164s[0]
	}
	batch.Queue(`SELECT n.id, n.account_id, a.public_id, a.name, n.public_id, n.e164, n.label,
			n.privacy_mode_enabled, n.shared_link_lifetime_hours
		FROM numbers n JOIN accounts a ON a.id = n.account_id
		WHERE n.e164 = `+numbers+` AND n.status <> 'released'`, numbersArg)
	batch.Queue(`SELECT count(pg_advisory_xact_lock(key)) FROM (
			SELECT DISTINCT hashtextextended('call_progress:' || n.account_id || ':' || k.r, 0) AS key
			FROM unnest($1::text[], $2::text[]) AS k(e164, r)
			JOIN numbers n ON n.e164 = k.e164 AND n.status <> 'released'
			WHERE k.r <> '' ORDER BY 1) keys`, e164s, refs)
	batch.Queue(`SELECT p.account_id, p.platform_ref, min(p.call_public_id)
		FROM unnest($1::text[], $2::text[]) AS k(e164, r)
		JOIN numbers n ON n.e164 = k.e164 AND n.status <> 'released'
		JOIN call_progress p ON p.account_id = n.account_id AND p.platform_ref = k.r
		GROUP BY 1, 2`, e164s, refs)
	if err := r.begin(ctx, conn.SendBatch(ctx, batch)); err != nil {
		r.Close(ctx)
		return nil, err
	}
	return r, nil
}

func (r *CallReports) begin(ctx context.Context, br pgx.BatchResults) error {
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("begin call reports: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("look up numbers: %w", err)
	}
	for rows.Next() {
		var n LiveNumber
		var hours int
		if err := rows.Scan(&n.ID, &n.AccountID, &n.AccountPublicID, &n.AccountName, &n.PublicID, &n.E164, &n.Label,
			&n.PrivacyMode, &hours); err != nil {
			rows.Close()
			return err
		}
		n.SharedLinkLifetime = time.Duration(hours) * time.Hour
		r.numbers[n.E164] = n
	}
	if rows.Close(); rows.Err() != nil {
		return fmt.Errorf("look up numbers: %w", rows.Err())
	}
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("lock the calls' progress: %w", err)
	}
	if rows, err = br.Query(); err != nil {
		return fmt.Errorf("read the calls' progress: %w", err)
	}
	for rows.Next() {
		var k callRef
		var id string
		if err := rows.Scan(&k.accountID, &k.ref, &id); err != nil {
			rows.Close()
			return err
		}
		r.progress[k] = id
	}
	if rows.Close(); rows.Err() != nil {
		return fmt.Errorf("read the calls' progress: %w", rows.Err())
	}
	return br.Close()
}

// Number is the live number e164, if there is one.
func (r *CallReports) Number(e164 string) (LiveNumber, bool) {
	n, ok := r.numbers[e164]
	return n, ok
}

// Plan names what in will be stored as: planned[i] is in[i]'s call and recording ids (the
// call's from its progress reports, else new). A repeat of a platform_ref earlier in in is a
// Duplicate naming the first's ids; whether a report repeats one stored before is known only
// at Commit.
func (r *CallReports) Plan(in []CallReport) []ReportedCall {
	r.reports, r.planned, r.first = in, make([]ReportedCall, len(in)), map[callRef]int{}
	for i, rep := range in {
		if rep.PlatformRef != "" {
			k := callRef{rep.AccountID, rep.PlatformRef}
			if f, seen := r.first[k]; seen {
				r.planned[i] = r.planned[f]
				r.planned[i].RecordingPublicID, r.planned[i].RecordingCreated = "", time.Time{}
				r.planned[i].Duplicate = true
				continue
			}
			r.first[k] = i
		}
		p := &r.planned[i]
		if p.CallPublicID = r.progress[callRef{rep.AccountID, rep.PlatformRef}]; p.CallPublicID == "" {
			p.CallPublicID = NewPublicID(PrefixCall)
		}
		if rep.Recording != nil {
			// As stored: PostgreSQL keeps microseconds.
			p.RecordingPublicID, p.RecordingCreated = NewPublicID(PrefixRecording), reportEndedAt(rep).Truncate(time.Microsecond)
		}
	}
	return r.planned
}

// Commit stores the planned calls, their recordings and evs (the events of the planned calls;
// evs[e] is of the call of report eventOf[e]; its CallID is not needed) in one statement, and
// commits. out[i] is what became of report i: a report of a platform_ref stored before is a
// Duplicate naming that call, and its events are not stored. queued[e] says whether evs[e] was.
func (r *CallReports) Commit(ctx context.Context, evs []events.Event, eventOf []int) (out []ReportedCall, queued []bool, err error) {
	batch := &pgx.Batch{}
	r.queueInsert(batch, evs, eventOf)
	batch.Queue(`COMMIT`)
	br := r.conn.SendBatch(ctx, batch)
	callIDs, recordingIDs, stored, err := readInserted(br)
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return nil, nil, fmt.Errorf("record %d calls: %w", len(r.reports), err)
	}
	r.committed = true

	out = make([]ReportedCall, len(r.reports))
	var earlier []callRef // reported before this group
	for i, p := range r.planned {
		out[i] = p
		if p.Duplicate {
			continue
		}
		id, ok := callIDs[p.CallPublicID]
		if !ok {
			out[i] = ReportedCall{Duplicate: true}
			earlier = append(earlier, callRef{r.reports[i].AccountID, r.reports[i].PlatformRef})
			continue
		}
		out[i].CallID = id
		if p.RecordingPublicID != "" {
			out[i].RecordingID = recordingIDs[id]
		}
	}
	// Read after the commit: a call another transaction stored is visible once this one's
	// insert has waited for it.
	prior, err := reportedCalls(ctx, r.conn, earlier)
	if err != nil {
		return nil, nil, err
	}
	for i, rep := range r.reports {
		if rep.PlatformRef == "" {
			continue
		}
		k := callRef{rep.AccountID, rep.PlatformRef}
		if f := r.first[k]; f != i { // a repeat within the group: the answer of its first report
			out[i] = out[f]
			out[i].RecordingCreated = time.Time{}
			out[i].Duplicate = true
		}
		if out[i].Duplicate {
			if s, ok := prior[k]; ok {
				out[i] = s
			}
		}
	}
	queued = make([]bool, len(evs))
	for e := range evs {
		queued[e] = stored[evs[e].ID]
	}
	return out, queued, nil
}

// Close ends the transaction, rolling it back unless it committed, and gives the connection
// back (the pool drops a connection left inside a transaction).
func (r *CallReports) Close(ctx context.Context) {
	if r.conn == nil {
		return
	}
	if !r.committed && !r.conn.Conn().PgConn().IsClosed() {
		_, _ = r.conn.Exec(ctx, `ROLLBACK`)
	}
	r.conn.Release()
	r.conn = nil
}

// queueInsert queues the statement storing the planned calls (all but the repeats within the
// group), their recordings and evs: rows of calls already stored (ON CONFLICT) return nothing,
// and their recordings and events are not stored. Its rows are the calls, recordings and
// events stored, told apart by their first column.
func (r *CallReports) queueInsert(batch *pgx.Batch, evs []events.Event, eventOf []int) {
	var (
		accountIDs, durations, talks, forwards []int64
		numberIDs                              []*int64
		publicIDs, froms, tos, names, disps    []string
		filtered, emergency                    []bool
		starts, ends                           []time.Time
		rated                                  []int64
		answeredBy, departments, targetTypes   []*string
		targetLabels, platformRefs             []*string

		recCalls, recPublicIDs, recKinds, recKeys, recTypes []string
		recDurations, recSizes                              []int64
		recCreated                                          []time.Time
	)
	for i, rep := range r.reports {
		p := r.planned[i]
		if p.Duplicate {
			continue
		}
		var ref *string
		if rep.PlatformRef != "" {
			ref = &r.reports[i].PlatformRef
		}
		accountIDs = append(accountIDs, rep.AccountID)
		publicIDs = append(publicIDs, p.CallPublicID)
		numberIDs = append(numberIDs, rep.NumberID)
		froms, tos, names, disps = append(froms, rep.FromE164), append(tos, rep.ToE164), append(names, rep.CallerName), append(disps, rep.Disposition)
		filtered, emergency = append(filtered, rep.Filtered), append(emergency, rep.Emergency)
		starts, ends = append(starts, rep.StartedAt), append(ends, reportEndedAt(rep))
		durations, talks, forwards = append(durations, int64(rep.DurationSeconds)), append(talks, int64(rep.TalkSeconds)), append(forwards, int64(rep.ForwardSeconds))
		rated = append(rated, rep.RatedPence)
		answeredBy, departments, targetTypes, targetLabels = append(answeredBy, rep.AnsweredBy), append(departments, rep.Department),
			append(targetTypes, rep.TargetType), append(targetLabels, rep.TargetLabel)
		platformRefs = append(platformRefs, ref)
		if rec := rep.Recording; rec != nil {
			contentType := rec.ContentType
			if contentType == "" {
				contentType = "audio/wav"
			}
			recCalls, recPublicIDs = append(recCalls, p.CallPublicID), append(recPublicIDs, p.RecordingPublicID)
			recKinds, recKeys, recTypes = append(recKinds, rec.Kind), append(recKeys, rec.StorageKey), append(recTypes, contentType)
			recDurations, recSizes = append(recDurations, int64(rec.DurationSeconds)), append(recSizes, rec.SizeBytes)
			recCreated = append(recCreated, p.RecordingCreated)
		}
	}
	evIDs := make([][16]byte, len(evs))
	evCalls, evTypes := make([]string, len(evs)), make([]string, len(evs))
	evBodies, evCreated := make([][]byte, len(evs)), make([]time.Time, len(evs))
	for e, ev := range evs {
		evIDs[e], evCalls[e], evTypes[e], evBodies[e], evCreated[e] = ev.ID, r.planned[eventOf[e]].CallPublicID, ev.Type, ev.Body, ev.CreatedAt
	}
	// switchboard.count_deltas, set for this transaction by the same statement (no round trip
	// of its own), leaves the calls' counts as deltas for FoldCallCounts (migration 00080).
	// Events go in in the order given (WITH ORDINALITY), as the outbox promises.
	batch.Queue(`WITH c AS (
			INSERT INTO calls (account_id, public_id, number_id, from_e164, to_e164, caller_name,
				disposition, filtered, emergency, started_at, ended_at, duration_seconds, talk_seconds, forward_seconds,
				total_rated_amount_pence, answered_by_staff, answered_department, answer_target_type, answer_target_label, platform_ref)
			SELECT r.* FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[],
				$8::boolean[], $9::boolean[], $10::timestamptz[], $11::timestamptz[], $12::int[], $13::int[], $14::int[],
				$15::bigint[], $16::text[], $17::text[], $18::text[], $19::text[], $20::text[]) r
				CROSS JOIN (SELECT set_config('switchboard.count_deltas', 'on', true)) count_deltas
			ON CONFLICT (account_id, platform_ref) WHERE platform_ref IS NOT NULL DO NOTHING
			RETURNING id, public_id, account_id),
		rec AS (
			INSERT INTO recordings (account_id, public_id, call_id, kind, storage_key, content_type,
				duration_seconds, size_bytes, created_at)
			SELECT c.account_id, r.public_id, c.id, r.kind, r.storage_key, r.content_type, r.duration_seconds, r.size_bytes, r.created_at
			FROM unnest($21::text[], $22::text[], $23::text[], $24::text[], $25::text[], $26::int[], $27::bigint[],
				$28::timestamptz[]) AS r(call, public_id, kind, storage_key, content_type, duration_seconds, size_bytes, created_at)
			JOIN c ON c.public_id = r.call
			RETURNING call_id, id),
		ev AS (
			INSERT INTO events (id, account_id, type, body, call_id, created_at)
			SELECT e.id, c.account_id, e.type, e.body, c.id, e.created_at
			FROM unnest($29::uuid[], $30::text[], $31::text[], $32::bytea[], $33::timestamptz[])
				WITH ORDINALITY AS e(id, call, type, body, created_at, n)
			JOIN c ON c.public_id = e.call
			ORDER BY e.n
			ON CONFLICT DO NOTHING
			RETURNING id)
		SELECT 'call', c.id, c.public_id, NULL::uuid FROM c
		UNION ALL SELECT 'recording', rec.id, rec.call_id::text, NULL FROM rec
		UNION ALL SELECT 'event', 0, '', ev.id FROM ev`,
		accountIDs, publicIDs, numberIDs, froms, tos, names, disps, filtered, emergency, starts, ends, durations, talks,
		forwards, rated, answeredBy, departments, targetTypes, targetLabels, platformRefs,
		recCalls, recPublicIDs, recKinds, recKeys, recTypes, recDurations, recSizes, recCreated,
		evIDs, evCalls, evTypes, evBodies, evCreated)
}

// readInserted reads the rows of queueInsert's statement and then the COMMIT's result: the
// stored calls' ids by public id, the recordings' ids by their calls' public ids, and the
// events stored.
func readInserted(br pgx.BatchResults) (callIDs map[string]int64, recordingIDs map[int64]int64, stored map[[16]byte]bool, err error) {
	rows, err := br.Query()
	if err != nil {
		return nil, nil, nil, err
	}
	defer rows.Close()
	callIDs, recordingIDs, stored = map[string]int64{}, map[int64]int64{}, map[[16]byte]bool{}
	for rows.Next() {
		var kind, key string
		var id int64
		var event *[16]byte
		if err := rows.Scan(&kind, &id, &key, &event); err != nil {
			return nil, nil, nil, err
		}
		switch kind {
		case "call": // key: the call's public id
			callIDs[key] = id
		case "recording": // key: the call's id
			callID, err := strconv.ParseInt(key, 10, 64)
			if err != nil {
				return nil, nil, nil, err
			}
			recordingIDs[callID] = id
		case "event":
			stored[*event] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, nil, err
	}
	if _, err := br.Exec(); err != nil {
		return nil, nil, nil, fmt.Errorf("commit: %w", err)
	}
	return callIDs, recordingIDs, stored, nil
}

// reportEndedAt is when a reported call ended.
func reportEndedAt(r CallReport) time.Time {
	return r.StartedAt.Add(time.Duration(r.DurationSeconds) * time.Second)
}

// reportedCalls reads the calls (and first recording) stored for refs, as duplicates.
func reportedCalls(ctx context.Context, q *pgxpool.Conn, refs []callRef) (map[callRef]ReportedCall, error) {
	out := map[callRef]ReportedCall{}
	if len(refs) == 0 {
		return out, nil
	}
	accounts, platformRefs := make([]int64, len(refs)), make([]string, len(refs))
	for i, k := range refs {
		accounts[i], platformRefs[i] = k.accountID, k.ref
	}
	rows, err := q.Query(ctx, `SELECT DISTINCT ON (c.id) c.account_id, c.platform_ref, c.id, c.public_id,
			coalesce(r.id, 0), coalesce(r.public_id, '')
		FROM calls c JOIN unnest($1::bigint[], $2::text[]) AS k(account_id, platform_ref)
			ON c.account_id = k.account_id AND c.platform_ref = k.platform_ref
		LEFT JOIN recordings r ON r.call_id = c.id
		ORDER BY c.id, r.id`, accounts, platformRefs)
	if err != nil {
		return nil, fmt.Errorf("read %d reported calls: %w", len(refs), err)
	}
	defer rows.Close()
	for rows.Next() {
		var k callRef
		r := ReportedCall{Duplicate: true}
		if err := rows.Scan(&k.accountID, &k.ref, &r.CallID, &r.CallPublicID, &r.RecordingID, &r.RecordingPublicID); err != nil {
			return nil, err
		}
		out[k] = r
	}
	return out, rows.Err()
}

// EnqueueEvents stores evs in the outbox with one statement, in order; queued[i] is false
// when the call already had an event of evs[i]'s type (see enqueueEvent).
func enqueueEvents(ctx context.Context, tx pgx.Tx, evs []events.Event) (queued []bool, err error) {
	queued = make([]bool, len(evs))
	if len(evs) == 0 {
		return queued, nil
	}
	ids := make([][16]byte, len(evs))
	accounts := make([]int64, len(evs))
	types := make([]string, len(evs))
	bodies := make([][]byte, len(evs))
	callIDs := make([]*int64, len(evs))
	created := make([]time.Time, len(evs))
	for i, ev := range evs {
		ids[i], accounts[i], types[i], bodies[i], callIDs[i], created[i] = ev.ID, ev.AccountID, ev.Type, ev.Body, ev.CallID, ev.CreatedAt
	}
	rows, err := tx.Query(ctx, `INSERT INTO events (id, account_id, type, body, call_id, created_at)
		SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::bytea[], $5::bigint[], $6::timestamptz[])
		ON CONFLICT DO NOTHING RETURNING id`, ids, accounts, types, bodies, callIDs, created)
	if err != nil {
		return nil, fmt.Errorf("queue %d events: %w", len(evs), err)
	}
	defer rows.Close()
	stored := make(map[[16]byte]bool, len(evs))
	for rows.Next() {
		var id [16]byte
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		stored[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queue %d events: %w", len(evs), err)
	}
	for i := range evs {
		queued[i] = stored[ids[i]]
	}
	return queued, nil
}
