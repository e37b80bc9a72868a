package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboard-dev/switchboard/internal/phone"
)

// ContactPhone is one of a contact's phone numbers, in the order the writing system sent them.
// Its tags name the keys of the json_build_object that reads the phones (contactColumns),
// not the API's fields (those are apiserver.ContactPhone's).
type ContactPhone struct {
	E164      string `json:"e164"`
	RawNumber string `json:"raw_number"`
	Label     string `json:"label"`
	IsPrimary bool   `json:"is_primary"`
}

// ContactLink points at the contact elsewhere. The one kind today is "external": the
// contact's page in the system that wrote it (the write payload's external_url).
type ContactLink struct {
	Kind   string
	URL    string
	Source string
}

// LinkKindExternal is the kind of the link made from a contact's external_url.
const LinkKindExternal = "external"

// Contact is a contact of the directory as the store reads it; the facade shapes the answer.
type Contact struct {
	ID              int64
	PublicID        string
	DisplayName     string
	FirstName       *string
	LastName        *string
	Company         *string
	Email           *string
	Notes           *string
	Source          string
	ExternalID      *string
	ExternalURL     *string // shown as an item of links
	SourceCreatedAt *time.Time
	SourceUpdatedAt *time.Time
	Phones          []ContactPhone
	Links           []ContactLink
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// ContactInput is a contact as a writing system sends it (already validated by the caller).
type ContactInput struct {
	Source          string
	ExternalID      *string // nil: always a new contact
	DisplayName     string
	FirstName       *string
	LastName        *string
	Company         *string
	Email           *string
	Notes           *string
	ExternalURL     *string
	SourceCreatedAt *time.Time
	SourceUpdatedAt *time.Time
	Phones          []ContactPhoneInput
}

// ContactPhoneInput is a phone number as the writing system holds it.
type ContactPhoneInput struct {
	Number    string
	Label     string
	IsPrimary bool
}

// ContactFilter narrows ListContacts. Empty fields do not filter.
type ContactFilter struct {
	// Search is part of the display name, company or email, matched case-insensitively.
	Search string
	// PhoneDigits is part of a phone number's international digits ("44207946").
	// A contact matches when Search or PhoneDigits matches.
	PhoneDigits string
	// Source keeps only contacts written by that system.
	Source string
}

// ContactSearch is the filter of a search of the contact directory: the name, company or
// email contain q, or, when q looks like (part of) a phone number ("+44 20 7946",
// "7946-0000"), a phone number contains its digits. Text with letters is matched against
// names only, so "Unit 4" does not match every number with a 4 in it.
func ContactSearch(q string) ContactFilter {
	f := ContactFilter{Search: q}
	digits := false
	for _, c := range q {
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case strings.ContainsRune("+-() ./", c):
		default:
			return f
		}
	}
	if digits {
		f.PhoneDigits = strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, q)
	}
	return f
}

// BulkContactsResult counts the contacts of a bulk upsert that were saved and that failed.
type BulkContactsResult struct {
	Imported int
	Failed   int
}

// normalPhones reads each number as a phone number into E.164 (national forms as UK
// numbers) and drops the ones that cannot be read; the order is kept.
func normalPhones(in []ContactPhoneInput) []ContactPhone {
	out := make([]ContactPhone, 0, len(in))
	for _, p := range in {
		e164, ok := phone.ToE164(p.Number)
		if !ok {
			continue
		}
		out = append(out, ContactPhone{E164: e164, RawNumber: strings.TrimSpace(p.Number), Label: p.Label, IsPrimary: p.IsPrimary})
	}
	return out
}

const contactColumns = `c.id, c.public_id, c.display_name, c.first_name, c.last_name, c.company, c.email, c.notes,
	c.source, c.external_id, c.external_url, c.source_created_at, c.source_updated_at, c.created_at, c.updated_at,
	coalesce((SELECT json_agg(json_build_object('e164', p.e164, 'raw_number', p.raw_number, 'label', p.label,
			'is_primary', p.is_primary) ORDER BY p.position, p.id)
		FROM contact_phones p WHERE p.contact_id = c.id), '[]'::json)`

