package deploy

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/switchboard-dev/switchboard/internal/cli"
	"github.com/switchboard-dev/switchboard/test/support/controlplane"
	"github.com/switchboard-dev/switchboard/test/support/testenv"
)

// operatorSecrets are the Secrets (name: keys) the operator creates; no manifest holds a
// secret value. docs/operations.md "Deploy" must name each of them.
var operatorSecrets = map[string][]string{
	"switchboard-database":     {"url"},
	"switchboard-link-signing": {"key"},
	"switchboard-platform":     {"token"},
	"switchboard-realtime":     {"secret"},
	"switchboard-s3":           {"access-key", "secret-key"}, // with config/components/s3-recordings
	// With config/components/openai-speech; optional, for servers that want a key.
	"switchboard-speech-engines": {"speech-api-key", "summary-api-key"},
}

const namespace = "switchboard-system"

// render builds a kustomization as `kustomize build` v5.8 does (krusty is that command's
// engine, the module version the Makefile's pinned binary is built from).
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs
}

func configDir(t *testing.T) string {
	t.Helper()
	root, err := controlplane.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "config")
}

// withComponents is config/ with the named components switched on, as the comments in
// config/default/kustomization.yaml tell an operator to.
func withComponents(t *testing.T, names ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "config")
	if err := os.CopyFS(dir, os.DirFS(configDir(t))); err != nil {
		t.Fatal(err)
	}
	k := filepath.Join(dir, "default", "kustomization.yaml")
	b, err := os.ReadFile(k)
	if err != nil {
		t.Fatal(err)
	}
	on := string(b)
	lines := []string{"components:"}
	for _, n := range names {
		lines = append(lines, "- ../components/"+n)
	}
	for _, line := range lines {
		if !strings.Contains(on, "\n#"+line+"\n") {
			t.Fatalf("config/default/kustomization.yaml no longer has the commented line %q", line)
		}
		on = strings.Replace(on, "\n#"+line+"\n", "\n"+line+"\n", 1)
	}
	if err := os.WriteFile(k, []byte(on), 0o600); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "default")
}

func TestConfigDefaultAppliesToAKubeAPIServer(t *testing.T) {
	ctx := context.Background()
	c := testenv.Client(t, testenv.ControlPlane(t))
	ns := &corev1.Namespace{}
	ns.Name = namespace
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	variants := map[string]struct {
		dir         string
		s3, engines bool
	}{
		"as shipped":         {dir: filepath.Join(configDir(t), "default")},
		"with s3-recordings": {dir: withComponents(t, "s3-recordings"), s3: true},
		"with openai-speech": {dir: withComponents(t, "openai-speech"), engines: true},
		"with both":          {dir: withComponents(t, "s3-recordings", "openai-speech"), s3: true, engines: true},
	}
	for name, v := range variants {
		t.Run(name, func(t *testing.T) {
			objs := render(t, v.dir)
			// Server-side apply, dry run: the kube-apiserver validates every field against
			// its schema (unknown fields too) and runs admission, and stores nothing. The
			// CRDs and the Namespace already exist, so apply rather than create.
			for _, u := range objs {
				err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.DryRunAll,
					client.FieldOwner("switchboard-manifest-test"), client.ForceOwnership)
				if err != nil {
					t.Errorf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
				}
			}
			checkWiring(t, typed(t, objs), v.s3, v.engines)
		})
	}
}

// rendered is config/default's objects by kind, typed.
type rendered struct {
	deployment      appsv1.Deployment
	services        map[string]corev1.Service
	configMaps      map[string]corev1.ConfigMap
	secrets         map[string]bool
	pvcs            map[string]corev1.PersistentVolumeClaim
	pdbs            []policyv1.PodDisruptionBudget
	clusterRoles    map[string]rbacv1.ClusterRole
	clusterBindings []rbacv1.ClusterRoleBinding
	roleBindings    []rbacv1.RoleBinding
	serviceAccounts map[string]bool
}

