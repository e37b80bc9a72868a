package portal

import (
	"net/url"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

func TestMayChange(t *testing.T) {
	left := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	owner := store.User{Role: "owner", CanManageAPIKeys: true, CanTranscribe: true}
	member := store.User{Role: "member"}
	transcriber := store.User{Role: "member", CanTranscribe: true}
	gone := store.User{Role: "member", LeftAt: &left}
	for _, tc := range []struct {
		name    string
		user    store.User
		ability auth.Ability
		want    bool
	}{
		{"an owner ticks to-dos", owner, auth.InboxWrite, true},
		{"a member ticks to-dos", member, auth.InboxWrite, true},
		{"a member who left does nothing", gone, auth.InboxWrite, false},
		{"a member without the allowance does not transcribe", member, auth.Transcribe, false},
		{"a member with it does", transcriber, auth.Transcribe, true},
		{"a member does not manage webhooks", transcriber, auth.WebhooksManage, false},
		{"an owner does", owner, auth.WebhooksManage, true},
	} {
		if got := mayChange(tc.user, tc.ability); got != tc.want {
			t.Errorf("%s: mayChange = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNewPager(t *testing.T) {
	for _, tc := range []struct {
		page, total       int
		pages             int
		wantPrev, wantNxt string
	}{
		{page: 1, total: 0, pages: 1},
		{page: 1, total: 25, pages: 1},
		{page: 1, total: 26, pages: 2, wantNxt: "/portal/todos?page=2&status=done"},
		{page: 2, total: 60, pages: 3, wantPrev: "/portal/todos?page=1&status=done", wantNxt: "/portal/todos?page=3&status=done"},
		{page: 3, total: 60, pages: 3, wantPrev: "/portal/todos?page=2&status=done"},
	} {
		pg := newPager("/portal/todos", url.Values{"status": {"done"}}, tc.page, tc.total)
		if pg.Pages != tc.pages || pg.Prev != tc.wantPrev || pg.Next != tc.wantNxt {
			t.Errorf("page %d of %d: %+v, want %d pages, prev %q, next %q", tc.page, tc.total, pg, tc.pages, tc.wantPrev, tc.wantNxt)
		}
	}
}
