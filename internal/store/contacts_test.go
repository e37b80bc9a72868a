package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func newContactsAccount(t *testing.T, st *store.Store) int64 {
	t.Helper()
	acct, err := st.CreateAccount(context.Background(), store.NewAccount{Name: "Contacts Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	return acct.ID
}

func strp(s string) *string { return &s }

func TestBulkUpsertContactsCountsFailuresAndKeepsTheRest(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	acct := newContactsAccount(t, st)
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

	ins := []store.ContactInput{
		{Source: "crm", ExternalID: strp("a"), DisplayName: "A", Phones: []store.ContactPhoneInput{{Number: "020 7946 0001"}}},
		// PostgreSQL text cannot hold NUL: this one fails to save (the API refuses it earlier).
		{Source: "crm", ExternalID: strp("b"), DisplayName: "B\x00", Phones: []store.ContactPhoneInput{{Number: "020 7946 0002"}}},
		{Source: "crm", DisplayName: "No id", Phones: []store.ContactPhoneInput{{Number: "020 7946 0003"}, {Number: "junk"}}},
		{Source: "crm", ExternalID: strp("a"), DisplayName: "A again", Phones: nil},
	}
	res, err := st.BulkUpsertContacts(ctx, acct, ins, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Imported != 3 || res.Failed != 1 {
		t.Errorf("result = %+v, want 3 imported (a twice, the one without id) and 1 failed", res)
	}
	list, total, err := st.ListContacts(ctx, acct, store.ContactFilter{}, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != 2 || len(list) != 2 {
		t.Fatalf("contacts = %+v, want 2", list)
	}
	for _, c := range list {
		switch c.DisplayName {
		case "A again":
			if len(c.Phones) != 0 {
				t.Errorf("A's phones = %+v, want none (the later copy had none)", c.Phones)
			}
		case "No id":
			if len(c.Phones) != 1 || c.Phones[0].E164 != "+442079460003" {
				t.Errorf("phones = %+v", c.Phones)
			}
		default:
			t.Errorf("unexpected contact %+v", c)
		}
	}
}
