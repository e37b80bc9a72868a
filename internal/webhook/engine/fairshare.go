package engine

import (
	"sync"

	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
)

// Fair sharing between accounts. A claim (store.ClaimFairly) gives every account with events
// waiting an equal share of the events claimed, oldest first within each account; the
// rules here bound what one account may hold of this dispatcher at once, so that an account
// whose receiver is slow or down keeps only its own events waiting and the others' claims
// go on. Past its share an account's events wait in the outbox (durable, in order) and are
// claimed as its own deliveries finish: it gets the pace its receivers take and no more of
// anyone else's time.

// AccountLoad is what one account holds of this dispatcher.
type AccountLoad struct {
	// Held: events claimed and not yet marked dispatched or released.
	Held int
	// HandOffs: deliveries handed on and not yet made (resources being created, history rows
	// being written).
	HandOffs int
	// Hanging: first attempts admitted to the account's endpoints that have made no progress
	// for FirstAttempts.Stall (hanging or down). The events behind them do not count against
	// the account's share: their attempts end with the timeout and the rest of their
	// endpoint's deliveries go to the controller, so its other endpoints keep theirs.
	Hanging int
}

// ShareLimits bound one account's load.
type ShareLimits struct {
	// MaxHeld bounds an account's held events. It is the engine's bound on one endpoint's
	// waiting first attempts (FirstAttempts.MaxWaiting): an endpoint never has more first
	// attempts than its account has events, so a slow receiver's surplus waits in the outbox
	// instead of becoming resources.
	MaxHeld int
	// MaxHandOffs bounds an account's deliveries handed on: an account whose every delivery
	// becomes a resource (its endpoints are down) holds at most this share of the
	// dispatcher's hand-offs (Dispatcher.MaxQueued).
	MaxHandOffs int
}

// ShareRule holds back an account's claims when Holds says so. Name is the rule in metrics
// and logs.
type ShareRule struct {
	Name  string
	Holds func(AccountLoad, ShareLimits) bool
}

// ShareChain is a list of rules applied in order; the first that holds stops the account's
// claims for now.
type ShareChain []ShareRule

// RuleShareOpen names the decision when no rule held the account back.
const RuleShareOpen = "ShareOpen"

// The share rules, in the order AccountShare applies them.
var (
	// AccountHandOffsFull: the account's deliveries handed on fill its share of the
	// dispatcher's hand-offs.
	AccountHandOffsFull = ShareRule{Name: "AccountHandOffsFull",
		Holds: func(a AccountLoad, l ShareLimits) bool { return a.HandOffs >= l.MaxHandOffs }}
	// AccountHoldsItsShare: the account holds MaxHeld events already, not counting those
	// waiting behind a hanging endpoint.
	AccountHoldsItsShare = ShareRule{Name: "AccountHoldsItsShare",
		Holds: func(a AccountLoad, l ShareLimits) bool { return a.active() >= l.MaxHeld }}
)

// AccountShare decides whether an account takes part in the next claim.
var AccountShare = ShareChain{AccountHandOffsFull, AccountHoldsItsShare}

// Allowance is how many more events the account may be given by the next claim (0: none),
// and the rule that decided.
func (c ShareChain) Allowance(a AccountLoad, l ShareLimits) (int, string) {
	for _, r := range c {
		if r.Holds(a, l) {
			return 0, r.Name
		}
	}
	return l.MaxHeld - a.active(), RuleShareOpen
}

// active is the held events that count against the account's share.
func (a AccountLoad) active() int { return max(0, a.Held-a.Hanging) }

// accountLoads counts what each account holds of the dispatcher.
type accountLoads struct {
	mu    sync.Mutex
	loads map[int64]*AccountLoad
	// held is the account of each held event; namespaces the namespace of each account
	// with a load (its endpoints').
	held       map[uuid.UUID]int64
	namespaces map[int64]string
	// heldBack are the accounts that may have events waiting past their allowance: every
	// account the last allowances gave less than a full share, less those the claim then gave
	// less than their allowance (they had no more waiting), plus those it filled. room is
	// signalled when one of them lets go of an event, so that its waiting events are claimed
	// then and not at the next poll (nothing else wakes the claim loop once every event is
	// committed). An account noted before the claim signals room even when it lets go of an
	// event while the claim runs, after its allowance was taken.
	heldBack map[int64]bool
	room     chan struct{}
}

