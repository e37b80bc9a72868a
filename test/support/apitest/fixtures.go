package apitest

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

var seq atomic.Int64

// Tenant is an account with an owner, for tests.
type Tenant struct {
	Account store.Account
	Owner   store.User
	// OwnerKey holds every permission.
	OwnerKey string
}

// NewTenant creates an account on plan with addons, an owner, and an all-permission key.
func NewTenant(tb TB, st *store.Store, plan string, addons ...string) Tenant {
	tb.Helper()
	ctx := context.Background()
	n := seq.Add(1)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: fmt.Sprintf("Tenant %d Ltd", n), Plan: plan, Addons: addons})
	if err != nil {
		tb.Fatalf("create account: %v", err)
	}
	owner, err := st.CreateUser(ctx, store.NewUser{AccountID: acct.ID, Name: "Olivia Owner", Email: fmt.Sprintf("owner%d@example.com", n), Role: "owner"})
	if err != nil {
		tb.Fatalf("create owner: %v", err)
	}
	t := Tenant{Account: acct, Owner: owner}
	t.OwnerKey = NewKey(tb, st, owner.ID, auth.Abilities(auth.AllAbilities).Strings()...)
	return t
}

// NewKey creates a key for a user with the given permissions and returns its token.
func NewKey(tb TB, st *store.Store, userID int64, abilities ...string) string {
	tb.Helper()
	as, err := auth.ParseAbilities(abilities)
	if err != nil {
		tb.Fatalf("abilities: %v", err)
	}
	k, err := st.CreateAPIKey(context.Background(), userID, "test key", as)
	if err != nil {
		tb.Fatalf("create key: %v", err)
	}
	return k.Token
}

// NewMember adds a member to the tenant's account.
func (t Tenant) NewMember(tb TB, st *store.Store, canManageKeys, canTranscribe bool) store.User {
	tb.Helper()
	n := seq.Add(1)
	u, err := st.CreateUser(context.Background(), store.NewUser{AccountID: t.Account.ID, Name: "Mo Member",
		Email: fmt.Sprintf("member%d@example.com", n), Role: "member", CanManageAPIKeys: canManageKeys, CanTranscribe: canTranscribe})
	if err != nil {
		tb.Fatalf("create member: %v", err)
	}
	return u
}
