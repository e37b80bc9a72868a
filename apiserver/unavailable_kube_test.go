package apiserver_test

import (
	"encoding/json"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/kubeapi"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/serve"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// With kube-apiserver frozen (it accepts connections and never answers) or gone (connections
// refused), every webhook route answers 503 {message} with Retry-After within the client's
// deadline, and the routes that never touch Kubernetes keep answering. The real freeze
// (SIGSTOP of kube-apiserver) is in test/e2e/faults.
func TestWebhookRoutesAnswer503WhenKubeAPIServerIsUnavailable(t *testing.T) {
	frozen, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer frozen.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := frozen.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	goneAddr := gone.Addr().String()
	gone.Close()

	const deadline = 500 * time.Millisecond
	for name, addr := range map[string]string{"frozen": frozen.Addr().String(), "gone": goneAddr} {
		t.Run(name, func(t *testing.T) {
			kube, err := kubeapi.NewClient(&rest.Config{Host: "http://" + addr}, serve.Scheme(), deadline)
			if err != nil {
				t.Fatal(err)
			}
			st := storetest.NewStore(t)
			srv := httptest.NewUnstartedServer(nil)
			srv.Config.Handler = apiserver.New(apiserver.Config{BaseURL: "http://" + srv.Listener.Addr().String(),
				Clock: clock.RealClock{}, Log: logr.Discard(), Kube: kube}, st, apiserver.Webhooks(apiserver.WebhooksConfig{}))
			srv.Start()
			t.Cleanup(srv.Close)
			api := apitest.New(srv.URL)
			key := apitest.NewTenant(t, st, plans.Business, plans.AddonIntegrations).OwnerKey
			// The first checked call loads the OpenAPI validator; keep that out of the timings.
			if resp := api.Do(t, key, "GET", "/v1/me", nil); resp.Status != 200 {
				t.Fatalf("GET /v1/me: %s", resp)
			}
			for _, rq := range []struct {
				method, path string
				body         any
			}{
				{"GET", "/v1/webhooks", nil},
				{"POST", "/v1/webhooks", map[string]any{"name": "CRM", "url": "https://93.184.216.34/hook", "events": []string{"call.ended"}}},
				{"GET", "/v1/webhooks/whep-0123456789abcdef/deliveries", nil},
				{"DELETE", "/v1/webhooks/whep-0123456789abcdef", nil},
			} {
				start := time.Now()
				resp := api.Do(t, key, rq.method, rq.path, rq.body)
				took := time.Since(start)
				t.Logf("%s %s: %d in %s", rq.method, rq.path, resp.Status, took)
				var body struct {
					Message string `json:"message"`
				}
				if resp.Status != 503 || resp.Header.Get("Retry-After") == "" || json.Unmarshal(resp.Body, &body) != nil || body.Message == "" {
					t.Errorf("%s %s: %s", rq.method, rq.path, resp)
				}
				// The client's discovery (once) and the call each get the deadline; slack for a loaded machine.
				if took > 4*deadline+time.Second {
					t.Errorf("%s %s took %s with a kube-apiserver deadline of %s", rq.method, rq.path, took, deadline)
				}
			}
			if resp := api.Do(t, key, "GET", "/v1/me", nil); resp.Status != 200 {
				t.Errorf("GET /v1/me with kube-apiserver %s: %s", name, resp)
			}
		})
	}
}