// roomChanged is signalled when an account held back by its share lets go of an event.
func (a *accountLoads) roomChanged() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.room == nil {
		a.room = make(chan struct{}, 1)
	}
	return a.room
}

// hold counts evs held by their accounts until letGo.
func (a *accountLoads) hold(evs []store.PendingEvent) {
	a.mu.Lock()
	if a.held == nil {
		a.held = map[uuid.UUID]int64{}
		a.namespaces = map[int64]string{}
	}
	for _, ev := range evs {
		a.held[ev.OutboxID] = ev.AccountID
		a.namespaces[ev.AccountID] = tenancy.Namespace(ev.AccountPublicID)
	}
	a.mu.Unlock()
	for _, ev := range evs {
		a.add(ev.AccountID, 1, 0)
	}
}

// letGo ends the hold on the events ids (marked dispatched or released); ids not held are
// ignored.
func (a *accountLoads) letGo(ids ...uuid.UUID) {
	a.mu.Lock()
	var accounts []int64
	for _, id := range ids {
		if account, ok := a.held[id]; ok {
			delete(a.held, id)
			accounts = append(accounts, account)
		}
	}
	a.mu.Unlock()
	for _, account := range accounts {
		a.add(account, -1, 0)
	}
}

// add changes account's load by held events and handOffs deliveries.
func (a *accountLoads) add(account int64, held, handOffs int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.loads == nil {
		a.loads = map[int64]*AccountLoad{}
	}
	l := a.loads[account]
	if l == nil {
		l = &AccountLoad{}
		a.loads[account] = l
	}
	l.Held += held
	l.HandOffs += handOffs
	if (held < 0 || handOffs < 0) && a.heldBack[account] {
		delete(a.heldBack, account)
		if a.room != nil {
			select {
			case a.room <- struct{}{}:
			default:
			}
		}
	}
	if l.Held <= 0 && l.HandOffs <= 0 {
		delete(a.loads, account)
		delete(a.namespaces, account)
	}
}

// allowances is each loaded account's allowance under chain and limits, with hanging the
// first attempts to hanging endpoints by namespace (FirstAttempts.Hanging); accounts with no
// load are not named (they may take a full share). Each account named with less than a full
// share is noted held back.
func (a *accountLoads) allowances(chain ShareChain, limits ShareLimits, hanging map[string]int) map[int64]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[int64]int, len(a.loads))
	clear(a.heldBack)
	for id := range a.loads {
		n := a.allowanceLocked(id, chain, limits, hanging)
		out[id] = n
		if n < limits.MaxHeld {
			a.noteHeldBackLocked(id)
		}
	}
	return out
}

// noteClaimed settles the accounts held back after a claim with allowance took evs; called
// after hold, before any part of evs can finish. An account the claim gave less than its
// allowance had no more events waiting (a claim cut short by its limit or the accounts'
// equal shares reports more, and the loop claims again at once); one not named in
// allowance that the claim filled to its share may have more.
func (a *accountLoads) noteClaimed(evs []store.PendingEvent, allowance map[int64]int, chain ShareChain, limits ShareLimits, hanging map[string]int) {
	taken := make(map[int64]int, len(allowance))
	for _, ev := range evs {
		taken[ev.AccountID]++
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, n := range allowance {
		if taken[id] < n {
			delete(a.heldBack, id)
		}
	}
	for id := range taken {
		if _, named := allowance[id]; !named && a.loads[id] != nil && a.allowanceLocked(id, chain, limits, hanging) == 0 {
			a.noteHeldBackLocked(id)
		}
	}
}

// allowanceLocked is account's allowance now (it has a load).
func (a *accountLoads) allowanceLocked(account int64, chain ShareChain, limits ShareLimits, hanging map[string]int) int {
	load := *a.loads[account]
	load.Hanging = hanging[a.namespaces[account]]
	n, _ := chain.Allowance(load, limits)
	return n
}

func (a *accountLoads) noteHeldBackLocked(account int64) {
	if a.heldBack == nil {
		a.heldBack = map[int64]bool{}
	}
	a.heldBack[account] = true
}

// load is account's load now.
func (a *accountLoads) load(account int64) AccountLoad {
	a.mu.Lock()
	defer a.mu.Unlock()
	if l := a.loads[account]; l != nil {
		return *l
	}
	return AccountLoad{}
}
