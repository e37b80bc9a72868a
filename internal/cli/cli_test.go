package cli

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func TestMain(m *testing.M) {
	if os.Getenv(runAsSwitchboard) != "" {
		os.Exit(switchboardMain())
	}
	os.Exit(storetest.Main(m))
}

// run executes the switchboard command line and returns what it printed.
func run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("switchboard %v: %v\n%s", args, err, out.String())
	}
	return out.String()
}

func find(t *testing.T, pattern, text string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no %s in %q", pattern, text)
	}
	return m[1]
}

func TestAdminCommands(t *testing.T) {
	ctx := context.Background()
	url := storetest.NewDatabaseURL(t)
	st := storetest.Open(t, url)
	db := "--database-url=" + url

	out := run(t, "admin", "create-account", db, "--name", "Tap & Tile", "--plan", "starter", "--owner-name", "Olu", "--owner-email", "olu@example.com")
	accountID, ownerKey := find(t, `account (acct_\w+)`, out), find(t, `key (sbk_[\w-]+)`, out)
	ownerID := find(t, `owner (usr_\w+)`, out)
	p, _, err := st.AuthenticateAndCount(ctx, auth.Digest(ownerKey), time.Now())
	if err != nil || p.Account.PublicID != accountID || p.User.Role != "owner" {
		t.Fatalf("owner key authenticates as %+v, %v", p, err)
	}
	// The first key holds every permission but auto-transcribe, which charges for every
	// recorded call and so is granted only on request.
	for _, a := range auth.AllAbilities {
		if p.Abilities.Has(a) != (a != auth.AutoTranscribe) {
			t.Errorf("owner key: has %s %t (holds %v)", a, p.Abilities.Has(a), p.Abilities)
		}
	}
	if got := find(t, `permissions (.+)`, out); got != "read, contacts:read, contacts:write, inbox:write, transcribe, webhooks:manage" {
		t.Errorf("create-account printed permissions %q", got)
	}
	auto := find(t, `(sbk_[\w-]+)`, run(t, "admin", "create-key", db, "--user", ownerID, "--ability", "auto-transcribe"))
	if p, _, err := st.AuthenticateAndCount(ctx, auth.Digest(auto), time.Now()); err != nil || !p.Abilities.Has(auth.AutoTranscribe) || !p.Abilities.Has(auth.Transcribe) {
		t.Fatalf("create-key --ability auto-transcribe: %+v, %v", p, err)
	}

	run(t, "admin", "update-account", db, accountID, "--plan", "team", "--addon", "integrations", "--daily-spend-limit-pence", "900")
	acct, err := st.GetAccountByPublicID(ctx, accountID)
	if err != nil || acct.Plan != "team" || len(acct.Addons) != 1 || acct.Addons[0] != "integrations" || acct.DailySpendLimitPence != 900 || acct.Status != "active" {
		t.Fatalf("after update-account: %+v, %v", acct, err)
	}
	// --addon= removes every add-on; the old spelling --addons still works, with a warning.
	run(t, "admin", "update-account", db, accountID, "--addon=")
	if acct, err := st.GetAccountByPublicID(ctx, accountID); err != nil || len(acct.Addons) != 0 || acct.Plan != "team" {
		t.Fatalf("after --addon=: %+v, %v", acct, err)
	}
	out = run(t, "admin", "update-account", db, accountID, "--addons", "integrations")
	if acct, err := st.GetAccountByPublicID(ctx, accountID); err != nil || len(acct.Addons) != 1 || acct.Addons[0] != "integrations" {
		t.Fatalf("after --addons: %+v, %v", acct, err)
	}
	if !strings.Contains(out, "--addons has been deprecated, use --addon") {
		t.Errorf("no deprecation warning for --addons: %q", out)
	}
	out = run(t, "admin", "create-account", db, "--name", "Grout Ltd", "--addon", "integrations", "--owner-name", "Gus", "--owner-email", "gus@example.com")
	if acct, err := st.GetAccountByPublicID(ctx, find(t, `account (acct_\w+)`, out)); err != nil || len(acct.Addons) != 1 || acct.Addons[0] != "integrations" {
		t.Fatalf("create-account --addon: %+v, %v", acct, err)
	}
	help := run(t, "admin", "update-account", "--help")
	if !strings.Contains(help, "--addon strings") || strings.Contains(help, "--addons") {
		t.Errorf("update-account --help shows:\n%s", help)
	}

	out = run(t, "admin", "create-user", db, "--account", accountID, "--name", "Mia", "--email", "mia@example.com", "--can-manage-api-keys")
	userID := find(t, `user (usr_\w+)`, out)
	out = run(t, "admin", "create-key", db, "--user", userID, "--ability", "contacts:write")
	keyID, memberKey := find(t, `key (key_\w+) `, out), find(t, `(sbk_[\w-]+)`, out)
	p, _, err = st.AuthenticateAndCount(ctx, auth.Digest(memberKey), time.Now())
	if err != nil || p.User.PublicID != userID || !p.Abilities.Has(auth.ContactsRead) || p.Abilities.Has(auth.InboxWrite) {
		t.Fatalf("member key: %+v, %v", p, err)
	}

	out = run(t, "admin", "top-up", db, accountID, "--pence", "1234")
	if find(t, `now (\d+) pence`, out) != "1234" {
		t.Errorf("top-up said %q", out)
	}

	run(t, "admin", "revoke-key", db, keyID)
	if _, _, err := st.AuthenticateAndCount(ctx, auth.Digest(memberKey), time.Now()); err == nil {
		t.Error("revoked key still authenticates")
	}
	other := find(t, `(sbk_[\w-]+)`, run(t, "admin", "create-key", db, "--user", userID))
	run(t, "admin", "remove-user", db, userID)
	if _, _, err := st.AuthenticateAndCount(ctx, auth.Digest(other), time.Now()); err == nil {
		t.Error("the key of a user who left still authenticates")
	}
}

