package cli

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/storetest"
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
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db := "--database-url=" + url

	out := run(t, "admin", "create-account", db, "--name", "Tap & Tile", "--plan", "starter", "--owner-name", "Olu", "--owner-email", "olu@example.com")
	accountID, ownerKey := find(t, `account (acct_\w+)`, out), find(t, `key (sbk_[\w-]+)`, out)
	p, err := st.Authenticate(ctx, auth.Digest(ownerKey))
	if err != nil || p.Account.PublicID != accountID || p.User.Role != "owner" || len(p.Abilities) != len(auth.AllAbilities) {
		t.Fatalf("owner key authenticates as %+v, %v", p, err)
	}

	run(t, "admin", "update-account", db, accountID, "--plan", "team", "--addons", "integrations", "--daily-spend-limit-pence", "900")
	acct, err := st.GetAccountByPublicID(ctx, accountID)
	if err != nil || acct.Plan != "team" || len(acct.Addons) != 1 || acct.Addons[0] != "integrations" || acct.DailySpendLimitPence != 900 || acct.Status != "active" {
		t.Fatalf("after update-account: %+v, %v", acct, err)
	}

	out = run(t, "admin", "create-user", db, "--account", accountID, "--name", "Mia", "--email", "mia@example.com", "--can-manage-api-keys")
	userID := find(t, `user (usr_\w+)`, out)
	out = run(t, "admin", "create-key", db, "--user", userID, "--ability", "contacts:write")
	keyID, memberKey := find(t, `key (key_\w+) `, out), find(t, `(sbk_[\w-]+)`, out)
	p, err = st.Authenticate(ctx, auth.Digest(memberKey))
	if err != nil || p.User.PublicID != userID || !p.Abilities.Has(auth.ContactsRead) || p.Abilities.Has(auth.InboxWrite) {
		t.Fatalf("member key: %+v, %v", p, err)
	}

	out = run(t, "admin", "top-up", db, accountID, "--pence", "1234")
	if find(t, `now (\d+) pence`, out) != "1234" {
		t.Errorf("top-up said %q", out)
	}

	run(t, "admin", "revoke-key", db, keyID)
	if _, err := st.Authenticate(ctx, auth.Digest(memberKey)); err == nil {
		t.Error("revoked key still authenticates")
	}
	other := find(t, `(sbk_[\w-]+)`, run(t, "admin", "create-key", db, "--user", userID))
	run(t, "admin", "remove-user", db, userID)
	if _, err := st.Authenticate(ctx, auth.Digest(other)); err == nil {
		t.Error("the key of a user who left still authenticates")
	}
}

func TestSeedDemo(t *testing.T) {
	ctx := context.Background()
	url := storetest.NewDatabaseURL(t)
	out := run(t, "seed", "--demo", "--database-url="+url, "--calls", "150")
	accountID, key := find(t, `account (acct_\w+)`, out), find(t, `owner key (sbk_[\w-]+)`, out)
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := st.Authenticate(ctx, auth.Digest(key))
	if err != nil || p.Account.PublicID != accountID {
		t.Fatalf("demo key: %+v, %v", p, err)
	}
	var calls, recorded, transcribed int
	var ledgerSum, balance int64
	var backwards int
	err = st.Pool.QueryRow(ctx, `SELECT
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
