package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Ledger entry types.
const (
	LedgerCharge     = "charge"
	LedgerTopup      = "topup"
	LedgerRefund     = "refund"
	LedgerAdjustment = "adjustment"
)

// ErrInsufficientBalance is returned when a change would take the balance below zero.
var ErrInsufficientBalance = fmt.Errorf("insufficient balance")

// ApplyLedgerEntry changes the balance by amountPence (negative for a charge) and records it,
// inside tx. The balance column and the ledger change together, so the balance always equals
// the sum of the ledger.
func applyLedgerEntry(ctx context.Context, tx pgx.Tx, accountID int64, kind string, amountPence int64, note, reference string, at time.Time) (int64, error) {
	var after int64
	err := tx.QueryRow(ctx, `UPDATE accounts SET balance_pence = balance_pence + $2
		WHERE id = $1 AND balance_pence + $2 >= 0 RETURNING balance_pence`, accountID, amountPence).Scan(&after)
	if err == pgx.ErrNoRows {
		return 0, ErrInsufficientBalance
	}
	if err != nil {
		return 0, err
	}
	var ref *string
	if reference != "" {
		ref = &reference
	}
	_, err = tx.Exec(ctx, `INSERT INTO ledger_entries (account_id, type, amount_pence, balance_after_pence, note, reference, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, accountID, kind, amountPence, after, note, ref, at)
	return after, err
}

// TopUp adds prepaid credit and issues a receipt.
func (s *Store) TopUp(ctx context.Context, accountID, amountPence int64, at time.Time) (int64, error) {
	if amountPence <= 0 {
		return 0, fmt.Errorf("a top-up must be a positive number of pence")
	}
	var after int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		after, err = applyLedgerEntry(ctx, tx, accountID, LedgerTopup, amountPence, "Balance top-up", "", at)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO receipts (account_id, number, kind, description, amount_pence, paid_at)
			VALUES ($1, $2, 'topup', 'Prepaid balance top-up', $3, $4)`,
			accountID, "R-"+NewPublicID("")[1:], amountPence, at)
		return err
	})
	return after, err
}