func TestSeedDemo(t *testing.T) {
	ctx := context.Background()
	url := storetest.NewDatabaseURL(t)
	out := run(t, "seed", "--demo", "--database-url="+url, "--calls", "150")
	accountID, key := find(t, `account (acct_\w+)`, out), find(t, `owner key (sbk_[\w-]+)`, out)
	st := storetest.Open(t, url)
	p, _, err := st.AuthenticateAndCount(ctx, auth.Digest(key), time.Now())
	if err != nil || p.Account.PublicID != accountID {
		t.Fatalf("demo key: %+v, %v", p, err)
	}
	nums, err := st.ListNumbers(ctx, p.Account.ID)
	if err != nil || len(nums) != 2 || nums[1].E164 != "+442079460000" || !nums[1].SMSReady || !nums[1].IsDefaultCallerID {
		t.Fatalf("demo numbers: %+v, %v", nums, err)
	}
	r, err := st.GetRouting(ctx, p.Account.ID, nums[1].PublicID, time.Now())
	def, schedules := routesOfKind(r, store.RouteDefault), routesOfKind(r, store.RouteSchedule)
	if err != nil || len(def) != 1 || def[0].Settings.Mode != "voicemail" || len(schedules) != 1 || schedules[0].Name != "Office hours" ||
		schedules[0].Settings.ForwardTargets[0].E164 != "+447700900900" || !r.Number.CallTranscriptionEnabled {
		t.Fatalf("demo routing: %+v, %v", r, err)
	}
	var calls, recorded, transcribed int
	var ledgerSum, balance int64
	var backwards int
	err = storetest.SQL(t, st).QueryRow(ctx, `SELECT
			(SELECT count(*) FROM calls WHERE account_id = a.id),
			(SELECT count(*) FROM recordings WHERE account_id = a.id AND call_id IS NOT NULL),
			(SELECT count(*) FROM transcripts WHERE account_id = a.id AND status = 'completed'),
			(SELECT coalesce(sum(amount_pence), 0) FROM ledger_entries WHERE account_id = a.id),
			a.balance_pence,
			(SELECT count(*) FROM (SELECT balance_after_pence - amount_pence
				- lag(balance_after_pence, 1, 0::bigint) OVER (ORDER BY created_at, id) AS gap
				FROM ledger_entries WHERE account_id = a.id) g WHERE gap <> 0)
		FROM accounts a WHERE a.public_id = $1`, accountID).Scan(&calls, &recorded, &transcribed, &ledgerSum, &balance, &backwards)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 150 || recorded == 0 || transcribed == 0 || transcribed > recorded {
		t.Errorf("demo has %d calls, %d recorded, %d transcribed", calls, recorded, transcribed)
	}
	if ledgerSum != balance || balance <= 0 {
		t.Errorf("balance %d, ledger sums to %d", balance, ledgerSum)
	}
	if backwards != 0 {
		t.Errorf("%d ledger entries do not follow from the one before in time order", backwards)
	}
}
