package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/testenv"
	"github.com/switchboard-dev/switchboard/test/support/txtest"
)

// documentedEngines is the example of docs/transcription.md "A self-hosted Whisper-class
// engine": its exported variables and the --speech-*/--summary-* flags of its serve command.
type documentedEngines struct {
	env   map[string]string
	flags []string
	value map[string]string
}

func readDocumentedEngines(t *testing.T) documentedEngines {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(configDir(t), "..", "docs", "transcription.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "\n## A self-hosted Whisper-class engine\n")
	if i < 0 {
		t.Fatal(`docs/transcription.md has no section "A self-hosted Whisper-class engine"`)
	}
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(doc[i:])
	if block == nil || !strings.Contains(block[1], "switchboard serve") {
		t.Fatal("the section's first sh block is not the serve example")
	}
	d := documentedEngines{env: map[string]string{}, value: map[string]string{}}
	for _, line := range strings.Split(block[1], "\n") {
		line, _, _ = strings.Cut(line, "#")
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "export "); ok {
			name, value, _ := strings.Cut(strings.TrimSpace(rest), "=")
			d.env[name] = value
		}
	}
	fields := strings.Fields(strings.ReplaceAll(block[1][strings.Index(block[1], "switchboard serve"):], "\\\n", " "))
	for k := 2; k < len(fields); k++ {
		name, ok := strings.CutPrefix(fields[k], "--")
		if !ok {
			t.Fatalf("serve argument %q is not a flag", fields[k])
		}
		value, inline := "", false
		if name, value, inline = strings.Cut(name, "="); !inline {
			k++
			value = fields[k]
		}
		d.flags = append(d.flags, "--"+name+"="+value)
		d.value[name] = value
	}
	serve := findServe(t)
	for _, f := range d.flags {
		if err := serve.ParseFlags([]string{f}); err != nil {
			t.Errorf("the documented %s: %v", f, err)
		}
	}
	for _, name := range []string{"speech-engine", "speech-url", "speech-model", "summary-engine", "summary-url", "summary-model"} {
		if d.value[name] == "" {
			t.Errorf("the example sets no --%s", name)
		}
	}
	for _, name := range []string{"SWITCHBOARD_SPEECH_API_KEY", "SWITCHBOARD_SUMMARY_API_KEY"} {
		if d.env[name] == "" {
			t.Errorf("the example exports no %s", name)
		}
	}
	return d
}

// standIn is a local server speaking the OpenAI API as a speech or chat server does: it
// checks the model and key it was configured with and answers with a fixed result.
type standIn struct {
	t      *testing.T
	model  string
	key    atomic.Value // string
	mu     sync.Mutex
	srv    *httptest.Server
	answer func(w http.ResponseWriter, r *http.Request)
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer "+s.key.Load().(string) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}`)
		return
	}
	s.answer(w, r)
}

// start serves on addr ("" for any free port).
func (s *standIn) start(addr string) {
	s.t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s)
	srv.Listener = ln
	srv.Start()
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
}

func (s *standIn) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		s.srv.Close()
		s.srv = nil
	}
}

func (s *standIn) addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv.Listener.Addr().String()
}

const (
	standInText     = "Hello, it's Sam. My boiler has stopped and there's no hot water. Please call me back on oh one six one, four nine six, oh double five five."
	standInCallback = "+441614960555"
)