func scanContact(row pgx.Row) (Contact, error) {
	var c Contact
	err := row.Scan(&c.ID, &c.PublicID, &c.DisplayName, &c.FirstName, &c.LastName, &c.Company, &c.Email, &c.Notes,
		&c.Source, &c.ExternalID, &c.ExternalURL, &c.SourceCreatedAt, &c.SourceUpdatedAt, &c.CreatedAt, &c.UpdatedAt,
		&c.Phones)
	if err != nil {
		return Contact{}, notFound(err)
	}
	finishContact(&c)
	return c, nil
}

// finishContact fills the derived fields and shows times in UTC.
func finishContact(c *Contact) {
	if c.Phones == nil {
		c.Phones = []ContactPhone{}
	}
	c.Links = []ContactLink{}
	if c.ExternalURL != nil && *c.ExternalURL != "" {
		c.Links = append(c.Links, ContactLink{Kind: LinkKindExternal, URL: *c.ExternalURL, Source: c.Source})
	}
	for _, t := range []*time.Time{c.SourceCreatedAt, c.SourceUpdatedAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	c.CreatedAt = c.CreatedAt.UTC()
	c.UpdatedAt = c.UpdatedAt.UTC()
}

// likePattern makes s match as a literal part of a LIKE operand.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// ListContacts returns one page of the account's contacts, most recently changed first,
// and the number of contacts matching the filter.
func (s *Store) ListContacts(ctx context.Context, accountID int64, f ContactFilter, limit, offset int) ([]Contact, int, error) {
	where := []string{"c.account_id = $1"}
	args := []any{accountID}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.Source != "" {
		where = append(where, "c.source = "+arg(f.Source))
	}
	var anyOf []string
	if f.Search != "" {
		// The first test is the contacts_search_trgm index's expression, so the index can be
		// used; it also matches text running from one field into the next ("Ada Engines" for
		// Ada of Engines Ltd), so the match must then lie within one of the fields.
		p := arg(likePattern(f.Search))
		anyOf = append(anyOf, `(lower(c.display_name || ' ' || coalesce(c.company, '') || ' ' || coalesce(c.email, ''))
			LIKE lower(`+p+`) AND (lower(c.display_name) LIKE lower(`+p+`) OR lower(c.company) LIKE lower(`+p+`)
			OR lower(c.email) LIKE lower(`+p+`)))`)
	}
	if f.PhoneDigits != "" {
		anyOf = append(anyOf, `EXISTS (SELECT 1 FROM contact_phones p WHERE p.contact_id = c.id
			AND p.e164 LIKE `+arg(likePattern(f.PhoneDigits))+`)`)
	}
	if len(anyOf) > 0 {
		where = append(where, "("+strings.Join(anyOf, " OR ")+")")
	}
	cond := strings.Join(where, " AND ")

	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM contacts c WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+contactColumns+` FROM contacts c WHERE `+cond+`
		ORDER BY c.updated_at DESC, c.id DESC LIMIT `+arg(limit)+` OFFSET `+arg(offset), args...)
	if err != nil {
		return nil, 0, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Contact, error) { return scanContact(r) })
	if err != nil {
		return nil, 0, err
	}
	if out == nil {
		out = []Contact{}
	}
	return out, total, nil
}

func getContactByID(ctx context.Context, q pgx.Tx, id int64) (Contact, error) {
	return scanContact(q.QueryRow(ctx, `SELECT `+contactColumns+` FROM contacts c WHERE c.id = $1`, id))
}

// UpsertContact saves a contact written by another system. With an external id, the
// account's contact of the same source and external id is updated (its public_id, created_at
// stay); two calls at once still make one contact, because the insert resolves conflicts on
// the (account_id, source, external_id) unique index. Without one, a new contact is added.
// Its phones are replaced by in.Phones in the same transaction; unreadable numbers are dropped.
// The transaction commits claim (nil without an Idempotency-Key).
func (s *Store) UpsertContact(ctx context.Context, accountID int64, in ContactInput, now time.Time, claim *IdempotencyClaim) (Contact, error) {
	phones := normalPhones(in.Phones)
	var out Contact
	err := s.inTxRetry(ctx, func(tx pgx.Tx) error {
		if err := commitIdempotencyClaim(ctx, tx, claim); err != nil {
			return err
		}
		var id int64
		var inserted bool
		err := tx.QueryRow(ctx, `INSERT INTO contacts (account_id, public_id, display_name, first_name, last_name,
				company, email, notes, source, external_id, external_url, source_created_at, source_updated_at,
				created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14)
			ON CONFLICT (account_id, source, external_id) WHERE external_id IS NOT NULL DO UPDATE SET `+contactUpdateSet+`
			RETURNING id, xmax = 0`,
			accountID, NewPublicID(PrefixContact), in.DisplayName, in.FirstName, in.LastName, in.Company, in.Email,
			in.Notes, in.Source, in.ExternalID, in.ExternalURL, in.SourceCreatedAt, in.SourceUpdatedAt, now).Scan(&id, &inserted)
		if err != nil {
			return err
		}
		if err := replacePhones(ctx, tx, accountID, id, !inserted, phones); err != nil {
			return err
		}
		out, err = getContactByID(ctx, tx, id)
		return err
	})
	return out, err
}

