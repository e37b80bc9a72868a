package engine

import (
	"testing"

	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
)

func TestAccountShare(t *testing.T) {
	limits := ShareLimits{MaxHeld: 256, MaxHandOffs: 256}
	for _, tc := range []struct {
		name      string
		load      AccountLoad
		wantAllow int
		wantRule  string
	}{
		{"nothing held: a full share", AccountLoad{}, 256, RuleShareOpen},
		{"some held: the rest", AccountLoad{Held: 200, HandOffs: 10}, 56, RuleShareOpen},
		{"its share held", AccountLoad{Held: 256}, 0, AccountHoldsItsShare.Name},
		{"more than its share (a lowered limit)", AccountLoad{Held: 300}, 0, AccountHoldsItsShare.Name},
		{"its hand-offs full, few events held (fanned out to five endpoints)", AccountLoad{Held: 52, HandOffs: 256}, 0, AccountHandOffsFull.Name},
		{"one hand-off short of full", AccountLoad{Held: 52, HandOffs: 255}, 204, RuleShareOpen},
		{"its share held, part of it behind a hanging endpoint", AccountLoad{Held: 256, Hanging: 8}, 8, RuleShareOpen},
		{"all of it behind a hanging endpoint", AccountLoad{Held: 256, Hanging: 300}, 256, RuleShareOpen},
		{"a hanging endpoint does not free hand-offs", AccountLoad{Held: 256, Hanging: 256, HandOffs: 256}, 0, AccountHandOffsFull.Name},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allow, rule := AccountShare.Allowance(tc.load, limits)
			if allow != tc.wantAllow || rule != tc.wantRule {
				t.Errorf("Allowance = %d (%s), want %d (%s)", allow, rule, tc.wantAllow, tc.wantRule)
			}
		})
	}
}

// Holding and letting go of events and hand-offs moves each account's allowance; an account
// with nothing held is not named (it takes a full share).
func TestAccountLoadsFollowHoldsAndHandOffs(t *testing.T) {
	limits := ShareLimits{MaxHeld: 3, MaxHandOffs: 2}
	var a accountLoads
	evs := []store.PendingEvent{{OutboxID: uuid.New(), AccountID: 1, AccountPublicID: "acct-one"},
		{OutboxID: uuid.New(), AccountID: 1, AccountPublicID: "acct-one"},
		{OutboxID: uuid.New(), AccountID: 1, AccountPublicID: "acct-one"}, {OutboxID: uuid.New(), AccountID: 2, AccountPublicID: "acct-two"}}
	a.hold(evs)
	got := a.allowances(AccountShare, limits, nil)
	if got[1] != 0 || got[2] != 2 || len(got) != 2 {
		t.Fatalf("allowances after holding = %v, want account 1 held back and account 2 allowed 2", got)
	}
	a.letGo(evs[0].OutboxID, evs[0].OutboxID, uuid.New()) // twice, and one never held: no effect
	if got := a.allowances(AccountShare, limits, nil); got[1] != 1 {
		t.Fatalf("account 1 after one let go = %d, want 1", got[1])
	}
	a.add(2, 0, 2)
	if got := a.allowances(AccountShare, limits, nil); got[2] != 0 {
		t.Fatalf("account 2 with its hand-offs full = %d, want 0", got[2])
	}
	// Account 1's held events wait behind a hanging endpoint of its namespace: they do not count.
	if got := a.allowances(AccountShare, limits, map[string]int{tenancy.Namespace("acct-one"): 2}); got[1] != 3 {
		t.Fatalf("account 1 with its events behind a hanging endpoint = %d, want 3", got[1])
	}
	a.add(2, 0, -2)
	a.letGo(evs[1].OutboxID, evs[2].OutboxID, evs[3].OutboxID)
	if got := a.allowances(AccountShare, limits, nil); len(got) != 0 {
		t.Fatalf("allowances with nothing held = %v, want none named", got)
	}
	if l := a.load(1); l != (AccountLoad{}) {
		t.Fatalf("load of account 1 = %+v, want zero", l)
	}
}

// An account held back by its share wakes the claim loop when it lets go of an event; one
// the claim gave less than its allowance (it had no more waiting) does not.
func TestAccountHeldBackSignalsRoomOnce(t *testing.T) {
	limits := ShareLimits{MaxHeld: 2, MaxHandOffs: 10}
	var a accountLoads
	room := a.roomChanged()
	full, open := pendingOf(1, 2), pendingOf(2, 1)
	a.hold(append(full, open...))
	allow := a.allowances(AccountShare, limits, nil)
	if allow[1] != 0 || allow[2] != 1 {
		t.Fatalf("allowances = %v, want account 1 held back and account 2 one more", allow)
	}
	a.noteClaimed(nil, allow, AccountShare, limits, nil)
	a.letGo(open[0].OutboxID)
	expectNoRoom(t, room, "an account the claim gave less than its allowance signalled room")
	a.letGo(full[0].OutboxID)
	expectRoom(t, room, "the held-back account let go of an event without signalling room")
	a.letGo(full[1].OutboxID)
	expectNoRoom(t, room, "room signalled again before the account was held back again")
}

// An account a claim filled to its share is noted held back before its events finish, though
// the allowances taken before the claim gave it room.
func TestAccountFilledByAClaimSignalsRoom(t *testing.T) {
	limits := ShareLimits{MaxHeld: 2, MaxHandOffs: 10}
	var a accountLoads
	room := a.roomChanged()
	allow := a.allowances(AccountShare, limits, nil)
	if len(allow) != 0 {
		t.Fatalf("allowances of no load = %v", allow)
	}
	claimed := append(pendingOf(1, 2), pendingOf(2, 1)...)
	a.hold(claimed)
	a.noteClaimed(claimed, allow, AccountShare, limits, nil)
	a.letGo(claimed[2].OutboxID) // account 2 was not filled
	expectNoRoom(t, room, "an account below its share signalled room")
	a.letGo(claimed[0].OutboxID)
	expectRoom(t, room, "the account the claim filled let go of an event without signalling room")
}

// An account given part of its share that lets go of its events while the claim runs (after
// its allowance was taken) signals room: the claim gave it only that part, and without the
// signal the rest of its events would wait for the poll.
func TestAccountLettingGoDuringAClaimSignalsRoom(t *testing.T) {
	limits := ShareLimits{MaxHeld: 4, MaxHandOffs: 10}
	var a accountLoads
	room := a.roomChanged()
	held := pendingOf(1, 3)
	a.hold(held)
	allow := a.allowances(AccountShare, limits, nil)
	if allow[1] != 1 {
		t.Fatalf("allowance of account 1 = %d, want 1", allow[1])
	}
	a.letGo(held[0].OutboxID, held[1].OutboxID, held[2].OutboxID) // while the claim runs
	claimed := pendingOf(1, 1)
	a.hold(claimed)
	a.noteClaimed(claimed, allow, AccountShare, limits, nil)
	expectRoom(t, room, "the account let go of three events during a claim that gave it one, without signalling room")
}

// pendingOf is n claimed events of account.
func pendingOf(account int64, n int) []store.PendingEvent {
	evs := make([]store.PendingEvent, n)
	for i := range evs {
		evs[i] = store.PendingEvent{OutboxID: uuid.New(), AccountID: account}
	}
	return evs
}

func expectRoom(t *testing.T, room <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-room:
	default:
		t.Fatal(msg)
	}
}

func expectNoRoom(t *testing.T, room <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-room:
		t.Fatal(msg)
	default:
	}
}
