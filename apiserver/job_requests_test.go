package apiserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
)

func ibJob(t *testing.T, st *store.Store, in store.NewJobRequest) store.JobRequest {
	t.Helper()
	j, err := st.CreateJobRequest(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestJobRequestsList(t *testing.T) {
	h, _ := ibHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	other := apitest.NewTenant(t, h.store, plans.Business)
	acct := tenant.Account.ID
	num := ibNumber(t, h.store, acct, "+442079460001", "Plumbing line")
	key := tenant.OwnerKey

	preferred := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
	full := ibJob(t, h.store, store.NewJobRequest{AccountID: acct, NumberID: &num.ID, CallerName: "Priya Patel",
		CallerE164: "+447700900001", ContactE164: ibStr("+447700900009"), JobType: "Boiler repair",
		Description: "Boiler leaking since Sunday", Address: ibStr("1 High Street, Leeds"), Postcode: ibStr("LS1 1AA"),
		PreferredWhen: ibStr("Mornings"), PreferredDate: &preferred, CreatedAt: ibNow.Add(-time.Hour)})
	confirmed := ibJob(t, h.store, store.NewJobRequest{AccountID: acct, Status: "confirmed", CallerName: "Bob", CallerE164: "+447700900002",
		JobType: "Radiator", CreatedAt: ibNow.Add(-2 * time.Hour)})
	done := ibJob(t, h.store, store.NewJobRequest{AccountID: acct, Status: "done", CreatedAt: ibNow.Add(-3 * time.Hour)})
	declined := ibJob(t, h.store, store.NewJobRequest{AccountID: acct, Status: "declined", CreatedAt: ibNow.Add(-4 * time.Hour)})
	bare := ibJob(t, h.store, store.NewJobRequest{AccountID: acct, CreatedAt: ibNow.Add(-5 * time.Hour)})
	foreign := ibJob(t, h.store, store.NewJobRequest{AccountID: other.Account.ID, CreatedAt: ibNow})

	const path = "/v1/job-requests"
	// Default: open, meaning new and confirmed, newest first.
	page := ibGetPage(t, h, key, path)
	ibWantIDs(t, "default (open)", page.ids("public_id"), full.PublicID, confirmed.PublicID, bare.PublicID)
	ibWantEnvelope(t, h, page, path, 1, 1, 20, 3, "", "")
	ibWantFields(t, "full job", page.Data[0], map[string]any{
		"public_id": full.PublicID, "status": "new", "caller_name": "Priya Patel", "caller_e164": "+447700900001",
		"contact_e164": "+447700900009", "line_e164": "+442079460001", "line_label": "Plumbing line", "job_type": "Boiler repair",
		"description": "Boiler leaking since Sunday", "address": "1 High Street, Leeds", "postcode": "LS1 1AA",
		"preferred_when": "Mornings", "preferred_date": "2025-03-14", "created_at": ibNow.Add(-time.Hour),
	})
	ibWantFields(t, "bare job", page.Data[2], map[string]any{
		"public_id": bare.PublicID, "status": "new", "caller_name": "", "caller_e164": "", "contact_e164": nil,
		"line_e164": nil, "line_label": nil, "job_type": "", "description": "", "address": nil, "postcode": nil,
		"preferred_when": nil, "preferred_date": nil, "created_at": ibNow.Add(-5 * time.Hour),
	})

	for _, c := range []struct {
		status string
		want   []string
	}{
		{"open", []string{full.PublicID, confirmed.PublicID, bare.PublicID}},
		{"new", []string{full.PublicID, bare.PublicID}},
		{"confirmed", []string{confirmed.PublicID}},
		{"done", []string{done.PublicID}},
		{"declined", []string{declined.PublicID}},
		{"all", []string{full.PublicID, confirmed.PublicID, done.PublicID, declined.PublicID, bare.PublicID}},
	} {
		page := ibGetPage(t, h, key, path+"?status="+c.status)
		ibWantIDs(t, "status="+c.status, page.ids("public_id"), c.want...)
		if page.Total != len(c.want) {
			t.Errorf("status=%s: total %d, want %d", c.status, page.Total, len(c.want))
		}
		for _, row := range page.Data {
			if s := row["status"]; c.status != "open" && c.status != "all" && s != c.status {
				t.Errorf("status=%s listed a %v job", c.status, s)
			}
		}
	}

	// Paging keeps the filter in the links; past the end is empty.
	page = ibGetPage(t, h, key, path+"?status=all&per_page=2&page=2")
	ibWantIDs(t, "all page 2", page.ids("public_id"), done.PublicID, declined.PublicID)
	ibWantEnvelope(t, h, page, path, 2, 3, 2, 5, "status=all&per_page=2&page=3", "status=all&per_page=2&page=1")
	page = ibGetPage(t, h, key, path+"?status=all&per_page=2&page=3")
	ibWantIDs(t, "all page 3", page.ids("public_id"), bare.PublicID)
	ibWantEnvelope(t, h, page, path, 3, 3, 2, 5, "", "status=all&per_page=2&page=2")
	page = ibGetPage(t, h, key, path+"?page=4")
	ibWantIDs(t, "past the end", page.ids("public_id"))
	ibWantEnvelope(t, h, page, path, 4, 1, 20, 3, "", "page=1")
	if page := ibGetPage(t, h, key, path+"?per_page=100&status=all"); page.PerPage != 100 || len(page.Data) != 5 {
		t.Errorf("per_page=100: %d, %d rows", page.PerPage, len(page.Data))
	}

	for _, q := range []struct{ query, field string }{
		{"status=closed", "status"}, {"status=OPEN", "status"}, {"per_page=101", "per_page"}, {"per_page=0", "per_page"},
		{"page=0", "page"}, {"page=one", "page"},
	} {
		ibWant422(t, h, key, "GET", path+"?"+q.query, nil, q.field)
	}

	ibWantIDs(t, "other account", ibGetPage(t, h, other.OwnerKey, path).ids("public_id"), foreign.PublicID)
	ibWantIDs(t, "read-only key", ibGetPage(t, h, apitest.NewKey(t, h.store, tenant.Owner.ID), path+"?status=done").ids("public_id"), done.PublicID)
	team := apitest.NewTenant(t, h.store, plans.Team)
	ibWantAddonRefused(t, h, team.OwnerKey, "GET", path, nil)
}

// Job requests made at the same moment keep a stable order (the later one first) across pages.
func TestJobRequestsSameTimeOrder(t *testing.T) {
	h, _ := ibHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	var ids []string
	for range 3 {
		ids = append([]string{ibJob(t, h.store, store.NewJobRequest{AccountID: tenant.Account.ID, CreatedAt: ibNow}).PublicID}, ids...)
	}
	var got []string
	for _, p := range []string{"1", "2", "3"} {
		got = append(got, ibGetPage(t, h, tenant.OwnerKey, "/v1/job-requests?per_page=1&page="+p).ids("public_id")...)
	}
	ibWantIDs(t, "same-time job requests", got, ids...)
}
