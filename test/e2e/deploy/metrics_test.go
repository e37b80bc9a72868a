package deploy

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/serve"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/testenv"
)

func TestMain(m *testing.M) {
	if os.Getenv(runAsSwitchboard) != "" {
		os.Exit(switchboardMain())
	}
	os.Exit(storetest.Main(m))
}

// serviceAccountToken creates a service account and returns a token the kube-apiserver issues for it.
func serviceAccountToken(ctx context.Context, t *testing.T, kube kubernetes.Interface, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	if _, err := kube.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// Secure metrics as serve runs them (serve.Run with serve's defaults): HTTPS, and only for tokens the kube-apiserver
// authenticates and authorizes for GET /metrics, with the shipped metrics-reader role.
func TestSecureMetricsAnswerOnlyAuthorizedTokens(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp := testenv.ControlPlane(t)
	kube := kubernetes.NewForConfigOrDie(cp.Config)

	reader := &rbacv1.ClusterRole{}
	b, err := os.ReadFile(filepath.Join(configDir(t), "rbac", "metrics_reader_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, reader); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, reader, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: "default"}}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	allowed := serviceAccountToken(ctx, t, kube, "prometheus")
	denied := serviceAccountToken(ctx, t, kube, "someone-else")

	metricsAddr := testenv.FreeAddr(t)
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Options{DatabaseURL: storetest.NewDatabaseURL(t), APIAddr: testenv.FreeAddr(t), ProbeAddr: testenv.FreeAddr(t),
			MetricsAddr: metricsAddr, MetricsSecure: true,
			RequestsPerMinute: 60, RestConfig: cp.Config, Clock: clock.RealClock{}, Log: logr.Discard(),
			Recordings: recordingstore.Config{Dir: t.TempDir()}, LinkSigningKey: []byte(strings.Repeat("k", 32))})
	}()

	// The certificate is self-signed; what matters here is that it is TLS at all.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "https://"+metricsAddr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if status, _ := get(allowed); status != 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Run ended before serving metrics: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("metrics not served within a minute")
		}
	}

	if status, body := get(allowed); status != http.StatusOK || !strings.Contains(body, "controller_runtime_") {
		t.Errorf("a token bound to metrics-reader: %d %.200s", status, body)
	}
	if status, _ := get(""); status != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", status)
	}
	// controller-runtime's filter answers 500 "Authentication failed" here: the TokenReview
	// of a malformed token comes back with an error, which the filter does not tell apart.
	if status, body := get("not-a-token"); status == http.StatusOK || status == 0 {
		t.Errorf("a token the kube-apiserver does not know: %d %.200s, want a refusal", status, body)
	}
	if status, _ := get(denied); status != http.StatusForbidden {
		t.Errorf("a service account without metrics-reader: %d, want 403", status)
	}
	plain, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + metricsAddr + "/metrics")
	if err == nil {
		_ = plain.Body.Close()
		if plain.StatusCode == http.StatusOK {
			t.Error("metrics answered plain HTTP")
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v on shutdown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not stop within 30 s of its context ending")
	}
}