// contactUpdateSet is what an upsert of an existing contact changes: everything it was sent.
const contactUpdateSet = `display_name = EXCLUDED.display_name, first_name = EXCLUDED.first_name,
	last_name = EXCLUDED.last_name, company = EXCLUDED.company, email = EXCLUDED.email, notes = EXCLUDED.notes,
	external_url = EXCLUDED.external_url, source_created_at = EXCLUDED.source_created_at,
	source_updated_at = EXCLUDED.source_updated_at, updated_at = EXCLUDED.updated_at`

// ReplaceContact replaces a contact's details and phones with in; its source and external id
// stay as they were (in.Source and in.ExternalID are ignored).
func (s *Store) ReplaceContact(ctx context.Context, accountID int64, publicID string, in ContactInput, now time.Time) (Contact, error) {
	phones := normalPhones(in.Phones)
	var out Contact
	err := s.inTxRetry(ctx, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `UPDATE contacts SET display_name = $3, first_name = $4, last_name = $5, company = $6,
				email = $7, notes = $8, external_url = $9, source_created_at = $10, source_updated_at = $11, updated_at = $12
			WHERE account_id = $1 AND public_id = $2 RETURNING id`,
			accountID, publicID, in.DisplayName, in.FirstName, in.LastName, in.Company, in.Email, in.Notes,
			in.ExternalURL, in.SourceCreatedAt, in.SourceUpdatedAt, now).Scan(&id)
		if err != nil {
			return notFound(err)
		}
		if err := replacePhones(ctx, tx, accountID, id, true, phones); err != nil {
			return err
		}
		out, err = getContactByID(ctx, tx, id)
		return err
	})
	return out, err
}

