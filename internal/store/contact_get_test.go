package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// GetContact reads the account's own contact with its phones; another account's is not found.
func TestGetContact(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	a, b := apitest.NewTenant(t, st, plans.Business), apitest.NewTenant(t, st, plans.Business)
	company := "Engines Ltd"
	c, err := st.UpsertContact(ctx, a.Account.ID, store.ContactInput{Source: "api", DisplayName: "Ada", Company: &company,
		Phones: []store.ContactPhoneInput{{Number: "07700 900001", Label: "mobile", IsPrimary: true}}}, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.GetContact(ctx, a.Account.ID, c.PublicID)
	if err != nil {
		t.Fatal(err)
	}
	if got.DisplayName != "Ada" || got.Company == nil || *got.Company != company || len(got.Phones) != 1 ||
		got.Phones[0].E164 != "+447700900001" || got.Phones[0].RawNumber != "07700 900001" || !got.Phones[0].IsPrimary {
		t.Errorf("GetContact = %+v", got)
	}
	if _, err := st.GetContact(ctx, b.Account.ID, c.PublicID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account's contact: %v, want ErrNotFound", err)
	}
}