// The documented self-hosted configuration, end to end: serve runs with the doc's flags and
// variables, against stand-ins of a faster-whisper server and a chat server.
func TestServeWithDocumentedSelfHostedEngines(t *testing.T) {
	ctx := context.Background()
	d := readDocumentedEngines(t)

	speech := &standIn{t: t, model: d.value["speech-model"]}
	speech.key.Store(d.env["SWITCHBOARD_SPEECH_API_KEY"])
	speech.answer = func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/transcriptions" {
			http.Error(w, `{"error":{"message":"no route"}}`, http.StatusNotFound)
			return
		}
		f, _, err := r.FormFile("file")
		if err != nil {
			http.Error(w, `{"error":{"message":"no file"}}`, http.StatusBadRequest)
			return
		}
		audio, _ := io.ReadAll(f)
		if r.FormValue("model") != speech.model || r.FormValue("response_format") != "verbose_json" || !bytes.HasPrefix(audio, []byte("RIFF")) {
			http.Error(w, `{"error":{"message":"unexpected request"}}`, http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, `{"task":"transcribe","language":"english","duration":9.5,"text":" `+standInText+`",
			"segments":[{"id":0,"start":0.0,"end":4.2,"text":" Hello, it's Sam. My boiler has stopped and there's no hot water.",
			"words":[{"start":0.0,"end":0.4,"word":" Hello,"},{"start":0.5,"end":0.9,"word":" it's"}]},
			{"id":1,"start":4.2,"end":9.5,"text":" Please call me back on oh one six one, four nine six, oh double five five.",
			"words":[{"start":4.2,"end":4.6,"word":" Please"}]}]}`)
	}
	chat := &standIn{t: t, model: d.value["summary-model"]}
	chat.key.Store(d.env["SWITCHBOARD_SUMMARY_API_KEY"])
	chat.answer = func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model          string `json:"model"`
			ResponseFormat struct {
				Type string `json:"type"`
			} `json:"response_format"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != chat.model ||
			req.ResponseFormat.Type != "json_schema" || len(req.Messages) != 2 || !strings.Contains(req.Messages[1].Content, "boiler") {
			http.Error(w, `{"error":{"message":"unexpected request"}}`, http.StatusBadRequest)
			return
		}
		summary := `{"summary":"Sam's boiler has stopped; no hot water.","intent":"repair_request","sentiment":"negative",` +
			`"urgency":"high","action_items":["Call Sam back"],"callback_number":"0161 496 0555"}`
		b, _ := json.Marshal(map[string]any{"object": "chat.completion", "model": chat.model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": summary}}}})
		_, _ = w.Write(b)
	}
	speech.start("")
	chat.start("")
	t.Cleanup(speech.stop)
	t.Cleanup(chat.stop)

	// The doc's flags, with the servers' hosts pointed at the stand-ins.
	var engineArgs []string
	for _, f := range d.flags {
		f = regexp.MustCompile(`//[^/]+/`).ReplaceAllStringFunc(f, func(host string) string {
			if strings.HasPrefix(f, "--speech-url=") {
				return "//" + speech.addr() + "/"
			}
			return "//" + chat.addr() + "/"
		})
		engineArgs = append(engineArgs, f)
	}

	cp := testenv.ControlPlane(t)
	home := t.TempDir()
	kubeconfig := filepath.Join(home, "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	dbURL := storetest.NewDatabaseURL(t)
	st := storetest.Open(t, dbURL)
	recDir := filepath.Join(home, "recordings")
	recordings, err := recordingstore.NewLocal(recDir)
	if err != nil {
		t.Fatal(err)
	}
	api, probes := testenv.FreeAddr(t), testenv.FreeAddr(t)
	args := append([]string{"serve", "--kubeconfig", kubeconfig, "--public-base-url", "http://" + api,
		"--api-bind-address", api, "--platform-bind-address", testenv.FreeAddr(t), "--metrics-bind-address", "0",
		"--health-probe-bind-address", probes, "--recordings-dir", recDir, "--leader-elect=false"}, engineArgs...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = []string{runAsSwitchboard + "=1", "PATH=" + os.Getenv("PATH"), "HOME=" + home, "DATABASE_URL=" + dbURL,
		"SWITCHBOARD_LINK_SIGNING_KEY=" + strings.Repeat("s", 48)}
	for name, value := range d.env {
		cmd.Env = append(cmd.Env, name+"="+value)
	}
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		err := <-exited
		if t.Failed() {
			t.Logf("serve (%v) wrote:\n%s", err, logs.String())
		}
	})
	waitReady(t, "http://"+probes+"/readyz", exited)

	kube := testenv.Client(t, cp)
	pub := apitest.New("http://" + api)
	tenant := apitest.NewTenant(t, st, plans.Business)
	rate := 5
	txtest.Fund(t, st, tenant.Account.ID, 1000, store.AccountSettings{TranscriptionRatePencePerMin: &rate})
	recorded := func() txtest.Call {
		c := txtest.RecordedCall(t, st, tenant.Account.ID, txtest.CallOptions{Seconds: 10})
		if err := recordings.Put(ctx, c.StorageKey, strings.NewReader("RIFF....WAVEfmt telephone audio")); err != nil {
			t.Fatal(err)
		}
		return c
	}
	transcribe := func(c txtest.Call) {
		if resp := pub.Do(t, tenant.OwnerKey, "POST", "/v1/calls/"+c.PublicID+"/transcribe", nil); resp.Status != http.StatusAccepted {
			t.Fatalf("transcribe: %s", resp)
		}
	}
	transcript := func(c txtest.Call, want string, within time.Duration) map[string]any {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			tr := pub.Do(t, tenant.OwnerKey, "GET", "/v1/recordings/"+c.RecordingPublicID+"/transcript", nil).Map(t)
			// A completed transcript is summarized next.
			done := tr["status"] == want && (want != "completed" || tr["summary_status"] != "pending")
			if done || time.Now().After(deadline) {
				if !done {
					t.Fatalf("transcript status %v after %s, want %s: %v", tr["status"], within, want, tr)
				}
				return tr
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	job := func(c txtest.Call) switchboardv1alpha1.TranscriptionJob {
		t.Helper()
		var jobs switchboardv1alpha1.TranscriptionJobList
		if err := kube.List(ctx, &jobs, client.InNamespace(tenancy.Namespace(tenant.Account.PublicID))); err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs.Items {
			if j.Spec.CallPublicID == c.PublicID {
				return j
			}
		}
		t.Fatalf("no TranscriptionJob of call %s", c.PublicID)
		return switchboardv1alpha1.TranscriptionJob{}
	}

	t.Run("the transcript's segments and the summary come back through the API", func(t *testing.T) {
		c := recorded()
		transcribe(c)
		tr := transcript(c, "completed", time.Minute)
		if tr["summary_status"] != "completed" || tr["callback_number"] != standInCallback || tr["intent"] != "repair_request" ||
			tr["urgency"] != "high" || tr["sentiment"] != "negative" || tr["language"] != "en" {
			t.Errorf("transcript %v", tr)
		}
		segs, _ := tr["segments"].([]any)
		if len(segs) != 2 {
			t.Fatalf("segments %v", tr["segments"])
		}
		first, second := segs[0].(map[string]any), segs[1].(map[string]any)
		if first["start"] != 0.0 || first["end"] != 4.2 || first["text"] != "Hello, it's Sam. My boiler has stopped and there's no hot water." ||
			second["start"] != 4.2 || second["end"] != 9.5 || !strings.HasPrefix(second["text"].(string), "Please call me back") {
			t.Errorf("segments %v", segs)
		}
	})

	t.Run("a speech server that is down: the job retries and completes once it is back", func(t *testing.T) {
		addr := speech.addr()
		speech.stop()
		c := recorded()
		transcribe(c)
		deadline := time.Now().Add(time.Minute)
		for {
			j := job(c)
			if j.Status.Attempts >= 1 && j.Status.Phase != switchboardv1alpha1.TranscriptionJobPhaseFailed {
				cond := findCondition(j, switchboardv1alpha1.ConditionTranscribed)
				if cond != nil && cond.Reason == switchboardv1alpha1.ReasonRetrying {
					if !strings.Contains(cond.Message, "connection refused") {
						t.Errorf("retrying condition %q does not name the cause", cond.Message)
					}
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the job did not retry: %+v", j.Status)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if tr := pub.Do(t, tenant.OwnerKey, "GET", "/v1/recordings/"+c.RecordingPublicID+"/transcript", nil).Map(t); tr["status"] != "pending" {
			t.Errorf("transcript while retrying: %v", tr)
		}
		speech.start(addr)
		tr := transcript(c, "completed", 90*time.Second)
		if tr["callback_number"] != standInCallback {
			t.Errorf("transcript after the retry %v", tr)
		}
	})

	t.Run("a 401 from the chat server: the transcript is delivered, its summary failed", func(t *testing.T) {
		chat.key.Store("rotated-on-the-server")
		defer chat.key.Store(d.env["SWITCHBOARD_SUMMARY_API_KEY"])
		c := recorded()
		transcribe(c)
		tr := transcript(c, "completed", time.Minute)
		if tr["summary_status"] != "failed" || tr["callback_number"] != nil || len(tr["segments"].([]any)) != 2 {
			t.Errorf("transcript %v", tr)
		}
	})

	t.Run("a 401 from the speech server fails the job with its message, refunded, the key nowhere", func(t *testing.T) {
		speech.key.Store("rotated-on-the-server")
		before := txtest.MoneyOf(t, st, tenant.Account.ID).BalancePence
		c := recorded()
		transcribe(c)
		transcript(c, "failed", time.Minute)
		j := job(c)
		if j.Status.Phase != switchboardv1alpha1.TranscriptionJobPhaseFailed || !j.Status.Refunded ||
			!strings.Contains(j.Status.FailureReason, "answered 401: Incorrect API key provided") {
			t.Errorf("job status %+v", j.Status)
		}
		if after := txtest.MoneyOf(t, st, tenant.Account.ID).BalancePence; after != before {
			t.Errorf("balance %d after the failed job, %d before", after, before)
		}
		status, _ := json.Marshal(j.Status)
		for _, key := range d.env {
			if strings.Contains(string(status), key) || strings.Contains(logs.String(), key) {
				t.Errorf("the key %q is in the job status or serve's log", key)
			}
		}
	})
}

func findCondition(j switchboardv1alpha1.TranscriptionJob, typ string) *metav1.Condition {
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == typ {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

func waitReady(t *testing.T, url string, exited <-chan error) {
	t.Helper()
	plain := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if resp, err := plain.Get(url); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("serve exited before it was ready: %v", err)
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("serve not ready within 2 minutes")
		}
	}
}

// syncBuffer is serve's output, written by the process's pipes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