// DeleteContact removes one of the account's contacts and its phones.
func (s *Store) DeleteContact(ctx context.Context, accountID int64, publicID string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM contacts WHERE account_id = $1 AND public_id = $2`, accountID, publicID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// replacePhones sets a contact's phones; existed says whether it may already have some.
func replacePhones(ctx context.Context, tx pgx.Tx, accountID, contactID int64, existed bool, phones []ContactPhone) error {
	b := &pgx.Batch{}
	cols := phoneColumns{}
	for i, p := range phones {
		cols.add(contactID, i, p)
	}
	var existing []int64
	if existed {
		existing = []int64{contactID}
	}
	cols.queueReplace(b, accountID, existing)
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// phoneColumns holds phone rows column by column, for one INSERT ... SELECT FROM unnest.
type phoneColumns struct {
	contactID []int64
	position  []int32
	e164      []string
	raw       []string
	label     []string
	primary   []bool
}

func (pc *phoneColumns) add(contactID int64, position int, p ContactPhone) {
	pc.contactID = append(pc.contactID, contactID)
	pc.position = append(pc.position, int32(position))
	pc.e164 = append(pc.e164, p.E164)
	pc.raw = append(pc.raw, p.RawNumber)
	pc.label = append(pc.label, p.Label)
	pc.primary = append(pc.primary, p.IsPrimary)
}

// queueReplace makes the phones of the contacts existing (which may have phones) and of the
// contacts in pc exactly the rows of pc. Rows that stay the same are left alone: a sync
// that repeats a contact's phones writes nothing, and the directory's count triggers
// (migration 00012) see only numbers that really come or go.
func (pc *phoneColumns) queueReplace(b *pgx.Batch, accountID int64, existing []int64) {
	const rows = `unnest($2::bigint[], $3::int[], $4::text[], $5::text[], $6::text[], $7::bool[])
		AS u(contact_id, position, e164, raw_number, label, is_primary)`
	args := []any{accountID, pc.contactID, pc.position, pc.e164, pc.raw, pc.label, pc.primary, existing}
	if len(existing) > 0 {
		b.Queue(`DELETE FROM contact_phones p WHERE p.account_id = $1 AND p.contact_id = ANY($8)
			AND (p.contact_id, p.position, p.e164, p.raw_number, p.label, p.is_primary) NOT IN (SELECT * FROM `+rows+`)`, args...)
	}
	if len(pc.contactID) > 0 {
		b.Queue(`INSERT INTO contact_phones (contact_id, account_id, position, e164, raw_number, label, is_primary)
			SELECT u.contact_id, $1, u.position, u.e164, u.raw_number, u.label, u.is_primary FROM `+rows+`
			WHERE (u.contact_id, u.position, u.e164, u.raw_number, u.label, u.is_primary) NOT IN (
				SELECT p.contact_id, p.position, p.e164, p.raw_number, p.label, p.is_primary
				FROM contact_phones p WHERE p.account_id = $1 AND p.contact_id = ANY($8))`, args...)
	}
}

// bulkRow is a contact of a bulk upsert ready to save.
type bulkRow struct {
	in       ContactInput
	publicID string
	phones   []ContactPhone
	// count is how many contacts of the request it stands for (repeats of its external id).
	count int
}

// BulkUpsertContacts saves many contacts in one transaction with a few batched statements:
// one INSERT ... ON CONFLICT for all contacts (matched on source and external id, as
// UpsertContact), one DELETE and one INSERT for all their phones. Rows are written in
// (source, external_id) order, so bulk upserts running at once over the same contacts lock
// them in the same order and wait for each other instead of deadlocking; a deadlock or
// serialization failure is retried anyway. When the same source and external id come
// more than once, the last one wins (each is counted as imported).
//
// If the batch as a whole cannot be saved for a reason tied to its data, each contact is
// saved on its own and those that still fail are counted as failed. Errors not tied to
// the data (lost connection, cancelled request) are returned. Every transaction that saves
// contacts commits claim (nil without an Idempotency-Key).
func (s *Store) BulkUpsertContacts(ctx context.Context, accountID int64, ins []ContactInput, now time.Time,
	claim *IdempotencyClaim) (BulkContactsResult, error) {
	if len(ins) == 0 {
		return BulkContactsResult{}, nil
	}
	rows := bulkRows(ins)
	save := func(rows []bulkRow) func(pgx.Tx) error {
		return func(tx pgx.Tx) error {
			if err := commitIdempotencyClaim(ctx, tx, claim); err != nil {
				return err
			}
			return bulkSave(ctx, tx, accountID, rows, now)
		}
	}
	err := s.inTxRetry(ctx, save(rows))
	if err == nil {
		return BulkContactsResult{Imported: len(ins)}, nil
	}
	if !isDataError(err) {
		return BulkContactsResult{}, err
	}
	// One at a time, to keep every contact that can be kept.
	var res BulkContactsResult
	for _, r := range rows {
		err := s.inTxRetry(ctx, save([]bulkRow{r}))
		switch {
		case err == nil:
			res.Imported += r.count
		case isDataError(err):
			res.Failed += r.count
		default:
			return BulkContactsResult{}, err
		}
	}
	return res, nil
}

// bulkRows drops all but the last of repeated (source, external id) pairs, parses phones,
// and sorts: contacts with an external id by (source, external id), then new ones.
func bulkRows(ins []ContactInput) []bulkRow {
	type key struct{ source, externalID string }
	last := make(map[key]int, len(ins))
	repeats := make(map[key]int, len(ins))
	for i, in := range ins {
		if in.ExternalID != nil {
			k := key{in.Source, *in.ExternalID}
			last[k] = i
			repeats[k]++
		}
	}
	rows := make([]bulkRow, 0, len(ins))
	for i, in := range ins {
		count := 1
		if in.ExternalID != nil {
			k := key{in.Source, *in.ExternalID}
			if last[k] != i {
				continue
			}
			count = repeats[k]
		}
		rows = append(rows, bulkRow{in: in, publicID: NewPublicID(PrefixContact), phones: normalPhones(in.Phones), count: count})
	}
	slices.SortStableFunc(rows, func(a, b bulkRow) int {
		if (a.in.ExternalID == nil) != (b.in.ExternalID == nil) {
			if a.in.ExternalID == nil {
				return 1
			}
			return -1
		}
		if a.in.ExternalID == nil {
			return 0
		}
		return cmp.Or(cmp.Compare(a.in.Source, b.in.Source), cmp.Compare(*a.in.ExternalID, *b.in.ExternalID))
	})
	return rows
}

func bulkSave(ctx context.Context, tx pgx.Tx, accountID int64, rows []bulkRow, now time.Time) error {
	n := len(rows)
	var (
		publicID, displayName, source                                  = make([]string, n), make([]string, n), make([]string, n)
		firstName, lastName, company, email, notes, externalID, extURL = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		srcCreated, srcUpdated                                         = make([]*time.Time, n), make([]*time.Time, n)
	)
	for i, r := range rows {
		in := r.in
		publicID[i], displayName[i], source[i] = r.publicID, in.DisplayName, in.Source
		firstName[i], lastName[i], company[i], email[i], notes[i] = in.FirstName, in.LastName, in.Company, in.Email, in.Notes
		externalID[i], extURL[i] = in.ExternalID, in.ExternalURL
		srcCreated[i], srcUpdated[i] = in.SourceCreatedAt, in.SourceUpdatedAt
	}
	res, err := tx.Query(ctx, `INSERT INTO contacts (account_id, public_id, display_name, first_name, last_name,
			company, email, notes, source, external_id, external_url, source_created_at, source_updated_at,
			created_at, updated_at)
		SELECT $1, u.public_id, u.display_name, u.first_name, u.last_name, u.company, u.email, u.notes, u.source,
			u.external_id, u.external_url, u.source_created_at, u.source_updated_at, $14, $14
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
				$10::text[], $11::text[], $12::timestamptz[], $13::timestamptz[])
			WITH ORDINALITY AS u(public_id, display_name, first_name, last_name, company, email, notes, source,
				external_id, external_url, source_created_at, source_updated_at, ord)
		ORDER BY u.ord
		ON CONFLICT (account_id, source, external_id) WHERE external_id IS NOT NULL DO UPDATE SET `+contactUpdateSet+`
		RETURNING id, public_id, source, external_id, xmax = 0`,
		accountID, publicID, displayName, firstName, lastName, company, email, notes, source, externalID, extURL,
		srcCreated, srcUpdated, now)
	if err != nil {
		return err
	}
	type key struct{ source, externalID string }
	byKey := make(map[key]int64, n)
	byPublicID := make(map[string]int64, n)
	var existing []int64
	for res.Next() {
		var id int64
		var pid, src string
		var ext *string
		var inserted bool
		if err := res.Scan(&id, &pid, &src, &ext, &inserted); err != nil {
			res.Close()
			return err
		}
		if ext != nil {
			byKey[key{src, *ext}] = id
		} else {
			byPublicID[pid] = id
		}
		if !inserted {
			existing = append(existing, id)
		}
	}
	res.Close()
	if err := res.Err(); err != nil {
		return err
	}

	var cols phoneColumns
	for _, r := range rows {
		var id int64
		if r.in.ExternalID != nil {
			id = byKey[key{r.in.Source, *r.in.ExternalID}]
		} else {
			id = byPublicID[r.publicID]
		}
		if id == 0 {
			return fmt.Errorf("bulk upsert: contact %s was not returned", r.publicID)
		}
		for i, p := range r.phones {
			cols.add(id, i, p)
		}
	}
	b := &pgx.Batch{}
	cols.queueReplace(b, accountID, existing)
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// maxTxAttempts bounds retries of a transaction that hit a deadlock or serialization failure.
const maxTxAttempts = 5

// inTxRetry runs fn in a transaction, running it again (after a short random pause) when
// PostgreSQL aborted it for a deadlock or a serialization failure.
func (s *Store) inTxRetry(ctx context.Context, fn func(pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.inTx(ctx, fn)
		if err == nil || !isRetryable(err) || attempt == maxTxAttempts {
			return err
		}
		pause := time.Duration(attempt)*5*time.Millisecond + rand.N(10*time.Millisecond)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
	}
}

// isRetryable: serialization_failure or deadlock_detected.
func isRetryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// isDataError: PostgreSQL refused the data itself (data exception, integrity violation),
// so saving other data may still work.
func isDataError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23"))
}
