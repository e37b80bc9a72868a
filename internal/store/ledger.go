package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// LedgerEntry is one change to the prepaid balance.
type LedgerEntry struct {
	ID                int64
	Type              string
	AmountPence       int64
	BalanceAfterPence int64
	Note              string
	CreatedAt         time.Time
}

// ListLedgerEntries returns one page of the account's balance changes, newest first, and the total.
func (s *Store) ListLedgerEntries(ctx context.Context, accountID int64, limit, offset int) ([]LedgerEntry, int, error) {
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM ledger_entries WHERE account_id = $1`, accountID).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, type, amount_pence, balance_after_pence, note, created_at
		FROM ledger_entries WHERE account_id = $1
		ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, accountID, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (LedgerEntry, error) {
		var e LedgerEntry
		return e, r.Scan(&e.ID, &e.Type, &e.AmountPence, &e.BalanceAfterPence, &e.Note, &e.CreatedAt)
	})
	return list, total, err
}

// Receipt is a payment.
type Receipt struct {
	ID          int64
	Number      string
	Kind        string
	Description string
	AmountPence int64
	PaidAt      time.Time
}

// ReceiptsListed is how many receipts GET /billing/receipts returns (spec: latest 48).
const ReceiptsListed = 48

// ListReceipts returns the account's latest limit receipts, newest first.
func (s *Store) ListReceipts(ctx context.Context, accountID int64, limit int) ([]Receipt, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, number, kind, description, amount_pence, paid_at
		FROM receipts WHERE account_id = $1 ORDER BY paid_at DESC, id DESC LIMIT $2`, accountID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Receipt, error) {
		var e Receipt
		return e, r.Scan(&e.ID, &e.Number, &e.Kind, &e.Description, &e.AmountPence, &e.PaidAt)
	})
}
