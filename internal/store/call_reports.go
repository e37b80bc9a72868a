package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

// Bulk writes of the platform's call reports: a batch of reports is recorded with a few
// multi-row statements in one transaction, so the calls' statement-level count triggers, the
// count rows they lock, the commit and its NOTIFY flush are paid once per batch, not per call.

// LiveNumbersByE164 finds the live (not released) numbers with these E.164 addresses, by
// address; an address with no live number is absent.
func liveNumbersByE164(ctx context.Context, q pgx.Tx, e164s []string) (map[string]LiveNumber, error) {
	rows, err := q.Query(ctx, `SELECT n.id, n.account_id, a.public_id, a.name, n.public_id, n.e164, n.label,
			n.privacy_mode_enabled, n.shared_link_lifetime_hours
		FROM numbers n JOIN accounts a ON a.id = n.account_id
		WHERE n.e164 = ANY($1) AND n.status <> 'released'`, e164s)
	if err != nil {
		return nil, fmt.Errorf("look up numbers: %w", err)
	}
	defer rows.Close()
	out := make(map[string]LiveNumber, len(e164s))
	for rows.Next() {
		var n LiveNumber
		var hours int
		if err := rows.Scan(&n.ID, &n.AccountID, &n.AccountPublicID, &n.AccountName, &n.PublicID, &n.E164, &n.Label,
			&n.PrivacyMode, &hours); err != nil {
			return nil, err
		}
		n.SharedLinkLifetime = time.Duration(hours) * time.Hour
		out[n.E164] = n
	}
	return out, rows.Err()
}

// callRef is a call's key among the platform's reports.
type callRef struct {
	accountID int64
	ref       string
}

