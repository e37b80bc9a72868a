package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

var recordingTestKey = []byte("test signing key: 32 bytes long!")

// recordingHarness is a server with a fake clock and a local recording store.
type recordingHarness struct {
	*harness
	clock *clocktesting.FakeClock
	audio *recordingstore.Local
}

func newRecordingHarness(t *testing.T, now time.Time) *recordingHarness {
	t.Helper()
	audio, err := recordingstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = audio.Close() })
	clk := clocktesting.NewFakeClock(now)
	h := newHarness(t, func(c *apiserver.Config) {
		c.Clock = clk
		c.Media = apiserver.MediaConfig{SigningKey: recordingTestKey, Recordings: audio}
	})
	return &recordingHarness{harness: h, clock: clk, audio: audio}
}

// addRecording stores audio and its recording row.
func (h *recordingHarness) addRecording(t *testing.T, accountID int64, audio []byte, durationSeconds int) store.Recording {
	t.Helper()
	ctx := context.Background()
	rec, err := h.store.CreateRecording(ctx, store.NewRecording{AccountID: accountID, Kind: "call",
		StorageKey: "pending", DurationSeconds: durationSeconds, SizeBytes: int64(len(audio))})
	if err != nil {
		t.Fatal(err)
	}
	rec.StorageKey = "calls/" + rec.PublicID + ".wav"
	if _, err := storetest.SQL(t, h.store).Exec(ctx, `UPDATE recordings SET storage_key = $2 WHERE id = $1`, rec.ID, rec.StorageKey); err != nil {
		t.Fatal(err)
	}
	if err := h.audio.Put(ctx, rec.StorageKey, bytes.NewReader(audio)); err != nil {
		t.Fatal(err)
	}
	return rec
}

