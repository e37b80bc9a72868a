package transcription_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/serve"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/internal/transcription"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/txtest"
)

// With a JobQueue, Start answers once the charge is committed and the job is created in the
// background; a full queue falls back to creating the job before Start returns.
func TestJobQueueCreatesJobsInTheBackground(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	clock := clocktesting.NewFakeClock(time.Date(2026, 6, 15, 11, 0, 0, 0, time.UTC))
	kube := fake.NewClientBuilder().WithScheme(serve.Scheme()).Build()
	tenant := apitest.NewTenant(t, st, plans.Business)
	svc := &transcription.Service{Store: st, Kube: kube, Clock: clock, Log: logr.Discard()}
	svc.Queue = transcription.NewJobQueue(svc, 1, 1)

	start := func(c txtest.Call) *store.TranscriptionCharge {
		t.Helper()
		res, err := svc.Start(ctx, store.TranscribeRequest{AccountID: tenant.Account.ID, CallPublicID: c.PublicID})
		if err != nil || res.Outcome != store.TranscribeStarted {
			t.Fatalf("start: %+v %v", res, err)
		}
		return res.Charge
	}
	jobExists := func(ch *store.TranscriptionCharge) bool {
		err := kube.Get(ctx, types.NamespacedName{Namespace: tenancy.Namespace(tenant.Account.PublicID), Name: transcription.JobName(ch.PublicID)},
			&switchboardv1alpha1.TranscriptionJob{})
		return err == nil
	}

	// The queue is not running yet: the first charge waits in it, the second finds it full and
	// is created at once.
	queued := start(txtest.RecordedCall(t, st, tenant.Account.ID, txtest.CallOptions{}))
	direct := start(txtest.RecordedCall(t, st, tenant.Account.ID, txtest.CallOptions{}))
	if jobExists(queued) || !jobExists(direct) {
		t.Fatalf("before the queue runs: queued job exists %v, direct job exists %v", jobExists(queued), jobExists(direct))
	}

	qctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = svc.Queue.Start(qctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for !jobExists(queued) {
		if time.Now().After(deadline) {
			t.Fatal("the queued job was never created")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		ch, err := st.GetTranscriptionCharge(ctx, queued.PublicID)
		if err != nil {
			t.Fatal(err)
		}
		if ch.JobCreatedAt != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("job_created_at was never set")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the queue did not stop with its context")
	}
}
