// Package simulate plays the telephony platform: it reports realistic calls, voicemails,
// texts and message slips to the ingestion API at a chosen rate, for demos and load tests.
package simulate

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/seed"
)

// Options configure a simulation.
type Options struct {
	// PlatformURL is the ingestion API's origin, e.g. http://127.0.0.1:8081.
	PlatformURL string
	Token       string
	// Rate is reports per second.
	Rate float64
	// Count stops after this many reports (0: until ctx ends).
	Count int
	// Progress receives a line every ten reports; nil is quiet.
	Progress io.Writer
	Clock    clock.WithTicker
	HTTP     *http.Client
	// Seed makes the traffic repeatable.
	Seed uint64
}

// Totals counts what was reported.
type Totals struct {
	Calls, Voicemails, Texts, Slips, Failures int
}

var callers = []string{"+447700900201", "+447700900202", "+447700900203", "+441632960204", "+447700900205", "+33612345679"}

// Run reports traffic until Count reports are sent or ctx ends.
func Run(ctx context.Context, o Options) (Totals, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Rate <= 0 {
		o.Rate = 1
	}
	var totals Totals
	numbers, err := listNumbers(ctx, o)
	if err != nil {
		return totals, err
	}
	if len(numbers) == 0 {
		return totals, fmt.Errorf("the platform has no live numbers to call; seed an account first (switchboard seed --demo)")
	}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed+1))
	audio := base64.StdEncoding.EncodeToString(seed.ToneWAV(2))
	ticker := o.Clock.NewTicker(time.Duration(float64(time.Second) / o.Rate))
	defer ticker.Stop()
	for i := 0; o.Count == 0 || i < o.Count; i++ {
		now := o.Clock.Now().UTC().Truncate(time.Second)
		to, from := numbers[rng.IntN(len(numbers))], callers[rng.IntN(len(callers))]
		var path string
		var body any
		switch k := rng.IntN(20); {
		case k < 14:
			path, body = "/platform/v1/calls", callReport(rng, i, to, from, now, audio, false)
			totals.Calls++
		case k < 17:
			path, body = "/platform/v1/calls", callReport(rng, i, to, from, now, audio, true)
			totals.Voicemails++
		case k < 19:
			path, body = "/platform/v1/texts", map[string]any{"to": to, "from": from, "body": "Hi, can someone call me back about a quote?", "received_at": now}
			totals.Texts++
		default:
			path, body = "/platform/v1/message-slips", map[string]any{"to": to, "from": from, "caller_name": "Sim Caller", "department": "Sales", "received_at": now}
			totals.Slips++
		}
		err := reportProgress(ctx, o, path, body)
		if err == nil {
			err = post(ctx, o, path, body)
		}
		if err != nil {
			if ctx.Err() != nil {
				return totals, nil
			}
			totals.Failures++
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "report %d failed: %v\n", i+1, err)
			}
		}
		if o.Progress != nil && (i+1)%10 == 0 {
			fmt.Fprintf(o.Progress, "%d reports: %d calls, %d voicemails, %d texts, %d message slips, %d failed\n",
				i+1, totals.Calls, totals.Voicemails, totals.Texts, totals.Slips, totals.Failures)
		}
		if o.Count != 0 && i+1 == o.Count {
			break
		}
		select {
		case <-ctx.Done():
			return totals, nil
		case <-ticker.C():
		}
	}
	return totals, nil
}

// reportProgress reports a call ringing (and answered, when it was) before its final report,
// as the platform does while the call is live (the live channel's call.ringing, call.answered).
func reportProgress(ctx context.Context, o Options, path string, body any) error {
	report, ok := body.(map[string]any)
	if path != "/platform/v1/calls" || !ok || report["disposition"] == "blocked" {
		return nil
	}
	progress := map[string]any{"platform_ref": report["platform_ref"], "to": report["to"], "from": report["from"],
		"started_at": report["started_at"], "state": "ringing"}
	if err := post(ctx, o, "/platform/v1/call-progress", progress); err != nil {
		return err
	}
	if report["disposition"] != "answered" {
		return nil
	}
	progress["state"], progress["answer"] = "answered", report["answer"]
	return post(ctx, o, "/platform/v1/call-progress", progress)
}

func callReport(rng *rand.Rand, i int, to, from string, now time.Time, audio string, voicemail bool) map[string]any {
	dispositions := []string{"answered", "answered", "answered", "no-answer", "busy", "blocked"}
	disposition := dispositions[rng.IntN(len(dispositions))]
	duration := 20 + rng.IntN(300)
	report := map[string]any{
		"platform_ref": fmt.Sprintf("sim-%d-%d", now.UnixNano(), i), "to": to, "from": from,
		"disposition": disposition, "started_at": now.Add(-time.Duration(duration) * time.Second),
		"duration_seconds": duration, "talk_seconds": 0,
	}
	switch {
	case voicemail:
		report["disposition"] = "voicemail"
		report["recording"] = map[string]any{"kind": "voicemail", "duration_seconds": duration / 4, "audio_base64": audio}
	case disposition == "answered":
		report["talk_seconds"] = duration - 10
		report["answer"] = map[string]any{"staff_member": "Alex", "department": "Service", "target_type": "staff", "target_label": "Alex's mobile"}
		report["recording"] = map[string]any{"kind": "call", "duration_seconds": duration - 10, "audio_base64": audio}
	}
	return report
}

func listNumbers(ctx context.Context, o Options) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(o.PlatformURL, "/")+"/platform/v1/numbers", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+o.Token)
	resp, err := o.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach the ingestion API: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("list numbers: %s", resp.Status)
	}
	var out struct {
		Numbers []string `json:"numbers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("list numbers: %w", err)
	}
	return out.Numbers, nil
}

func post(ctx context.Context, o Options, path string, body any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", strings.TrimRight(o.PlatformURL, "/")+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+o.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := o.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s %s: %s", path, resp.Status, msg)
	}
	return nil
}
