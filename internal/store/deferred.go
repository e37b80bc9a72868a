package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Deferred deliveries: deliveries that need a WebhookDelivery resource while the live
// resources are at a cap wait in webhook_deferred_deliveries until the dispatcher's promoter
// makes their resource (or records them cancelled), then leave the table.

// DeferredDelivery is one delivery waiting for room to become a resource.
type DeferredDelivery struct {
	// DeliveryName is the resource's name (send.DeliveryName), the row's key.
	DeliveryName string
	// AccountID is the account's internal id; AccountPublicID its public one (filled by
	// ClaimDeferred).
	AccountID        int64
	AccountPublicID  string
	EndpointPublicID string
	// EventID is the event's id; OutboxID the outbox row's (they differ for a resend).
	EventID   uuid.UUID
	OutboxID  uuid.UUID
	EventType string
	// ResendOf names the delivery a resend repeats; Salt is the delivery name's salt
	// (store.PendingEvent.DeliverySalt).
	ResendOf       string
	Salt           string
	EventCreatedAt time.Time
	DeferredAt     time.Time
}

// DeferDelivery records d as waiting for room. Deferring a delivery already waiting (a
// repeated claim of its event) keeps the first row.
func (s *Store) DeferDelivery(ctx context.Context, d DeferredDelivery) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO webhook_deferred_deliveries (delivery_name, account_id, endpoint_public_id,
			event_id, outbox_id, event_type, resend_of, salt, event_created_at, deferred_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (delivery_name) DO NOTHING`,
		d.DeliveryName, d.AccountID, d.EndpointPublicID, d.EventID, d.OutboxID, d.EventType, d.ResendOf, d.Salt,
		d.EventCreatedAt, d.DeferredAt)
	if err != nil {
		return fmt.Errorf("defer delivery %s: %w", d.DeliveryName, err)
	}
	return nil
}

// DeferredEndpoint names an endpoint with deliveries deferred.
type DeferredEndpoint struct {
	AccountPublicID  string
	EndpointPublicID string
}

// DeferredCursor is where a scan of the endpoints with deferred deliveries resumes: past this
// endpoint (the zero value: from the first).
type DeferredCursor struct {
	AccountID        int64
	EndpointPublicID string
}

// DeferredClaim is what one claim of deferred deliveries may take.
type DeferredClaim struct {
	// Limit bounds the deliveries claimed in all.
	Limit int
	// PerEndpoint bounds those of one endpoint not named in Room (0: Limit); Room bounds
	// those of the endpoints it names (0 takes none).
	PerEndpoint int
	Room        map[DeferredEndpoint]int
	// After resumes the scan of endpoints; Endpoints bounds the endpoints one claim looks at
	// (default DefaultClaimAccounts).
	After     DeferredCursor
	Endpoints int
}

// ClaimedDeferred is what a claim of deferred deliveries took, and where the next one
// should look.
type ClaimedDeferred struct {
	Deliveries []DeferredDelivery
	// Next is DeferredClaim.After for the next claim: past the last endpoint this claim looked
	// at when it could not look at them all, else the zero cursor.
	Next DeferredCursor
}

// ClaimDeferred claims deferred deliveries that no live claim holds, until now+lease, and
// commits before it returns: the caller creates their resources with no transaction open,
// then calls DeleteDeferred (or ReleaseDeferred). Rows another replica is claiming at the
// same moment are skipped (FOR UPDATE SKIP LOCKED).
//
// It looks at up to c.Endpoints endpoints with deliveries waiting (in key order from
// c.After, so successive claims go round them all), takes each one's oldest first within its
// room, and when their rooms exceed c.Limit takes every endpoint's first before any
// endpoint's second.
func (s *Store) ClaimDeferred(ctx context.Context, c DeferredClaim, now time.Time, lease time.Duration) (ClaimedDeferred, error) {
	if c.Endpoints <= 0 {
		c.Endpoints = DefaultClaimAccounts
	}
	if c.PerEndpoint <= 0 || c.PerEndpoint > c.Limit {
		c.PerEndpoint = c.Limit
	}
	var (
		roomAccounts, roomEndpoints []string
		roomN                       []int32
	)
	for ep, n := range c.Room {
		roomAccounts = append(roomAccounts, ep.AccountPublicID)
		roomEndpoints = append(roomEndpoints, ep.EndpointPublicID)
		roomN = append(roomN, int32(max(0, min(n, c.Limit))))
	}
	rows, err := s.pool.Query(ctx, `WITH RECURSIVE found(account_id, endpoint, n) AS (
			(SELECT account_id, endpoint_public_id, 1 FROM webhook_deferred_deliveries
				WHERE (account_id, endpoint_public_id) > ($1::bigint, $2::text) ORDER BY account_id, endpoint_public_id LIMIT 1)
			UNION ALL
			SELECT x.account_id, x.endpoint_public_id, f.n + 1 FROM found f, LATERAL (
				SELECT d.account_id, d.endpoint_public_id FROM webhook_deferred_deliveries d
				WHERE (d.account_id, d.endpoint_public_id) > (f.account_id, f.endpoint)
				ORDER BY d.account_id, d.endpoint_public_id LIMIT 1) x
			WHERE f.n < $3),
		scan AS (SELECT count(*) AS n, (array_agg(account_id ORDER BY n DESC))[1] AS last_account,
			(array_agg(endpoint ORDER BY n DESC))[1] AS last_endpoint FROM found),
		allow AS (
			SELECT f.account_id, f.endpoint, COALESCE(r.n, $4) AS n FROM found f
			JOIN accounts a ON a.id = f.account_id
			LEFT JOIN unnest($5::text[], $6::text[], $7::int[]) AS r(account, endpoint, n)
				ON r.account = a.public_id AND r.endpoint = f.endpoint),
		picked AS (
			SELECT x.delivery_name, x.account_id, x.endpoint_public_id, x.event_created_at FROM allow, LATERAL (
				SELECT d.delivery_name, d.account_id, d.endpoint_public_id, d.event_created_at FROM webhook_deferred_deliveries d
				WHERE d.account_id = allow.account_id AND d.endpoint_public_id = allow.endpoint
					AND (d.claimed_until IS NULL OR d.claimed_until <= $8)
				ORDER BY d.event_created_at, d.delivery_name LIMIT allow.n FOR UPDATE SKIP LOCKED) x
			WHERE allow.n > 0),
		claim AS (
			SELECT delivery_name FROM (
				SELECT delivery_name, event_created_at, row_number() OVER (PARTITION BY account_id, endpoint_public_id
					ORDER BY event_created_at, delivery_name) AS rn FROM picked) r
			ORDER BY rn, event_created_at, delivery_name LIMIT $9),
		claimed AS (
			UPDATE webhook_deferred_deliveries d SET claimed_until = $10
			FROM claim, accounts a WHERE d.delivery_name = claim.delivery_name AND a.id = d.account_id
			RETURNING d.delivery_name, d.account_id, a.public_id, d.endpoint_public_id, d.event_id, d.outbox_id, d.event_type,
				d.resend_of, d.salt, d.event_created_at, d.deferred_at)
		-- The scan's end comes back even when nothing was claimed.
		SELECT scan.n, scan.last_account, scan.last_endpoint, c.delivery_name, c.account_id, c.public_id, c.endpoint_public_id,
			c.event_id, c.outbox_id, c.event_type, c.resend_of, c.salt, c.event_created_at, c.deferred_at
		FROM scan LEFT JOIN claimed c ON true`,
		c.After.AccountID, c.After.EndpointPublicID, c.Endpoints, c.PerEndpoint, roomAccounts, roomEndpoints, roomN,
		now, c.Limit, now.Add(lease))
	if err != nil {
		return ClaimedDeferred{}, fmt.Errorf("claim deferred deliveries: %w", err)
	}
	defer rows.Close()
	var (
		out          ClaimedDeferred
		looked       int64
		lastAccount  *int64
		lastEndpoint *string
	)
	for rows.Next() {
		var (
			name, accountPublicID, endpoint, typ, resendOf, salt *string
			accountID                                            *int64
			eventID, outboxID                                    *uuid.UUID
			createdAt, deferredAt                                *time.Time
		)
		if err := rows.Scan(&looked, &lastAccount, &lastEndpoint, &name, &accountID, &accountPublicID, &endpoint, &eventID,
			&outboxID, &typ, &resendOf, &salt, &createdAt, &deferredAt); err != nil {
			return ClaimedDeferred{}, fmt.Errorf("claim deferred deliveries: %w", err)
		}
		if name == nil {
			continue
		}
		out.Deliveries = append(out.Deliveries, DeferredDelivery{DeliveryName: *name, AccountID: *accountID,
			AccountPublicID: *accountPublicID, EndpointPublicID: *endpoint, EventID: *eventID, OutboxID: *outboxID,
			EventType: *typ, ResendOf: *resendOf, Salt: *salt, EventCreatedAt: *createdAt, DeferredAt: *deferredAt})
	}
	if err := rows.Err(); err != nil {
		return ClaimedDeferred{}, fmt.Errorf("claim deferred deliveries: %w", err)
	}
	// RETURNING keeps no order: endpoints in turn, each oldest first.
	out.Deliveries = roundRobin(out.Deliveries)
	if looked >= int64(c.Endpoints) && lastAccount != nil && lastEndpoint != nil {
		out.Next = DeferredCursor{AccountID: *lastAccount, EndpointPublicID: *lastEndpoint}
	}
	return out, nil
}

// roundRobin orders ds as the claim took them: every endpoint's oldest, then every
// endpoint's second, and so on (by age within each round).
func roundRobin(ds []DeferredDelivery) []DeferredDelivery {
	byAge := func(a, b DeferredDelivery) int {
		if c := a.EventCreatedAt.Compare(b.EventCreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.DeliveryName, b.DeliveryName)
	}
	slices.SortFunc(ds, byAge)
	rank := make(map[DeferredDelivery]int, len(ds))
	seen := map[DeferredEndpoint]int{}
	for _, d := range ds {
		ep := DeferredEndpoint{AccountPublicID: d.AccountPublicID, EndpointPublicID: d.EndpointPublicID}
		rank[d] = seen[ep]
		seen[ep]++
	}
	slices.SortStableFunc(ds, func(a, b DeferredDelivery) int { return rank[a] - rank[b] })
	return ds
}

// DeleteDeferred removes deferred deliveries that were promoted (their resource exists) or
// recorded cancelled.
func (s *Store) DeleteDeferred(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM webhook_deferred_deliveries WHERE delivery_name = ANY($1)`, names); err != nil {
		return fmt.Errorf("delete %d deferred deliveries: %w", len(names), err)
	}
	return nil
}

// ReleaseDeferred ends the claim on deferred deliveries that could not be promoted now
// (no room after all, or kube-apiserver refused), so the next claim may take them.
func (s *Store) ReleaseDeferred(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `UPDATE webhook_deferred_deliveries SET claimed_until = NULL WHERE delivery_name = ANY($1)`, names); err != nil {
		return fmt.Errorf("release %d deferred deliveries: %w", len(names), err)
	}
	return nil
}

// DeferredDeliveries counts the deliveries waiting for room, for the metrics endpoint.
func (s *Store) DeferredDeliveries(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deferred_deliveries`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count deferred deliveries: %w", err)
	}
	return n, nil
}