// RecordCalls stores reported calls and their recordings inside tx, with one statement per
// table: out[i] is what became of in[i]. A report whose platform_ref the account already has,
// stored before or earlier in the same batch, stores nothing and is a Duplicate naming the
// call stored first.
func recordCalls(ctx context.Context, tx pgx.Tx, in []CallReport) ([]ReportedCall, error) {
	out := make([]ReportedCall, len(in))
	first := map[callRef]int{} // the first report of each platform_ref in the batch
	var refs []callRef
	for i, r := range in {
		if r.PlatformRef == "" {
			continue
		}
		k := callRef{r.AccountID, r.PlatformRef}
		if _, seen := first[k]; !seen {
			first[k] = i
			refs = append(refs, k)
		}
	}
	progressIDs, err := progressCallPublicIDs(ctx, tx, refs)
	if err != nil {
		return nil, err
	}

	// The calls: one INSERT of every first report; rows not returned were reported before.
	var (
		accountIDs, durations, talks, forwards []int64
		numberIDs                              []*int64
		publicIDs, froms, tos, names, disps    []string
		filtered, emergency                    []bool
		starts, ends                           []time.Time
		rated                                  []int64
		answeredBy, departments, targetTypes   []*string
		targetLabels, platformRefs             []*string
		inserted                               []int // index in in of each row sent
	)
	for i, r := range in {
		var ref *string
		if r.PlatformRef != "" {
			if first[callRef{r.AccountID, r.PlatformRef}] != i {
				continue
			}
			ref = &in[i].PlatformRef
		}
		publicID := progressIDs[callRef{r.AccountID, r.PlatformRef}]
		if publicID == "" {
			publicID = NewPublicID(PrefixCall)
		}
		out[i].CallPublicID = publicID
		inserted = append(inserted, i)
		accountIDs = append(accountIDs, r.AccountID)
		publicIDs = append(publicIDs, publicID)
		numberIDs = append(numberIDs, r.NumberID)
		froms, tos, names, disps = append(froms, r.FromE164), append(tos, r.ToE164), append(names, r.CallerName), append(disps, r.Disposition)
		filtered, emergency = append(filtered, r.Filtered), append(emergency, r.Emergency)
		starts, ends = append(starts, r.StartedAt), append(ends, reportEndedAt(r))
		durations, talks, forwards = append(durations, int64(r.DurationSeconds)), append(talks, int64(r.TalkSeconds)), append(forwards, int64(r.ForwardSeconds))
		rated = append(rated, r.RatedPence)
		answeredBy, departments, targetTypes, targetLabels = append(answeredBy, r.AnsweredBy), append(departments, r.Department),
			append(targetTypes, r.TargetType), append(targetLabels, r.TargetLabel)
		platformRefs = append(platformRefs, ref)
	}
	rows, err := tx.Query(ctx, `INSERT INTO calls (account_id, public_id, number_id, from_e164, to_e164, caller_name,
			disposition, filtered, emergency, started_at, ended_at, duration_seconds, talk_seconds, forward_seconds,
			total_rated_amount_pence, answered_by_staff, answered_department, answer_target_type, answer_target_label, platform_ref)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::boolean[], $9::boolean[], $10::timestamptz[], $11::timestamptz[], $12::int[], $13::int[], $14::int[],
			$15::bigint[], $16::text[], $17::text[], $18::text[], $19::text[], $20::text[])
		ON CONFLICT (account_id, platform_ref) WHERE platform_ref IS NOT NULL DO NOTHING
		RETURNING id, public_id`,
		accountIDs, publicIDs, numberIDs, froms, tos, names, disps, filtered, emergency, starts, ends, durations, talks,
		forwards, rated, answeredBy, departments, targetTypes, targetLabels, platformRefs)
	if err != nil {
		return nil, fmt.Errorf("record %d calls: %w", len(inserted), err)
	}
	callIDs := map[string]int64{} // public id → id
	for rows.Next() {
		var id int64
		var publicID string
		if err := rows.Scan(&id, &publicID); err != nil {
			rows.Close()
			return nil, err
		}
		callIDs[publicID] = id
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("record %d calls: %w", len(inserted), err)
	}
	var earlier []callRef // reported before this batch
	for _, i := range inserted {
		if id, ok := callIDs[out[i].CallPublicID]; ok {
			out[i].CallID = id
		} else {
			out[i] = ReportedCall{Duplicate: true}
			earlier = append(earlier, callRef{in[i].AccountID, in[i].PlatformRef})
		}
	}
	if err := recordRecordings(ctx, tx, in, out); err != nil {
		return nil, err
	}
	stored, err := reportedCalls(ctx, tx, earlier)
	if err != nil {
		return nil, err
	}
	for i, r := range in {
		if r.PlatformRef == "" {
			continue
		}
		k := callRef{r.AccountID, r.PlatformRef}
		if f := first[k]; f != i { // a repeat within the batch: the answer of its first report
			out[i] = out[f]
			out[i].RecordingCreated = time.Time{}
			out[i].Duplicate = true
		}
		if out[i].Duplicate {
			if s, ok := stored[k]; ok {
				out[i] = s
			}
		}
	}
	return out, nil
}

// reportEndedAt is when a reported call ended.
func reportEndedAt(r CallReport) time.Time {
	return r.StartedAt.Add(time.Duration(r.DurationSeconds) * time.Second)
}