// linkPath asks for a recording link and returns its path and query, checking its shape.
func (h *recordingHarness) linkPath(t *testing.T, key, recording string) string {
	t.Helper()
	resp := h.api.Do(t, key, "GET", "/v1/recordings/"+recording+"/stream-url", nil)
	if resp.Status != http.StatusOK {
		t.Fatalf("stream-url: %s", resp)
	}
	var link struct {
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	resp.JSON(t, &link)
	if want := h.clock.Now().Add(10 * time.Minute).Truncate(time.Second); !link.ExpiresAt.Equal(want) {
		t.Errorf("expires_at = %v, want %v (10 minutes from now)", link.ExpiresAt, want)
	}
	prefix := h.api.BaseURL + "/v1/media/recordings/" + recording + "?"
	if !strings.HasPrefix(link.URL, prefix) {
		t.Fatalf("url = %q, want it under %q", link.URL, prefix)
	}
	u, err := url.Parse(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := u.Query().Get("expires"), strings.TrimSpace(jsonNumber(link.ExpiresAt.Unix())); got != want {
		t.Errorf("expires = %q, want %q", got, want)
	}
	return u.RequestURI()
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// fetch gets a link the way an audio player does: no API key, any Accept.
func (h *recordingHarness) fetch(t *testing.T, path string, header http.Header) (int, http.Header, []byte) {
	t.Helper()
	return fetchAudio(t, h.api.BaseURL+path, header)
}

func fetchAudio(t *testing.T, address string, header http.Header) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", address, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "*/*")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, body
}

func testAudio(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

func TestRecordingStreamURL(t *testing.T) {
	h := newRecordingHarness(t, time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC))
	ctx := context.Background()
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	other := apitest.NewTenant(t, h.store, plans.Business)
	audio := testAudio(5000)
	rec := h.addRecording(t, tenant.Account.ID, audio, 95)
	foreign := h.addRecording(t, other.Account.ID, testAudio(10), 5)

	path := h.linkPath(t, tenant.OwnerKey, rec.PublicID)

	t.Run("the link plays without an API key", func(t *testing.T) {
		status, header, body := h.fetch(t, path, nil)
		if status != http.StatusOK || !bytes.Equal(body, audio) {
			t.Fatalf("GET link: %d, %d bytes; want 200 and the %d stored bytes", status, len(body), len(audio))
		}
		if ct := header.Get("Content-Type"); ct != "audio/wav" {
			t.Errorf("Content-Type = %q, want audio/wav", ct)
		}
		if ar := header.Get("Accept-Ranges"); ar != "bytes" {
			t.Errorf("Accept-Ranges = %q, want bytes", ar)
		}
		// The same answer is valid against the OpenAPI description.
		if resp := h.api.Do(t, "", "GET", path, nil); resp.Status != http.StatusOK || !bytes.Equal(resp.Body, audio) {
			t.Errorf("GET link with Accept: application/json: %d, %d bytes", resp.Status, len(resp.Body))
		}
	})

	t.Run("the link serves byte ranges", func(t *testing.T) {
		status, header, body := h.fetch(t, path, http.Header{"Range": {"bytes=100-199"}})
		if status != http.StatusPartialContent || !bytes.Equal(body, audio[100:200]) {
			t.Fatalf("ranged GET: %d, %d bytes; want 206 and bytes 100-199", status, len(body))
		}
		if cr := header.Get("Content-Range"); cr != "bytes 100-199/5000" {
			t.Errorf("Content-Range = %q", cr)
		}
		if status, _, _ := h.fetch(t, path, http.Header{"Range": {"bytes=9000-"}}); status != http.StatusRequestedRangeNotSatisfiable {
			t.Errorf("range past the end: %d, want 416", status)
		}
	})

	t.Run("each request gets a fresh link", func(t *testing.T) {
		h.clock.Step(3 * time.Second)
		if again := h.linkPath(t, tenant.OwnerKey, rec.PublicID); again == path {
			t.Errorf("a later request returned the same link %q", again)
		}
	})

	t.Run("altered, incomplete or foreign links are refused", func(t *testing.T) {
		u, _ := url.Parse(path)
		q := u.Query()
		sig, exp := q.Get("sig"), q.Get("expires")
		flipped := sig[:len(sig)-1] + string("0123456789abcdef"[(strings.IndexByte("0123456789abcdef", sig[len(sig)-1])+1)%16])
		base := "/v1/media/recordings/"
		cases := map[string]string{
			"signature changed":          base + rec.PublicID + "?expires=" + exp + "&sig=" + flipped,
			"expiry pushed later":        base + rec.PublicID + "?expires=" + jsonNumber(mustInt(t, exp)+3600) + "&sig=" + sig,
			"other recording, same sig":  base + foreign.PublicID + "?expires=" + exp + "&sig=" + sig,
			"no signature":               base + rec.PublicID + "?expires=" + exp,
			"no expiry":                  base + rec.PublicID + "?sig=" + sig,
			"expiry not a number":        base + rec.PublicID + "?expires=soon&sig=" + sig,
			"expiry with a leading zero": base + rec.PublicID + "?expires=0" + exp + "&sig=" + sig,
			"signature not hex":          base + rec.PublicID + "?expires=" + exp + "&sig=" + strings.Repeat("zz", 32),
			"signature truncated":        base + rec.PublicID + "?expires=" + exp + "&sig=" + sig[:40],
			"nothing":                    base + rec.PublicID,
		}
		for name, p := range cases {
			resp := h.api.Do(t, "", "GET", p, nil)
			if resp.Status != http.StatusForbidden || !strings.Contains(resp.Map(t)["message"].(string), "not valid") {
				t.Errorf("%s: %s, want 403 not valid", name, resp)
			}
		}
	})

	t.Run("a link signed with another key is refused", func(t *testing.T) {
		otherReplica := newHarnessOn(t, h.store, func(c *apiserver.Config) {
			c.Clock = h.clock
			c.Media = apiserver.MediaConfig{SigningKey: []byte("a different secret"), Recordings: h.audio}
		})
		if resp := otherReplica.api.Do(t, "", "GET", path, nil); resp.Status != http.StatusForbidden {
			t.Errorf("link checked with another key: %s, want 403", resp)
		}
		sameKey := newHarnessOn(t, h.store, func(c *apiserver.Config) {
			c.Clock = h.clock
			c.Media = apiserver.MediaConfig{SigningKey: recordingTestKey, Recordings: h.audio}
		})
		if status, _, body := fetchAudio(t, sameKey.api.BaseURL+path, nil); status != http.StatusOK || !bytes.Equal(body, audio) {
			t.Errorf("link checked by a replica with the same key: %d", status)
		}
	})

	t.Run("the link stops working after 10 minutes", func(t *testing.T) {
		path := h.linkPath(t, tenant.OwnerKey, rec.PublicID)
		h.clock.Step(10*time.Minute - time.Second)
		if status, _, _ := h.fetch(t, path, nil); status != http.StatusOK {
			t.Fatalf("just before 10 minutes: %d, want 200", status)
		}
		h.clock.Step(time.Second)
		resp := h.api.Do(t, "", "GET", path, nil)
		if resp.Status != http.StatusForbidden || !strings.Contains(resp.Map(t)["message"].(string), "expired") {
			t.Fatalf("after 10 minutes: %s, want 403 expired", resp)
		}
		// A new link works again.
		if status, _, _ := h.fetch(t, h.linkPath(t, tenant.OwnerKey, rec.PublicID), nil); status != http.StatusOK {
			t.Errorf("fresh link: %d, want 200", status)
		}
	})

	t.Run("another account's or an unknown recording is not found", func(t *testing.T) {
		for _, id := range []string{foreign.PublicID, "rec_unknown"} {
			if resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/recordings/"+id+"/stream-url", nil); resp.Status != http.StatusNotFound {
				t.Errorf("stream-url of %s: %s, want 404", id, resp)
			}
		}
	})

	t.Run("a deleted recording is not found", func(t *testing.T) {
		gone := h.addRecording(t, tenant.Account.ID, testAudio(64), 3)
		path := h.linkPath(t, tenant.OwnerKey, gone.PublicID)
		if err := deleteRecording(t, h.store, tenant.Account.ID, gone.PublicID, h.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if resp := h.api.Do(t, "", "GET", path, nil); resp.Status != http.StatusNotFound {
			t.Errorf("link to a deleted recording: %s, want 404", resp)
		}
		if resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/recordings/"+gone.PublicID+"/stream-url", nil); resp.Status != http.StatusNotFound {
			t.Errorf("stream-url of a deleted recording: %s, want 404", resp)
		}

		// Audio removed from storage behind a live row is not found either.
		lost := h.addRecording(t, tenant.Account.ID, testAudio(64), 3)
		path = h.linkPath(t, tenant.OwnerKey, lost.PublicID)
		if err := h.audio.Delete(ctx, lost.StorageKey); err != nil {
			t.Fatal(err)
		}
		if resp := h.api.Do(t, "", "GET", path, nil); resp.Status != http.StatusNotFound {
			t.Errorf("link to audio no longer stored: %s, want 404", resp)
		}
	})
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRecordingTranscript(t *testing.T) {
	h := newRecordingHarness(t, time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC))
	ctx := context.Background()
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	other := apitest.NewTenant(t, h.store, plans.Business)

	plain := h.addRecording(t, tenant.Account.ID, testAudio(10), 30)
	done := h.addRecording(t, tenant.Account.ID, testAudio(10), 130)
	pending := h.addRecording(t, tenant.Account.ID, testAudio(10), 20)
	foreign := h.addRecording(t, other.Account.ID, testAudio(10), 30)

	var transcriptID int64
	if err := storetest.SQL(t, h.store).QueryRow(ctx, `INSERT INTO transcripts (account_id, recording_id, status, summary_status, text, language,
			minutes, rated_amount_pence, summary, intent, sentiment, urgency, action_items, callback_number)
		VALUES ($1, $2, 'completed', 'completed', 'Hello, the boiler is leaking. Can someone come today?', 'en-GB',
			3, 15, 'Boiler leak; wants a visit today.', 'book_repair', 'negative', 'high',
			ARRAY['Call back about the boiler', 'Book a visit'], '+447700900123') RETURNING id`,
		tenant.Account.ID, done.ID).Scan(&transcriptID); err != nil {
		t.Fatal(err)
	}
	// Stored out of order; the answer follows position.
	for _, sg := range []struct {
		pos        int
		start, end float64
		speaker    string
		text       string
	}{
		{2, 7.25, 9.5, "agent", "Can someone come today?"},
		{0, 0, 2.5, "caller", "Hello,"},
		{1, 2.5, 7.25, "caller", "the boiler is leaking."},
	} {
		if _, err := storetest.SQL(t, h.store).Exec(ctx, `INSERT INTO transcript_segments (transcript_id, position, start_seconds, end_seconds, speaker, text)
			VALUES ($1, $2, $3, $4, $5, $6)`, transcriptID, sg.pos, sg.start, sg.end, sg.speaker, sg.text); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := storetest.SQL(t, h.store).Exec(ctx, `INSERT INTO transcripts (account_id, recording_id) VALUES ($1, $2)`, tenant.Account.ID, pending.ID); err != nil {
		t.Fatal(err)
	}

	t.Run("not transcribed is {}", func(t *testing.T) {
		resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/recordings/"+plain.PublicID+"/transcript", nil)
		if resp.Status != http.StatusOK || strings.TrimSpace(string(resp.Body)) != "{}" {
			t.Fatalf("got %s, want 200 {}", resp)
		}
	})

	t.Run("a transcript with its segments in order", func(t *testing.T) {
		resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/recordings/"+done.PublicID+"/transcript", nil)
		if resp.Status != http.StatusOK {
			t.Fatalf("got %s", resp)
		}
		var got map[string]any
		resp.JSON(t, &got)
		want := map[string]any{
			"status": "completed", "text": "Hello, the boiler is leaking. Can someone come today?", "language": "en-GB",
			"minutes": 3.0, "rated_amount_pence": 15.0, "summary_status": "completed", "summary": "Boiler leak; wants a visit today.",
			"intent": "book_repair", "sentiment": "negative", "urgency": "high",
			"action_items": []any{"Call back about the boiler", "Book a visit"}, "callback_number": "+447700900123",
			"segments": []any{
				map[string]any{"start": 0.0, "end": 2.5, "speaker": "caller", "text": "Hello,"},
				map[string]any{"start": 2.5, "end": 7.25, "speaker": "caller", "text": "the boiler is leaking."},
				map[string]any{"start": 7.25, "end": 9.5, "speaker": "agent", "text": "Can someone come today?"},
			},
		}
		if g, w := jsonNumber(got), jsonNumber(want); g != w {
			t.Errorf("transcript\n got  %s\n want %s", g, w)
		}
	})

	t.Run("a pending transcript has nulls and empty lists", func(t *testing.T) {
		got := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/recordings/"+pending.PublicID+"/transcript", nil).Map(t)
		want := map[string]any{"status": "pending", "summary_status": "pending", "text": "", "language": "", "minutes": 0.0,
			"rated_amount_pence": 0.0, "summary": nil, "intent": nil, "sentiment": nil, "urgency": nil, "callback_number": nil,
			"action_items": []any{}, "segments": []any{}}
		if g, w := jsonNumber(got), jsonNumber(want); g != w {
			t.Errorf("transcript\n got  %s\n want %s", g, w)
		}
	})

	t.Run("another account's, unknown and deleted recordings are not found", func(t *testing.T) {
		if err := deleteRecording(t, h.store, tenant.Account.ID, done.PublicID, h.clock.Now()); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{foreign.PublicID, "rec_unknown", done.PublicID} {
			if resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/recordings/"+id+"/transcript", nil); resp.Status != http.StatusNotFound {
				t.Errorf("transcript of %s: %s, want 404", id, resp)
			}
		}
	})
}

func TestRecordingTranscriptEstimate(t *testing.T) {
	// 23:30 UTC on 31 March is 00:30 on 1 April in London (summer time): the account's
	// month is April and its day is 1 April.
	h := newRecordingHarness(t, time.Date(2026, 3, 31, 23, 30, 0, 0, time.UTC))
	ctx := context.Background()
	tenant := apitest.NewTenant(t, h.store, plans.Team, plans.AddonIntegrations) // 60 allowance minutes
	other := apitest.NewTenant(t, h.store, plans.Business)
	acct := tenant.Account.ID

	rec := h.addRecording(t, acct, testAudio(100), 150)  // 3 minutes
	long := h.addRecording(t, acct, testAudio(100), 601) // 11 minutes
	silent := h.addRecording(t, acct, testAudio(100), 0) // audio but no length: 1 minute
	foreign := h.addRecording(t, other.Account.ID, testAudio(10), 60)

	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := storetest.SQL(t, h.store).Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	setAccount := func(bundle int, balance int64, limit int64) {
		t.Helper()
		exec(`UPDATE accounts SET bundle_minutes = $2, balance_pence = $3, daily_spend_limit_pence = $4,
			transcription_rate_pence_per_min = 7 WHERE id = $1`, acct, bundle, balance, limit)
	}
	setUsed := func(minutes int) {
		t.Helper()
		exec(`INSERT INTO transcription_allowance_usage (account_id, month, minutes_used) VALUES ($1, '2026-04-01', $2)
			ON CONFLICT (account_id, month) DO UPDATE SET minutes_used = excluded.minutes_used`, acct, minutes)
	}
	// Last month's use and yesterday's spend (in London) do not count.
	exec(`INSERT INTO transcription_allowance_usage (account_id, month, minutes_used) VALUES ($1, '2026-03-01', 60)`, acct)
	addCharge := func(publicID string, amount int64, day, status string) {
		t.Helper()
		var cid int64
		if err := storetest.SQL(t, h.store).QueryRow(ctx, `INSERT INTO calls (account_id, public_id, from_e164, to_e164, disposition, started_at)
			VALUES ($1, $2, '+447700900001', '+442079460001', 'answered', now()) RETURNING id`, acct, "call_"+publicID).Scan(&cid); err != nil {
			t.Fatal(err)
		}
		exec(`INSERT INTO transcription_charges (account_id, public_id, call_id, recording_id, minutes, amount_pence, spend_day, status)
			VALUES ($1, $2, $3, $4, 1, $5, $6, $7)`, acct, publicID, cid, rec.ID, amount, day, status)
	}
	addCharge("chg_yesterday", 4000, "2026-03-31", "charged")
	addCharge("chg_refunded", 4000, "2026-04-01", "refunded")

	estimate := func(t *testing.T, r store.Recording) map[string]any {
		t.Helper()
		resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/recordings/"+r.PublicID+"/transcript/estimate", nil)
		if resp.Status != http.StatusOK {
			t.Fatalf("estimate: %s", resp)
		}
		return resp.Map(t)
	}
	check := func(t *testing.T, got, want map[string]any) {
		t.Helper()
		if g, w := jsonNumber(got), jsonNumber(want); g != w {
			t.Errorf("estimate\n got  %s\n want %s", g, w)
		}
	}
	est := func(minutes, cost, bundle, balance float64, within, affordable bool) map[string]any {
		return map[string]any{"available": true, "minutes": minutes, "cost_pence": cost, "rate_pence_per_min": 7.0,
			"within_allowance": within, "bundle_minutes": bundle, "balance_pence": balance, "affordable": affordable,
			"existing_status": nil}
	}

	t.Run("allowance covers it", func(t *testing.T) {
		setAccount(0, 0, 5000)
		setUsed(57)
		check(t, estimate(t, rec), est(3, 0, 0, 0, true, true))
	})
	t.Run("this month's allowance is fresh", func(t *testing.T) {
		exec(`DELETE FROM transcription_allowance_usage WHERE account_id = $1 AND month = '2026-04-01'`, acct)
		check(t, estimate(t, long), est(11, 0, 0, 0, true, true))
	})
	t.Run("bundle covers the rest", func(t *testing.T) {
		setAccount(2, 0, 5000)
		setUsed(58)
		check(t, estimate(t, rec), est(3, 0, 2, 0, false, true))
	})
	t.Run("bundle covers all", func(t *testing.T) {
		setAccount(20, 0, 5000)
		setUsed(60)
		check(t, estimate(t, long), est(11, 0, 20, 0, false, true))
	})
	t.Run("balance pays the rest", func(t *testing.T) {
		setAccount(4, 1000, 5000)
		setUsed(55)
		// 5 allowance + 4 bundle + 2 at 7p.
		check(t, estimate(t, long), est(11, 14, 4, 1000, false, true))
	})
	t.Run("balance too small", func(t *testing.T) {
		setAccount(0, 76, 5000)
		setUsed(60)
		check(t, estimate(t, long), est(11, 77, 0, 76, false, false))
		setAccount(0, 77, 5000)
		check(t, estimate(t, long), est(11, 77, 0, 77, false, true))
	})
	t.Run("daily spending limit", func(t *testing.T) {
		setAccount(0, 100000, 5000)
		setUsed(60)
		addCharge("chg_today", 4923, "2026-04-01", "charged") // 4923 + 77 = 5000: still within
		check(t, estimate(t, long), est(11, 77, 0, 100000, false, true))
		addCharge("chg_today2", 1, "2026-04-01", "charged") // 5001 would pass it
		check(t, estimate(t, long), est(11, 77, 0, 100000, false, false))
		// Within the allowance nothing is spent, so the limit does not stand in the way.
		setUsed(0)
		check(t, estimate(t, long), est(11, 0, 0, 100000, true, true))
	})
	t.Run("a recording with audio but no length is one minute", func(t *testing.T) {
		setAccount(0, 100000, 100000)
		setUsed(60)
		check(t, estimate(t, silent), est(1, 7, 0, 100000, false, true))
	})
	t.Run("existing transcript status", func(t *testing.T) {
		setAccount(0, 0, 5000)
		setUsed(0)
		exec(`INSERT INTO transcripts (account_id, recording_id, status) VALUES ($1, $2, 'completed')`, acct, rec.ID)
		want := est(3, 0, 0, 0, true, true)
		want["existing_status"] = "completed"
		check(t, estimate(t, rec), want)
	})
	t.Run("not available when transcription is switched off", func(t *testing.T) {
		exec(`UPDATE accounts SET transcription_disabled = true WHERE id = $1`, acct)
		got := estimate(t, silent)
		if got["available"] != false {
			t.Errorf("available = %v, want false", got["available"])
		}
		exec(`UPDATE accounts SET transcription_disabled = false WHERE id = $1`, acct)
		if got := estimate(t, silent); got["available"] != true {
			t.Errorf("available = %v, want true", got["available"])
		}
	})
	t.Run("another account's, unknown and deleted recordings are not found", func(t *testing.T) {
		if err := deleteRecording(t, h.store, acct, long.PublicID, h.clock.Now()); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{foreign.PublicID, "rec_unknown", long.PublicID} {
			if resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/recordings/"+id+"/transcript/estimate", nil); resp.Status != http.StatusNotFound {
				t.Errorf("estimate of %s: %s, want 404", id, resp)
			}
		}
	})
}

func TestRecordingOperationsNeedIntegrations(t *testing.T) {
	h := newRecordingHarness(t, time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC))
	team := apitest.NewTenant(t, h.store, plans.Team)
	rec := h.addRecording(t, team.Account.ID, testAudio(10), 30)
	member := team.NewMember(t, h.store, true, false)
	memberKey := apitest.NewKey(t, h.store, member.ID)
	for _, suffix := range []string{"/stream-url", "/transcript", "/transcript/estimate"} {
		path := "/v1/recordings/" + rec.PublicID + suffix
		resp := h.api.Do(t, team.OwnerKey, "GET", path, nil)
		if resp.Status != http.StatusForbidden || resp.Map(t)["reason"] != plans.ReasonAddonRequired {
			t.Errorf("GET %s on Team without the add-on: %s, want 403 addon_required", path, resp)
		}
		if resp := h.api.Do(t, "", "GET", path, nil); resp.Status != http.StatusUnauthorized {
			t.Errorf("GET %s without a key: %s, want 401", path, resp)
		}
	}
	// With the add-on, a member's read-only key is enough.
	if _, err := h.store.UpdateAccount(context.Background(), team.Account.ID, store.AccountSettings{Addons: &[]string{plans.AddonIntegrations}}); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"/stream-url", "/transcript", "/transcript/estimate"} {
		if resp := h.api.Do(t, memberKey, "GET", "/v1/recordings/"+rec.PublicID+suffix, nil); resp.Status != http.StatusOK {
			t.Errorf("GET %s with a member's read key: %s, want 200", suffix, resp)
		}
	}
}

func TestRecordingAudioRouteIsOutsideKeyAuth(t *testing.T) {
	h := newRecordingHarness(t, time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC))
	var doc struct {
		Paths map[string]map[string]struct {
			Security   []map[string][]string       `json:"security"`
			Parameters []struct{ Name, In string } `json:"parameters"`
			Responses  map[string]json.RawMessage  `json:"responses"`
		} `json:"paths"`
	}
	h.api.DoUnchecked(t, "", "GET", "/v1/openapi.json", nil).JSON(t, &doc)
	op, ok := doc.Paths["/media/recordings/{recording}"]["get"]
	if !ok {
		t.Fatalf("the audio route is not described")
	}
	if len(op.Security) != 0 {
		t.Errorf("audio route security = %v, want none (the link is signed)", op.Security)
	}
	for _, code := range []string{"200", "206", "403", "404", "416"} {
		if _, ok := op.Responses[code]; !ok {
			t.Errorf("audio route does not describe %s", code)
		}
	}
	est := doc.Paths["/recordings/{recording}/transcript/estimate"]["get"]
	if len(est.Security) == 0 {
		t.Errorf("estimate route has no security")
	}
}

// An id PostgreSQL text cannot hold (a NUL byte, invalid UTF-8) names no recording: 404, not 500.
func TestRecordingUnstorableIDIsNotFound(t *testing.T) {
	h := newRecordingHarness(t, time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC))
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	for _, id := range []string{"%00", "rec%00x", "%FF"} {
		for _, op := range []string{"/stream-url", "/transcript", "/transcript/estimate"} {
			path := "/v1/recordings/" + id + op
			if resp := h.api.Do(t, tenant.OwnerKey, "GET", path, nil); resp.Status != 404 {
				t.Errorf("GET %s: %s, want 404", path, resp)
			}
		}
	}
}
