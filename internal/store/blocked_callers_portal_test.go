package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func TestMayBlockCallers(t *testing.T) {
	left := time.Now()
	for _, c := range []struct {
		u    store.User
		want bool
	}{
		{store.User{Role: "owner"}, true},
		{store.User{Role: "owner", LeftAt: &left}, false},
		{store.User{Role: "member", CanManageAPIKeys: true, CanTranscribe: true}, false},
	} {
		if got := store.MayBlockCallers(c.u); got != c.want {
			t.Errorf("MayBlockCallers(%+v) = %v, want %v", c.u, got, c.want)
		}
	}
}

// An owner blocks a caller on every number and on one of the account's numbers, the list
// shows both, and removes one; a member may not; another account's number or block is not
// found.
func TestBlockAndUnblockCallers(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	a, b := apitest.NewTenant(t, st, plans.Business), apitest.NewTenant(t, st, plans.Business)
	num, err := st.CreateNumber(ctx, store.NewNumber{AccountID: a.Account.ID, E164: fmt.Sprintf("+4420794%02d0001", a.Account.ID%100), Label: "Office"})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := st.CreateNumber(ctx, store.NewNumber{AccountID: b.Account.ID, E164: fmt.Sprintf("+4420794%02d0002", b.Account.ID%100), Label: "Shop"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	everywhere, err := st.BlockCaller(ctx, a.Owner, "+447700900111", "reject", "Cold caller", "", at)
	if err != nil {
		t.Fatal(err)
	}
	office, err := st.BlockCaller(ctx, a.Owner, "+447700900222", "voicemail", "", num.PublicID, at.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	list, err := st.ListBlockedCallers(ctx, a.Account.ID, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].PublicID != office || list[0].Action != "voicemail" || list[0].Number == nil || list[0].Number.PublicID != num.PublicID ||
		list[1].PublicID != everywhere || list[1].Action != "reject" || list[1].Label != "Cold caller" || list[1].Number != nil || list[1].E164 != "+447700900111" {
		t.Fatalf("the blocked callers are %+v", list)
	}

	member, err := st.CreateUser(ctx, store.NewUser{AccountID: a.Account.ID, Name: "Max Member", Email: fmt.Sprintf("max%d@example.com", a.Account.ID), Role: "member",
		CanManageAPIKeys: true, CanTranscribe: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.BlockCaller(ctx, member, "+447700900333", "reject", "", "", at); !errors.Is(err, store.ErrNotAllowed) {
		t.Errorf("a member blocking a caller: %v, want ErrNotAllowed", err)
	}
	if err := st.UnblockCaller(ctx, member, everywhere); !errors.Is(err, store.ErrNotAllowed) {
		t.Errorf("a member unblocking a caller: %v, want ErrNotAllowed", err)
	}
	if _, err := st.BlockCaller(ctx, a.Owner, "+447700900333", "reject", "", theirs.PublicID, at); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("blocking on another account's number: %v, want ErrNotFound", err)
	}
	if err := st.UnblockCaller(ctx, b.Owner, everywhere); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account's owner unblocking: %v, want ErrNotFound", err)
	}

	if err := st.UnblockCaller(ctx, a.Owner, everywhere); err != nil {
		t.Fatal(err)
	}
	if err := st.UnblockCaller(ctx, a.Owner, everywhere); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unblocking twice: %v, want ErrNotFound", err)
	}
	if list, err := st.ListBlockedCallers(ctx, a.Account.ID, time.UTC); err != nil || len(list) != 1 || list[0].PublicID != office {
		t.Errorf("after unblocking, the list is %+v (%v); want the office block only", list, err)
	}
}
