package listen

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

func TestLocalSecret(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "switchboard")
	// Two first runs at once agree on one salt.
	secrets := make([]string, 8)
	var wg sync.WaitGroup
	for i := range secrets {
		wg.Go(func() {
			s, err := LocalSecret(dir, "sbk_key_one")
			if err != nil {
				t.Error(err)
			}
			secrets[i] = s
		})
	}
	wg.Wait()
	for _, s := range secrets[1:] {
		if s != secrets[0] {
			t.Fatalf("concurrent first runs disagree: %v", secrets)
		}
	}
	first := secrets[0]
	if key, ok := send.StandardKey(first); !ok || len(key) != 32 || !strings.HasPrefix(first, "whsec_") {
		t.Fatalf("secret %q is not whsec_ and 32 bytes of base64", first)
	}
	if strings.Contains(first, "sbk_key_one") {
		t.Fatal("the secret shows the key")
	}
	if again, _ := LocalSecret(dir, "sbk_key_one"); again != first {
		t.Errorf("same key, same machine: %s then %s", first, again)
	}
	if other, _ := LocalSecret(dir, "sbk_key_two"); other == first {
		t.Error("two keys got one secret")
	}
	if elsewhere, _ := LocalSecret(filepath.Join(t.TempDir(), "switchboard"), "sbk_key_one"); elsewhere == first {
		t.Error("another machine's salt gave the same secret")
	}
	info, err := os.Stat(filepath.Join(dir, saltFileName))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("salt file: %v, mode %v", err, info.Mode())
	}
	if err := os.WriteFile(filepath.Join(dir, saltFileName), []byte("not base64!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LocalSecret(dir, "sbk_key_one"); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("a damaged salt file: %v", err)
	}
}

func TestPermanent(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&APIError{Status: 401}, true},
		{&APIError{Status: 403}, true},
		{&APIError{Status: 503}, false},
		{&RefusedError{Code: 4009}, true},
		{&ClosedError{Code: 4001}, true},
		{&ClosedError{Code: 4009}, true},
		{&ClosedError{Code: 4100}, false},
		{&ClosedError{Code: 4200}, false},
		{&ClosedError{Code: 1006}, false},
		{os.ErrDeadlineExceeded, false},
	} {
		if got := permanent(tc.err); got != tc.want {
			t.Errorf("permanent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