// recordRecordings stores, in one statement, the recordings of the reports whose calls were
// just stored (out[i].CallID set, not Duplicate), and fills in their ids.
func recordRecordings(ctx context.Context, tx pgx.Tx, in []CallReport, out []ReportedCall) error {
	var (
		accountIDs, callIDs, sizes []int64
		publicIDs, kinds, keys     []string
		types                      []string
		durations                  []int64
		created                    []time.Time
		rowOf                      = map[int64]int{} // call id → index in out
	)
	for i, r := range in {
		if r.Recording == nil || out[i].Duplicate || out[i].CallID == 0 {
			continue
		}
		rec := *r.Recording
		if rec.ContentType == "" {
			rec.ContentType = "audio/wav"
		}
		rowOf[out[i].CallID] = i
		accountIDs, callIDs = append(accountIDs, r.AccountID), append(callIDs, out[i].CallID)
		publicIDs, kinds, keys, types = append(publicIDs, NewPublicID(PrefixRecording)), append(kinds, rec.Kind),
			append(keys, rec.StorageKey), append(types, rec.ContentType)
		durations, sizes, created = append(durations, int64(rec.DurationSeconds)), append(sizes, rec.SizeBytes), append(created, reportEndedAt(r))
	}
	if len(callIDs) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `INSERT INTO recordings (account_id, public_id, call_id, kind, storage_key, content_type,
			duration_seconds, size_bytes, created_at)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::int[],
			$8::bigint[], $9::timestamptz[])
		RETURNING call_id, id, public_id, created_at`,
		accountIDs, publicIDs, callIDs, kinds, keys, types, durations, sizes, created)
	if err != nil {
		return fmt.Errorf("record %d recordings: %w", len(callIDs), err)
	}
	defer rows.Close()
	for rows.Next() {
		var callID int64
		var r ReportedCall
		if err := rows.Scan(&callID, &r.RecordingID, &r.RecordingPublicID, &r.RecordingCreated); err != nil {
			return err
		}
		o := &out[rowOf[callID]]
		o.RecordingID, o.RecordingPublicID, o.RecordingCreated = r.RecordingID, r.RecordingPublicID, r.RecordingCreated
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("record %d recordings: %w", len(callIDs), err)
	}
	return nil
}

// reportedCalls reads the calls (and first recording) stored for refs, as duplicates.
func reportedCalls(ctx context.Context, tx pgx.Tx, refs []callRef) (map[callRef]ReportedCall, error) {
	out := map[callRef]ReportedCall{}
	if len(refs) == 0 {
		return out, nil
	}
	accounts, platformRefs := splitRefs(refs)
	rows, err := tx.Query(ctx, `SELECT DISTINCT ON (c.id) c.account_id, c.platform_ref, c.id, c.public_id,
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

// progressCallPublicIDs is the call id progress reports announced for each of refs (absent:
// none). It takes the locks RecordCallProgress takes (in key order, so two batches cannot
// deadlock), so a final report and a progress report of one call do not cross, then reads.
func progressCallPublicIDs(ctx context.Context, tx pgx.Tx, refs []callRef) (map[callRef]string, error) {
	out := map[callRef]string{}
	if len(refs) == 0 {
		return out, nil
	}
	accounts, platformRefs := splitRefs(refs)
	if _, err := tx.Exec(ctx, `SELECT count(pg_advisory_xact_lock(key)) FROM (
			SELECT DISTINCT hashtextextended('call_progress:' || a || ':' || r, 0) AS key
			FROM unnest($1::bigint[], $2::text[]) AS k(a, r) ORDER BY 1) keys`, accounts, platformRefs); err != nil {
		return nil, fmt.Errorf("lock %d calls' progress: %w", len(refs), err)
	}
	// A statement of its own: its snapshot is taken after the locks are held.
	rows, err := tx.Query(ctx, `SELECT p.account_id, p.platform_ref, min(p.call_public_id)
		FROM call_progress p JOIN unnest($1::bigint[], $2::text[]) AS k(account_id, platform_ref)
			ON p.account_id = k.account_id AND p.platform_ref = k.platform_ref
		GROUP BY 1, 2`, accounts, platformRefs)
	if err != nil {
		return nil, fmt.Errorf("read %d calls' progress: %w", len(refs), err)
	}
	defer rows.Close()
	for rows.Next() {
		var k callRef
		var id string
		if err := rows.Scan(&k.accountID, &k.ref, &id); err != nil {
			return nil, err
		}
		out[k] = id
	}
	return out, rows.Err()
}

func splitRefs(refs []callRef) ([]int64, []string) {
	accounts, platformRefs := make([]int64, len(refs)), make([]string, len(refs))
	for i, k := range refs {
		accounts[i], platformRefs[i] = k.accountID, k.ref
	}
	return accounts, platformRefs
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
