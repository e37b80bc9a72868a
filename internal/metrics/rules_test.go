package metrics

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"
)

const (
	alertsFile     = "../../config/prometheus/alerts.yaml"
	alertsTestFile = "../../config/prometheus/alerts_test.yaml"
)

// ruleGroups extracts the PrometheusRule's spec.groups as a Prometheus rules file.
func ruleGroups(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	// Strict: a misspelt field would otherwise be dropped without a word.
	var rule struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   any    `json:"metadata"`
		Spec       struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(raw, &rule); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	if rule.Kind != "PrometheusRule" || len(rule.Spec.Groups) == 0 {
		t.Fatalf("%s is not a PrometheusRule with groups", alertsFile)
	}
	out, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: run hack/ensure-tools.sh (Debian's prometheus package ships it)")
	}
	return path
}

// The shipped alert rules are valid Prometheus rules (promtool check rules) and fire as
// their unit tests expect (promtool test rules, config/prometheus/alerts_test.yaml).
func TestAlertRules(t *testing.T) {
	bin := promtool(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "alerts.rules.yaml"), ruleGroups(t), 0o600); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(alertsTestFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "alerts.rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// metricNames are the names this package defines.
func metricNames(t *testing.T) map[string]bool {
	t.Helper()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for _, c := range collectors {
		ch := make(chan *prometheus.Desc, 16)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			m := fqName.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("no name in %s", d)
			}
			names[m[1]] = true
		}
	}
	return names
}

// Every switchboard_ metric the alerts use exists (a rename would silence an alert), and the
// operators' metrics table (docs/operations.md) lists every metric.
func TestAlertsAndMetricsTableName(t *testing.T) {
	names := metricNames(t)
	used := regexp.MustCompile(`switchboard_[a-z_]+`).FindAllString(string(ruleGroups(t)), -1)
	if len(used) == 0 {
		t.Fatal("the alerts use no switchboard_ metric")
	}
	for _, n := range used {
		base := n
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(n, suffix); ok && names[b] {
				base = b
			}
		}
		if !names[base] {
			t.Errorf("the alerts use %s, which is not defined", n)
		}
	}
	table, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for n := range names {
		if !strings.Contains(string(table), "`"+n+"`") {
			t.Errorf("docs/operations.md (Metrics and alerts) does not list %s", n)
		}
	}
}
