package seed

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// BulkOptions shape bulk call history.
type BulkOptions struct {
	// Now is the newest call's time; calls spread over the History before it.
	Now     time.Time
	History time.Duration
	// TranscribedEvery gives every n-th call a recording and a completed transcript with a
	// sentiment and urgency (0: none), so the sentiment and urgency filters have data.
	TranscribedEvery int
	// Batch is rows per COPY statement (default 100,000).
	Batch    int
	Progress io.Writer
	Seed     uint64
}

// BulkCalls adds n calls to an account with PostgreSQL's COPY, spread over numberIDs, for
// benchmarks. The statement-level count triggers run once per COPY batch, so the call counts
// stay exact.
func BulkCalls(ctx context.Context, st store.BulkCalls, accountID int64, numberIDs []int64, n int, o BulkOptions) error {
	if o.History == 0 {
		o.History = 120 * 24 * time.Hour
	}
	if o.Batch == 0 {
		o.Batch = 100_000
	}
	rng := rand.New(rand.NewPCG(o.Seed, uint64(accountID)))
	dispositions := []string{"answered", "answered", "answered", "answered", "no-answer", "voicemail", "busy", "failed", "blocked"}
	names := []string{"", "", "Priya Shah", "Tom Baker", "Grace Okafor", "Ahmed Khan", "Lucy Evans", "Ola Adeyemi"}
	sentiments := []string{"positive", "neutral", "negative"}
	urgencies := []string{"low", "normal", "high"}
	prefix := store.NewPublicID(store.PrefixCall)
	for done := 0; done < n; {
		size := min(o.Batch, n-done)
		calls := make([]store.BulkCall, size)
		for i := range calls {
			num := numberIDs[rng.IntN(len(numberIDs))]
			started := o.Now.Add(-time.Duration(rng.Int64N(int64(o.History)))).Truncate(time.Second)
			d := dispositions[rng.IntN(len(dispositions))]
			duration := 0
			if d == "answered" || d == "voicemail" {
				duration = 20 + rng.IntN(600)
			}
			from := fmt.Sprintf("+4477009%05d", rng.IntN(100_000))
			calls[i] = store.BulkCall{AccountID: accountID, PublicID: fmt.Sprintf("%s%08d", prefix, done+i), NumberID: num,
				From: from, To: "+442079460000", CallerName: names[rng.IntN(len(names))], Disposition: d,
				Filtered: rng.IntN(25) == 0, StartedAt: started, EndedAt: started.Add(time.Duration(duration) * time.Second),
				DurationSeconds: duration, TalkSeconds: max(duration-10, 0), ForwardSeconds: max(duration-10, 0)}
		}
		if err := st.CopyCalls(ctx, calls); err != nil {
			return err
		}
		done += size
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "    account %d: %d of %d calls\n", accountID, done, n)
		}
	}
	if o.TranscribedEvery <= 0 {
		return nil
	}
	// Recordings and transcripts for every n-th answered call, set-based in the database.
	if err := st.AddBulkTranscripts(ctx, accountID, o.TranscribedEvery, sentiments, urgencies); err != nil {
		return fmt.Errorf("bulk transcripts: %w", err)
	}
	return st.AnalyzeCallTables(ctx)
}