func typed(t *testing.T, objs []*unstructured.Unstructured) rendered {
	t.Helper()
	r := rendered{services: map[string]corev1.Service{}, configMaps: map[string]corev1.ConfigMap{}, secrets: map[string]bool{},
		pvcs: map[string]corev1.PersistentVolumeClaim{}, clusterRoles: map[string]rbacv1.ClusterRole{}, serviceAccounts: map[string]bool{}}
	deployments := 0
	for _, u := range objs {
		into := func(v any) {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, v); err != nil {
				t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
		if u.GetNamespace() != "" && u.GetNamespace() != namespace {
			t.Errorf("%s %s is in namespace %q, want %q", u.GetKind(), u.GetName(), u.GetNamespace(), namespace)
		}
		switch u.GetKind() {
		case "Deployment":
			deployments++
			into(&r.deployment)
		case "Service":
			var s corev1.Service
			into(&s)
			r.services[s.Name] = s
		case "ConfigMap":
			var cm corev1.ConfigMap
			into(&cm)
			r.configMaps[cm.Name] = cm
		case "Secret":
			r.secrets[u.GetName()] = true
		case "PersistentVolumeClaim":
			var p corev1.PersistentVolumeClaim
			into(&p)
			r.pvcs[p.Name] = p
		case "PodDisruptionBudget":
			var p policyv1.PodDisruptionBudget
			into(&p)
			r.pdbs = append(r.pdbs, p)
		case "ClusterRole":
			var cr rbacv1.ClusterRole
			into(&cr)
			r.clusterRoles[cr.Name] = cr
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			into(&b)
			r.clusterBindings = append(r.clusterBindings, b)
		case "RoleBinding":
			var b rbacv1.RoleBinding
			into(&b)
			r.roleBindings = append(r.roleBindings, b)
		case "ServiceAccount":
			r.serviceAccounts[u.GetName()] = true
		}
	}
	if deployments != 1 {
		t.Fatalf("%d Deployments rendered, want 1", deployments)
	}
	return r
}

func checkWiring(t *testing.T, r rendered, s3, engines bool) {
	d := r.deployment
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want the manager alone", len(pod.Containers))
	}
	m := pod.Containers[0]
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	args := serveArgs(t, m)
	ports := map[string]corev1.ContainerPort{}
	for _, p := range m.Ports {
		ports[p.Name] = p
	}

	t.Run("serve accepts every arg", func(t *testing.T) { checkServeFlags(t, m) })

	t.Run("listeners match container ports", func(t *testing.T) {
		for flag, port := range map[string]string{"api-bind-address": "api", "platform-bind-address": "ingest",
			"metrics-bind-address": "metrics", "health-probe-bind-address": "health"} {
			host, p, err := net.SplitHostPort(args[flag])
			if err != nil {
				t.Errorf("--%s=%q: %v", flag, args[flag], err)
				continue
			}
			// Loopback would be unreachable from the Service (the platform's default is 127.0.0.1).
			if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
				t.Errorf("--%s=%s listens on loopback only", flag, args[flag])
			}
			if fmt.Sprint(ports[port].ContainerPort) != p {
				t.Errorf("--%s=%s but container port %q is %d", flag, args[flag], port, ports[port].ContainerPort)
			}
		}
	})

	t.Run("each Service exposes one listener", func(t *testing.T) {
		want := map[string]struct {
			targetPort string
			port       int32
		}{
			"switchboard-api":                                {"api", 80},
			"switchboard-platform":                           {"ingest", 8081},
			"switchboard-controller-manager-metrics-service": {"metrics", 8443},
		}
		if len(r.services) != len(want) {
			t.Errorf("Services %v, want %d", keys(r.services), len(want))
		}
		podLabels := labels.Set(d.Spec.Template.Labels)
		for name, w := range want {
			s, ok := r.services[name]
			if !ok {
				t.Errorf("no Service %s", name)
				continue
			}
			if s.Spec.Type != corev1.ServiceTypeClusterIP {
				t.Errorf("Service %s is %s, want ClusterIP", name, s.Spec.Type)
			}
			if !labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) || len(s.Spec.Selector) == 0 {
				t.Errorf("Service %s selects %v, not the manager's pods %v", name, s.Spec.Selector, podLabels)
			}
			if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].TargetPort.String() != w.targetPort || s.Spec.Ports[0].Port != w.port {
				t.Errorf("Service %s ports %+v, want only %d -> %s", name, s.Spec.Ports, w.port, w.targetPort)
			}
			if _, ok := ports[w.targetPort]; !ok {
				t.Errorf("Service %s targets port %q, which the container does not have", name, w.targetPort)
			}
		}
	})

	t.Run("settings and secrets come from objects that exist", func(t *testing.T) {
		env := map[string]bool{}
		for _, e := range m.Env {
			env[e.Name] = true
			if e.Value != "" {
				t.Errorf("env %s has a literal value; settings belong in the ConfigMap, secrets in Secrets", e.Name)
			}
			if e.ValueFrom == nil {
				continue
			}
			if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
				if _, ok := r.configMaps[ref.Name].Data[ref.Key]; !ok {
					t.Errorf("env %s: ConfigMap %s has no key %q", e.Name, ref.Name, ref.Key)
				}
			}
			if ref := e.ValueFrom.SecretKeyRef; ref != nil && !r.secrets[ref.Name] && !slices.Contains(operatorSecrets[ref.Name], ref.Key) {
				t.Errorf("env %s: Secret %s key %s is neither rendered nor a documented operator Secret", e.Name, ref.Name, ref.Key)
			}
		}
		for _, a := range m.Args {
			for _, v := range varRefs(a) {
				if !env[v] {
					t.Errorf("arg %s uses $(%s), which is not in the container's env", a, v)
				}
			}
		}
		for _, want := range []string{"DATABASE_URL", "SWITCHBOARD_PLATFORM_TOKEN", "POD_NAMESPACE"} {
			if !env[want] {
				t.Errorf("no env %s", want)
			}
		}
		for _, v := range pod.Volumes {
			if v.Secret != nil && !r.secrets[v.Secret.SecretName] && operatorSecrets[v.Secret.SecretName] == nil {
				t.Errorf("volume %s: Secret %s is neither rendered nor a documented operator Secret", v.Name, v.Secret.SecretName)
			}
			if v.PersistentVolumeClaim != nil {
				pvc, ok := r.pvcs[v.PersistentVolumeClaim.ClaimName]
				if !ok {
					t.Errorf("volume %s: no PersistentVolumeClaim %s", v.Name, v.PersistentVolumeClaim.ClaimName)
				}
				// Every replica stores and serves recordings.
				if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
					t.Errorf("PersistentVolumeClaim %s is %v; two replicas on two nodes need ReadWriteMany", pvc.Name, pvc.Spec.AccessModes)
				}
			}
		}
		ops, err := os.ReadFile(filepath.Join(configDir(t), "..", "docs", "operations.md"))
		if err != nil {
			t.Fatal(err)
		}
		for name := range operatorSecrets {
			if !strings.Contains(string(ops), name) {
				t.Errorf("docs/operations.md does not tell the operator to create the Secret %s", name)
			}
		}
	})

	t.Run("recordings", func(t *testing.T) {
		if s3 {
			if args["recordings-backend"] != "s3" || args["s3-bucket"] == "" || args["s3-endpoint"] == "" || args["recordings-dir"] != "" || len(r.pvcs) != 0 {
				t.Errorf("with s3-recordings: args %v, volume claims %v", args, keys(r.pvcs))
			}
			return
		}
		dir := args["recordings-dir"]
		mounted := false
		for _, vm := range m.VolumeMounts {
			mounted = mounted || (vm.MountPath == dir && !vm.ReadOnly)
		}
		if dir == "" || !mounted {
			t.Errorf("--recordings-dir=%q is not a writable mount (%+v)", dir, m.VolumeMounts)
		}
		if pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil {
			t.Error("no fsGroup: a fresh volume is not writable by the non-root manager")
		}
	})

	t.Run("speech and summary engines", func(t *testing.T) {
		want := map[string]string{"speech-engine": "", "speech-url": "", "speech-model": "", "summary-engine": "", "summary-url": "", "summary-model": ""}
		if engines {
			want = map[string]string{"speech-engine": "openai", "speech-url": "$(SPEECH_URL)", "speech-model": "$(SPEECH_MODEL)",
				"summary-engine": "openai", "summary-url": "$(SUMMARY_URL)", "summary-model": "$(SUMMARY_MODEL)"}
		}
		for flag, value := range want {
			if args[flag] != value {
				t.Errorf("--%s=%q, want %q", flag, args[flag], value)
			}
		}
		keys := map[string]string{}
		for _, e := range m.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				keys[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			}
		}
		for env, ref := range map[string]string{"SWITCHBOARD_SPEECH_API_KEY": "switchboard-speech-engines/speech-api-key",
			"SWITCHBOARD_SUMMARY_API_KEY": "switchboard-speech-engines/summary-api-key"} {
			if engines && keys[env] != ref || !engines && keys[env] != "" {
				t.Errorf("env %s from Secret key %q (engines %v)", env, keys[env], engines)
			}
		}
	})

	t.Run("leader election and the public base URL", func(t *testing.T) {
		if args["leader-elect"] != "true" || args["leader-election-namespace"] == "" {
			t.Errorf("leader election args %q %q", args["leader-elect"], args["leader-election-namespace"])
		}
		if args["public-base-url"] == "" || args["link-signing-key-file"] == "" || args["smtp-addr"] == "" {
			t.Errorf("args %v lack the public base URL, the link signing key or the SMTP relay", args)
		}
		// Without it the live channel is off: GET /v1/me says realtime.enabled false.
		if args["realtime-secret-file"] == "" {
			t.Errorf("args %v lack the live channel's secret file", args)
		}
	})

	t.Run("metrics over HTTPS with authn and authz", func(t *testing.T) {
		if args["metrics-secure"] != "true" {
			t.Errorf("--metrics-secure=%q", args["metrics-secure"])
		}
		auth := r.clusterRoles["switchboard-metrics-auth-role"]
		if !grants(auth.Rules, "authentication.k8s.io", "tokenreviews", "create") || !grants(auth.Rules, "authorization.k8s.io", "subjectaccessreviews", "create") {
			t.Errorf("metrics-auth-role rules %+v", auth.Rules)
		}
		if !bound(r.clusterBindings, "switchboard-metrics-auth-role", pod.ServiceAccountName) {
			t.Errorf("metrics-auth-role is not bound to %s", pod.ServiceAccountName)
		}
		reader := r.clusterRoles["switchboard-metrics-reader"]
		if len(reader.Rules) != 1 || !slices.Equal(reader.Rules[0].NonResourceURLs, []string{"/metrics"}) || !slices.Equal(reader.Rules[0].Verbs, []string{"get"}) {
			t.Errorf("metrics-reader rules %+v", reader.Rules)
		}
	})

	t.Run("service account and its roles", func(t *testing.T) {
		sa := pod.ServiceAccountName
		if !r.serviceAccounts[sa] || !bound(r.clusterBindings, "switchboard-manager-role", sa) {
			t.Errorf("service account %s missing or without manager-role", sa)
		}
		leader := false
		for _, b := range r.roleBindings {
			leader = leader || (b.RoleRef.Name == "switchboard-leader-election-role" && slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
				return s.Name == sa && s.Namespace == namespace
			}))
		}
		if !leader {
			t.Errorf("service account %s cannot hold the leader election lease", sa)
		}
	})

	t.Run("probes, resources, disruption budget", func(t *testing.T) {
		for name, p := range map[string]*corev1.Probe{"/healthz": m.LivenessProbe, "/readyz": m.ReadinessProbe} {
			if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port.String() != "health" {
				t.Errorf("probe of %s: %+v", name, p)
			}
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := m.Resources.Requests[res]; !ok {
				t.Errorf("no %s request", res)
			}
			if _, ok := m.Resources.Limits[res]; !ok && res == corev1.ResourceMemory {
				t.Errorf("no %s limit", res)
			}
		}
		if len(r.pdbs) != 1 {
			t.Fatalf("%d PodDisruptionBudgets, want 1", len(r.pdbs))
		}
		pdb := r.pdbs[0]
		if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 || pdb.Spec.MinAvailable.IntValue() >= int(*d.Spec.Replicas) {
			t.Errorf("PodDisruptionBudget minAvailable %v with %d replicas", pdb.Spec.MinAvailable, *d.Spec.Replicas)
		}
		if sel := labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels); !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("PodDisruptionBudget selects %v, not the manager's pods", pdb.Spec.Selector)
		}
	})
}

