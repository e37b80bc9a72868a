package store_test

import (
	"bytes"
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// Attempts are kept per delivery, oldest first, with their answer's first 4 KiB; a repeated
// write keeps the first row; they move from the DEFAULT partition into the day's partition
// once it is made, go when it is dropped, and go with their account.
func TestDeliveryAttemptsKeptPartitionedAndDeleted(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Attempts", Plan: "team"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	ev := uuid.New()
	next1, next2 := t0.Add(time.Minute), t0.Add(6*time.Minute)
	long := bytes.Repeat([]byte("x"), store.MaxAttemptBody+100)
	attempts := []store.DeliveryAttempt{
		{Attempt: 1, SentAt: t0, ResponseCode: 503, Error: "HTTP 503: the endpoint did not answer with a 2xx status",
			Duration: 120 * time.Millisecond, ResponseBody: []byte("down for maintenance"), NextAttemptAt: &next1},
		{Attempt: 2, SentAt: t0.Add(time.Minute), Error: "no answer within 10s", Duration: 10 * time.Second, NextAttemptAt: &next2},
		{Attempt: 3, SentAt: t0.Add(6 * time.Minute), ResponseCode: 200, Duration: 7 * time.Millisecond, ResponseBody: long},
	}
	// Written newest first: the read orders them.
	for i := len(attempts) - 1; i >= 0; i-- {
		a := attempts[i]
		a.AccountPublicID, a.EndpointPublicID, a.DeliveryName, a.EventID = acct.PublicID, "whep-a", "whd-1", ev
		if err := st.RecordDeliveryAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	again := attempts[0]
	again.AccountPublicID, again.EndpointPublicID, again.DeliveryName, again.EventID = acct.PublicID, "whep-a", "whd-1", ev
	again.ResponseCode = 500
	if err := st.RecordDeliveryAttempt(ctx, again); err != nil {
		t.Fatal(err)
	}
	// Another delivery of the endpoint, and one of another endpoint with the same name.
	for _, a := range []store.DeliveryAttempt{
		{AccountPublicID: acct.PublicID, EndpointPublicID: "whep-a", DeliveryName: "whd-2", EventID: ev, Attempt: 1, SentAt: t0, ResponseCode: 500},
		{AccountPublicID: acct.PublicID, EndpointPublicID: "whep-b", DeliveryName: "whd-1", EventID: ev, Attempt: 1, SentAt: t0.Add(time.Second), ResponseCode: 502},
	} {
		if err := st.RecordDeliveryAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}

	got, err := st.DeliveryAttempts(ctx, acct.ID, "whep-a", []string{"whd-1"}, t0.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got["whd-1"]) != 3 {
		t.Fatalf("DeliveryAttempts of whd-1 = %+v; want its 3 attempts only", got)
	}
	for i, a := range got["whd-1"] {
		w := attempts[i]
		if a.Attempt != w.Attempt || !a.SentAt.Equal(w.SentAt) || a.ResponseCode != w.ResponseCode || a.Error != w.Error ||
			a.Duration != w.Duration || a.EventID != ev || !reflect.DeepEqual(a.NextAttemptAt == nil, w.NextAttemptAt == nil) ||
			(a.NextAttemptAt != nil && !a.NextAttemptAt.Equal(*w.NextAttemptAt)) {
			t.Errorf("attempt %d read as %+v; written %+v", i+1, a, w)
		}
	}
	if b := got["whd-1"]; string(b[0].ResponseBody) != "down for maintenance" || len(b[1].ResponseBody) != 0 ||
		!bytes.Equal(b[2].ResponseBody, long[:store.MaxAttemptBody]) {
		t.Errorf("bodies kept: %q, %q, %d bytes; want the first 4 KiB of each answer", b[0].ResponseBody, b[1].ResponseBody, len(b[2].ResponseBody))
	}
	if later, err := st.DeliveryAttempts(ctx, acct.ID, "whep-a", []string{"whd-1", "whd-2"}, t0.Add(time.Second)); err != nil ||
		len(later["whd-1"]) != 2 || len(later["whd-2"]) != 0 {
		t.Errorf("attempts since t0+1s: %+v, %v; want whd-1's last two", later, err)
	}

	// Retention: rows written before the maintainer made their partition wait in the
	// DEFAULT partition and move into the partition it creates for them.
	if n, err := st.DefaultPartitionRows(ctx, store.DeliveryAttemptsTable, 100); err != nil || n != 5 {
		t.Errorf("the DEFAULT partition holds %d rows (%v) before any dated partition; want all 5", n, err)
	}
	day := t0.Truncate(24 * time.Hour)
	for from := day; from.Before(t0.Add(48 * time.Hour)); from = from.Add(24 * time.Hour) {
		if err := st.CreatePartition(ctx, store.DeliveryAttemptsTable, from, from.Add(24*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.DefaultPartitionRows(ctx, store.DeliveryAttemptsTable, 100); err != nil || n != 0 {
		t.Errorf("the DEFAULT partition holds %d rows (%v) once partitions exist; want 0", n, err)
	}
	parts, err := st.Partitions(ctx, store.DeliveryAttemptsTable)
	if err != nil {
		t.Fatal(err)
	}
	var today *store.Partition
	for i, p := range parts {
		if !p.Default && !t0.Before(p.From) && t0.Before(p.To) {
			today = &parts[i]
		}
	}
	if today == nil {
		t.Fatalf("no partition covers %s: %+v", t0, parts)
	}
	count := func() (n int) {
		t.Helper()
		if err := st.SQL().QueryRow(ctx, `SELECT count(*) FROM webhook_delivery_attempts WHERE account_id = $1`, acct.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 5 {
		t.Fatalf("%d rows; want 5", n)
	}
	if err := st.DropPartition(ctx, store.DeliveryAttemptsTable, today.Name); err != nil {
		t.Fatal(err)
	}
	// Rows that landed past midnight UTC (a test run across it) are in the next partition.
	var stillToday int
	for _, a := range append(attempts, store.DeliveryAttempt{SentAt: t0}, store.DeliveryAttempt{SentAt: t0.Add(time.Second)}) {
		if a.SentAt.Before(today.To) {
			stillToday++
		}
	}
	if n := count(); n != 5-stillToday {
		t.Errorf("%d rows after dropping %s; want %d", n, today.Name, 5-stillToday)
	}

	// With the account.
	other, err := st.CreateAccount(ctx, store.NewAccount{Name: "Removed", Plan: "team"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RecordDeliveryAttempt(ctx, store.DeliveryAttempt{AccountPublicID: other.PublicID, EndpointPublicID: "whep-c",
		DeliveryName: "whd-c", EventID: ev, Attempt: 1, SentAt: t0.Add(24 * time.Hour), ResponseCode: 500}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SQL().Exec(ctx, `DELETE FROM accounts WHERE id = $1`, other.ID); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := st.SQL().QueryRow(ctx, `SELECT count(*) FROM webhook_delivery_attempts WHERE delivery_name = 'whd-c'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d attempts of a deleted account left (%v); want 0", left, err)
	}
}
