package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/numbers"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// runErr executes the command line and returns its error and what it printed.
func runErr(args ...string) (string, error) {
	cmd := NewRootCommand()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func decodeNumber(t *testing.T, out string) numbers.Number {
	t.Helper()
	var n numbers.Number
	if err := json.Unmarshal([]byte(out), &n); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	return n
}

func TestAdminNumberCommands(t *testing.T) {
	ctx := context.Background()
	url := storetest.NewDatabaseURL(t)
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db := "--database-url=" + url
	accountID := find(t, `account (acct_\w+)`, run(t, "admin", "create-account", db, "--name", "Tap & Tile",
		"--owner-name", "Olu", "--owner-email", "olu@example.com"))
	acct, err := st.GetAccountByPublicID(ctx, accountID)
	if err != nil {
		t.Fatal(err)
	}

	args := []string{"admin", "add-number", db, "--account", accountID, "--number", "020 7946 0700", "--label", "Main",
		"--sms-capable", "--sms-ready", "--privacy-mode"}
	first := run(t, args...)
	n := decodeNumber(t, first)
	if n.E164 != "+442079460700" || n.Account != accountID || n.Status != "assigned" || n.Label != "Main" || !n.SMSReady ||
		!n.PrivacyModeEnabled || !n.VoicemailTranscriptionEnabled || n.ForwardCLIMode != "caller" {
		t.Fatalf("add-number: %+v", n)
	}
	if again := run(t, args...); again != first {
		t.Errorf("add-number repeated printed\n%s\nthe first time\n%s", again, first)
	}
	list, err := st.ListNumbers(ctx, acct.ID)
	if err != nil || len(list) != 1 || list[0].PublicID != n.PublicID {
		t.Fatalf("the account's numbers: %+v, %v", list, err)
	}

	// Only the flags given change.
	n = decodeNumber(t, run(t, "admin", "update-number", db, "+442079460700", "--label", "Reception", "--privacy-mode=false"))
	if n.Label != "Reception" || n.PrivacyModeEnabled || !n.SMSReady {
		t.Errorf("update-number: %+v", n)
	}

	routing := filepath.Join(t.TempDir(), "routing.json")
	if err := os.WriteFile(routing, []byte(`{"default": {"mode": "voicemail"},
		"schedules": [{"name": "Weekdays", "windows": [{"days": [1,2,3,4,5], "start": "09:00", "end": "17:30"}],
			"mode": "forward", "forward_targets": [{"kind": "pstn", "e164": "07700 900901", "staff_label": "Ann", "ring_seconds": 15}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, "admin", "set-routing", db, "020 7946 0700", "--file", routing)
	r, err := st.GetRouting(ctx, acct.ID, n.PublicID, time.Now())
	def, schedules := routesOfKind(r, store.RouteDefault), routesOfKind(r, store.RouteSchedule)
	if err != nil || len(def) != 1 || def[0].Settings.Mode != "voicemail" || def[0].Settings.AICover != "off" || len(schedules) != 1 ||
		schedules[0].Settings.ForwardTargets[0].E164 != "+447700900901" || schedules[0].Windows[0].End != "17:30" {
		t.Fatalf("routing after set-routing: %+v, %v", r, err)
	}

	portDate := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
	n = decodeNumber(t, run(t, "admin", "port-number", db, "+442079460700", "--direction", "out", "--step", "started",
		"--release-at", portDate.Format(time.RFC3339)))
	if n.Status != "releasing" || n.ReleaseAt == nil || !n.ReleaseAt.Equal(portDate) {
		t.Errorf("port-number out started: %+v", n)
	}
	n = decodeNumber(t, run(t, "admin", "release-number", db, "+442079460700"))
	if n.Status != "released" || n.ReleaseAt == nil || n.ReleaseAt.After(time.Now()) {
		t.Errorf("release-number: %+v", n)
	}
	if shown := decodeNumber(t, run(t, "admin", "show-number", db, "+442079460700")); shown.Status != "released" || shown.PublicID != n.PublicID {
		t.Errorf("show-number: %+v", shown)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"add-number", "--account", accountID, "--number", "12345"}, "number must be a phone number"},
		{[]string{"add-number", "--account", "acct_missing", "--number", "+442079460701"}, "no account acct_missing"},
		{[]string{"update-number", "+442079460799", "--label", "x"}, "no number +442079460799"},
		{[]string{"update-number", "+442079460700", "--label", "x"}, "was released"},
		{[]string{"port-number", "+442079460700", "--direction", "sideways", "--step", "started"}, "direction must be in or out"},
		{[]string{"release-number", "+442079460700", "--release-at", "tomorrow"}, "--release-at must be an RFC 3339 time"},
	} {
		out, err := runErr(append([]string{"admin", db}, bad.args...)...)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v (printed %q), want an error saying %q", bad.args, err, out, bad.want)
		}
	}
}

// routesOfKind returns the routes of one kind, in order.
func routesOfKind(r store.NumberRouting, kind string) []store.NumberRoute {
	var out []store.NumberRoute
	for _, rt := range r.Routes {
		if rt.Kind == kind {
			out = append(out, rt)
		}
	}
	return out
}
