// Package numbers adds, changes, ports and releases an account's phone numbers and sets their
// routing, as the telephony platform reports it. The platform ingestion API and the
// `switchboard admin` number commands both call it; they only translate HTTP or flags.
package numbers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/phone"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// NotFoundError means no such account or number (404).
type NotFoundError struct{ Kind, ID string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("no %s %s", e.Kind, e.ID) }

// Store is what the service needs of the database.
type Store interface {
	store.Accounts
	store.Numbers
	store.Transactions
}

// Service changes numbers.
type Service struct {
	Store Store
	Clock clock.PassiveClock
}

// New builds the service.
func New(st Store, clk clock.PassiveClock) *Service {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Service{Store: st, Clock: clk}
}

// Provision is a number to give an account.
type Provision struct {
	Account string `json:"account"` // the account's public_id
	Number  string `json:"number"`  // any form libphonenumber reads; national forms are UK numbers
	// PortingIn adds the number while it is still being ported in from another provider:
	// status porting, ownership ported, until the port completes.
	PortingIn bool `json:"porting_in"`
	Settings
}

// Number reads a number by its E.164 (in any form phone.ToE164 reads): the live one, or the
// one released last.
func (s *Service) Number(ctx context.Context, number string) (store.PlatformNumber, error) {
	var out store.PlatformNumber
	err := s.inNumberTx(ctx, number, func(tx *store.Tx, n store.PlatformNumber) error {
		out = n
		return nil
	})
	return out, err
}

// Provision gives the number to the account. When the account already has it live, the
// request's settings are applied to it, so a repeated request changes nothing and answers
// the same number. A number live on another account is a conflict.
func (s *Service) Provision(ctx context.Context, in Provision) (store.PlatformNumber, error) {
	p := Problems{}
	e164, ok := phone.ToE164(in.Number)
	if !ok {
		p.add("number", "must be a phone number")
	}
	if in.Account == "" {
		p.add("account", "is required (the account's public_id)")
	}
	settings, err := in.Apply(Defaults)
	var invalid *InvalidError
	if errors.As(err, &invalid) {
		for f, msgs := range invalid.Problems {
			p[f] = append(p[f], msgs...)
		}
	}
	if err := p.err(); err != nil {
		return store.PlatformNumber{}, err
	}
	acct, err := s.Store.GetAccountByPublicID(ctx, in.Account)
	if errors.Is(err, store.ErrNotFound) {
		return store.PlatformNumber{}, &NotFoundError{Kind: "account", ID: in.Account}
	}
	if err != nil {
		return store.PlatformNumber{}, err
	}
	var out store.PlatformNumber
	provision := func() error {
		return s.Store.InTx(ctx, func(tx *store.Tx) error {
			cur, err := tx.PlatformNumberForUpdate(ctx, e164)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if err == nil && cur.Status != Released {
				if cur.AccountID != acct.ID {
					return conflict("%s is live on another account; release it first", e164)
				}
				if in.PortingIn && cur.Ownership != Ported {
					return conflict("%s is already the account's own %s number, not one porting in", e164, cur.Ownership)
				}
				out, err = s.applySettings(ctx, tx, cur, in.Settings)
				return err
			}
			status, ownership := Assigned, Rented
			if in.PortingIn {
				status, ownership = Porting, Ported
			}
			id, err := tx.InsertPlatformNumber(ctx, acct.ID, e164, status, ownership, settings)
			if err != nil {
				return err
			}
			out, err = tx.PlatformNumberByID(ctx, id)
			return err
		})
	}
	err = provision()
	if errors.Is(err, store.ErrNumberLive) {
		// Another request added it meanwhile; this one now finds it.
		err = provision()
	}
	return out, err
}

// Update changes a live number's settings; nil settings stay as they are.
func (s *Service) Update(ctx context.Context, number string, in Settings) (store.PlatformNumber, error) {
	var out store.PlatformNumber
	err := s.inNumberTx(ctx, number, func(tx *store.Tx, n store.PlatformNumber) error {
		if n.Status == Released {
			return conflict("%s was released", n.E164)
		}
		var err error
		out, err = s.applySettings(ctx, tx, n, in)
		return err
	})
	return out, err
}

