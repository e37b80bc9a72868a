package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/storetest"
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

func TestContactNamesForCallers(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	acct := newContactsAccount(t, st)
	other := newContactsAccount(t, st)
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

	save := func(account int64, name string, at time.Time, phones ...store.ContactPhoneInput) store.Contact {
		t.Helper()
		c, err := st.UpsertContact(ctx, account, store.ContactInput{Source: "api", DisplayName: name, Phones: phones}, at, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// The same number on three contacts: where it is primary wins, then the most recent.
	save(acct, "Old Secondary", now, store.ContactPhoneInput{Number: "020 7946 0000"})
	save(acct, "Primary Holder", now, store.ContactPhoneInput{Number: "+44 20 7946 0000", IsPrimary: true})
	save(acct, "New Secondary", now.Add(time.Hour), store.ContactPhoneInput{Number: "02079460000"})
	// Most recent of two non-primary holders.
	save(acct, "Older", now, store.ContactPhoneInput{Number: "07700 900001"})
	save(acct, "Newer", now.Add(time.Hour), store.ContactPhoneInput{Number: "07700 900001"})
	// Unreadable numbers are not stored at all.
	junk := save(acct, "Junk", now, store.ContactPhoneInput{Number: "call reception"})
	if len(junk.Phones) != 0 {
		t.Errorf("unreadable number kept: %+v", junk.Phones)
	}
	save(other, "Other Account", now.Add(2*time.Hour), store.ContactPhoneInput{Number: "07700 900002", IsPrimary: true})

	names, err := st.ContactNamesByE164(ctx, acct, []string{"+442079460000", "+447700900001", "+447700900002", "+15550000000"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"+442079460000": "Primary Holder", "+447700900001": "Newer"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("ContactNamesByE164 = %v, want %v", names, want)
	}
}

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