// serveArgs maps the manager's --name=value args after "serve" (a bare --name is "true").
func serveArgs(t *testing.T, m corev1.Container) map[string]string {
	t.Helper()
	if len(m.Args) == 0 || m.Args[0] != "serve" {
		t.Fatalf("args %v do not start with serve", m.Args)
	}
	args := map[string]string{}
	for _, a := range m.Args[1:] {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") {
			t.Errorf("arg %q is not --name=value", a)
		}
		if !ok {
			value = "true"
		}
		if _, dup := args[name]; dup {
			t.Errorf("--%s given twice", name)
		}
		args[name] = value
	}
	return args
}

// checkServeFlags sets every arg on the real serve command's flags: a misspelt flag or a
// bad value would stop the pod at start.
func checkServeFlags(t *testing.T, m corev1.Container) {
	serve := findServe(t)
	for name, value := range serveArgs(t, m) {
		f := serve.Flags().Lookup(name)
		if f == nil {
			t.Errorf("serve has no flag --%s", name)
			continue
		}
		if strings.Contains(value, "$(") {
			continue // filled in by the kubelet
		}
		if err := serve.Flags().Set(name, value); err != nil {
			t.Errorf("--%s=%s: %v", name, value, err)
		}
	}
}

func findServe(t *testing.T) *cobra.Command {
	t.Helper()
	serve, _, err := cli.NewRootCommand().Find([]string{"serve"})
	if err != nil || serve.Name() != "serve" {
		t.Fatalf("no serve command: %v", err)
	}
	return serve
}

func varRefs(s string) []string {
	var refs []string
	for {
		i := strings.Index(s, "$(")
		if i < 0 {
			return refs
		}
		j := strings.Index(s[i:], ")")
		if j < 0 {
			return refs
		}
		refs = append(refs, s[i+2:i+j])
		s = s[i+j:]
	}
}

func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
	})
}

func bound(bindings []rbacv1.ClusterRoleBinding, role, serviceAccount string) bool {
	return slices.ContainsFunc(bindings, func(b rbacv1.ClusterRoleBinding) bool {
		return b.RoleRef.Name == role && slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == "ServiceAccount" && s.Name == serviceAccount && s.Namespace == namespace
		})
	})
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