func (s *Service) applySettings(ctx context.Context, tx *store.Tx, n store.PlatformNumber, in Settings) (store.PlatformNumber, error) {
	next, err := in.Apply(n.NumberSettings)
	if err != nil {
		return n, err
	}
	if reflect.DeepEqual(next, n.NumberSettings) {
		return n, nil
	}
	if err := tx.UpdateNumberSettings(ctx, n, next); err != nil {
		return n, err
	}
	return tx.PlatformNumberByID(ctx, n.ID)
}

// Port applies a porting step: in completed or cancelled, out started (with release_at),
// completed or cancelled.
func (s *Service) Port(ctx context.Context, number, direction, step string, at *time.Time) (store.PlatformNumber, error) {
	p := Problems{}
	if direction != PortIn && direction != PortOut {
		p.add("direction", "must be in or out")
	}
	steps := map[string][]string{PortIn: {StepCompleted, StepCancelled}, PortOut: {StepStarted, StepCompleted, StepCancelled}}[direction]
	if direction != "" && steps != nil && !slices.Contains(steps, step) {
		p.add("step", "must be one of %v for a port %s", steps, direction)
	}
	if direction == PortOut && step == StepStarted && at == nil {
		p.add("release_at", "is required when a port out starts (the port date)")
	}
	if err := p.err(); err != nil {
		return store.PlatformNumber{}, err
	}
	return s.change(ctx, number, Change{Kind: "port", Direction: direction, Step: step, At: at})
}

// Release releases a number now, or schedules it (status releasing) when at is in the future.
func (s *Service) Release(ctx context.Context, number string, at *time.Time) (store.PlatformNumber, error) {
	return s.change(ctx, number, Change{Kind: "release", At: at})
}

func (s *Service) change(ctx context.Context, number string, c Change) (store.PlatformNumber, error) {
	var out store.PlatformNumber
	err := s.inNumberTx(ctx, number, func(tx *store.Tx, n store.PlatformNumber) error {
		cur := State{Status: n.Status, Ownership: n.Ownership, ReleaseAt: n.ReleaseAt}
		next, err := Next(cur, c, s.Clock.Now())
		if err != nil {
			return err
		}
		out = n
		if sameState(cur, next) {
			return nil
		}
		if err := tx.SetNumberState(ctx, n.ID, next.Status, next.Ownership, next.ReleaseAt); err != nil {
			return err
		}
		out, err = tx.PlatformNumberByID(ctx, n.ID)
		return err
	})
	return out, err
}

func sameState(a, b State) bool {
	if a.Status != b.Status || a.Ownership != b.Ownership || (a.ReleaseAt == nil) != (b.ReleaseAt == nil) {
		return false
	}
	return a.ReleaseAt == nil || a.ReleaseAt.Equal(*b.ReleaseAt)
}

// SetRouting replaces a live number's routing and returns it as GET /numbers/{number}/routing shows it.
func (s *Service) SetRouting(ctx context.Context, number string, in Routing) (NumberRouting, error) {
	routes, err := in.Routes()
	if err != nil {
		return NumberRouting{}, err
	}
	var n store.PlatformNumber
	err = s.inNumberTx(ctx, number, func(tx *store.Tx, cur store.PlatformNumber) error {
		if cur.Status == Released {
			return conflict("%s was released", cur.E164)
		}
		n = cur
		return tx.ReplaceNumberRoutes(ctx, cur.ID, routes)
	})
	if err != nil {
		return NumberRouting{}, err
	}
	r, err := s.Store.GetRouting(ctx, n.AccountID, n.PublicID, s.Clock.Now())
	if err != nil {
		return NumberRouting{}, err
	}
	return ShowRouting(r), nil
}

// inNumberTx runs fn in a transaction with the number locked; a number that cannot be read or
// was never added is a NotFoundError.
func (s *Service) inNumberTx(ctx context.Context, number string, fn func(*store.Tx, store.PlatformNumber) error) error {
	e164, ok := phone.ToE164(number)
	if !ok {
		return &NotFoundError{Kind: "number", ID: number}
	}
	return s.Store.InTx(ctx, func(tx *store.Tx) error {
		n, err := tx.PlatformNumberForUpdate(ctx, e164)
		if errors.Is(err, store.ErrNotFound) {
			return &NotFoundError{Kind: "number", ID: e164}
		}
		if err != nil {
			return err
		}
		return fn(tx, n)
	})
}
