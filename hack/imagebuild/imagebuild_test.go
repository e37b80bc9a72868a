package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/testenv"
)

const testVersion = "v0.0.0-imagetest"

var created = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func options(t *testing.T) Options {
	t.Helper()
	ca, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Fatalf("the build machine's CA bundle (hack/ensure-tools.sh installs ca-certificates): %v", err)
	}
	return Options{Version: testVersion, Revision: "0123456789abcdef", Created: created, Arch: "amd64", CACerts: ca, Name: "switchboard:imagetest"}
}

// build runs what make image runs, from go build on, into a directory of its own.
func build(t *testing.T, o Options) (archive string, digest v1.Hash) {
	t.Helper()
	dir, err := os.MkdirTemp("", "imagebuild-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	bin, err := BuildBinary(context.Background(), moduleRoot(t), dir, o.Version, o.Arch)
	if err != nil {
		t.Fatal(err)
	}
	archive = filepath.Join(dir, "image.tar")
	digest, err = Build(bin, o, archive)
	if err != nil {
		t.Fatal(err)
	}
	return archive, digest
}

var shared struct {
	once    sync.Once
	archive string
	digest  v1.Hash
	err     error
}

// sharedImage is one build for the tests that only read the image.
func sharedImage(t *testing.T) (string, v1.Hash) {
	t.Helper()
	o := options(t)
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "imagebuild-shared-")
		if err != nil {
			shared.err = err
			return
		}
		bin, err := BuildBinary(context.Background(), moduleRoot(t), dir, o.Version, o.Arch)
		if err != nil {
			shared.err = err
			return
		}
		shared.archive = filepath.Join(dir, "image.tar")
		shared.digest, shared.err = Build(bin, o, shared.archive)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.archive, shared.digest
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.archive != "" {
		_ = os.RemoveAll(filepath.Dir(shared.archive))
	}
	os.Exit(code)
}

func TestSameInputsGiveTheSameImage(t *testing.T) {
	first, digest := sharedImage(t)
	// A second go build into another directory, at another time: nothing of the build
	// machine's paths or clock may reach the image.
	second, again := build(t, options(t))
	if digest != again {
		t.Errorf("two builds from the same inputs: %s and %s", digest, again)
	}
	a, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("the two OCI archives differ byte for byte")
	}
	// The same binary assembled again gives the same digest; another -created another one.
	bin := binaryOf(t, first)
	for _, c := range []struct {
		created time.Time
		same    bool
	}{{created, true}, {created.Add(time.Second), false}} {
		o := options(t)
		o.Created = c.created
		img, err := Image(bin, o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if (got == digest) != c.same {
			t.Errorf("created %s: digest %s, first build %s", c.created, got, digest)
		}
	}
}

// binaryOf extracts /switchboard of the archive's image into a file.
func binaryOf(t *testing.T, archive string) string {
	t.Helper()
	root := unpack(t, archive, loadImage(t, archive))
	return filepath.Join(root, "switchboard")
}

// The Dockerfile builds the same binary (same flags) as the base image's user does.
func TestDockerfileBuildsTheSameBinary(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	dockerfile := string(b)
	flags := BuildFlags("${VERSION}")
	name, value, _ := strings.Cut(flags[len(flags)-1], "=")
	want := "go build " + strings.Join(flags[:len(flags)-1], " ") + " " + name + `="` + value + `"`
	if !strings.Contains(dockerfile, want) {
		t.Errorf("the Dockerfile does not build with\n  %s", want)
	}
	for _, line := range []string{"CGO_ENABLED=0", "FROM gcr.io/distroless/static:nonroot", "USER 65532:65532", `ENTRYPOINT ["/switchboard"]`} {
		if !strings.Contains(dockerfile, line) {
			t.Errorf("the Dockerfile lacks %q", line)
		}
	}
}

func loadImage(t *testing.T, archive string) v1.Image {
	t.Helper()
	dir := t.TempDir()
	untar(t, archive, dir, false)
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("%d manifests in the archive, want 1", len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// unpack writes the image's file system (its layers, in order) into a new directory, as
// a container runtime does, with the owners and modes of the layers.
func unpack(t *testing.T, archive string, img v1.Image) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "rootfs")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	f := filepath.Join(t.TempDir(), "rootfs.tar")
	out, err := os.Create(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, rc); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	untar(t, f, root, os.Geteuid() == 0)
	return root
}

func untar(t *testing.T, archive, dir string, owners bool) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(path, dir+string(filepath.Separator)) {
			t.Fatalf("%q leaves the directory", h.Name)
		}
		mode := os.FileMode(h.Mode).Perm()
		if h.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			w, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(w, tr); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: tar entry type %c is not expected in this image", h.Name, h.Typeflag)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if owners {
			if err := os.Lchown(path, h.Uid, h.Gid); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestImageContents(t *testing.T) {
	archive, digest := sharedImage(t)
	img := loadImage(t, archive)
	if got, err := img.Digest(); err != nil || got != digest {
		t.Fatalf("the archive holds %s (%v), the build said %s", got, err, digest)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if c.User != "65532:65532" || strings.Join(c.Entrypoint, " ") != "/switchboard" || cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("user %q entrypoint %q platform %s/%s", c.User, c.Entrypoint, cfg.OS, cfg.Architecture)
	}
	if c.Labels["org.opencontainers.image.version"] != testVersion || c.Labels["org.opencontainers.image.revision"] != "0123456789abcdef" {
		t.Errorf("labels %v", c.Labels)
	}
	if !cfg.Created.Equal(created) {
		t.Errorf("created %s, want %s", cfg.Created, created)
	}
	root := unpack(t, archive, img)
	ca, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if got, err := os.ReadFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt")); err != nil || !bytes.Equal(got, ca) {
		t.Errorf("the image's CA bundle is not the build machine's (%v)", err)
	}
	passwd, _ := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no user 65532:\n%s", passwd)
	}
	if st, err := os.Stat(filepath.Join(root, "tmp")); err != nil || st.Mode()&os.ModeSticky == 0 || st.Mode().Perm() != 0o777 {
		t.Errorf("/tmp: %v %v", st.Mode(), err)
	}
}

// TestImageServesAsTheDeploymentRunsIt runs the image's entrypoint in its own root file
// system as its user, with the Deployment's (config/default) arguments, environment,
// volumes and service account, against a real kube-apiserver and PostgreSQL, and checks
// the Deployment's probes.
func TestImageServesAsTheDeploymentRunsIt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running the image's root file system as its user needs root (chroot, setuid)")
	}
	archive, _ := sharedImage(t)
	img := loadImage(t, archive)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	root := unpack(t, archive, img)
	uid, gid := imageUser(t, cfg.Config.User)
	run := func(args ...string) *exec.Cmd {
		cmd := exec.Command(cfg.Config.Entrypoint[0], append(cfg.Config.Entrypoint[1:], args...)...)
		cmd.Dir = cfg.Config.WorkingDir
		cmd.Env = append([]string{"HOME=/home/nonroot"}, cfg.Config.Env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: uid, Gid: gid}}
		return cmd
	}
	out, err := run("--version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "switchboard version "+testVersion {
		t.Errorf("--version: %q %v", out, err)
	}
	out, err = run("--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "serve") {
		t.Errorf("--help: %v\n%s", err, out)
	}

	deployment, settings := renderDeployment(t)
	pod := deployment.Spec.Template.Spec
	m := pod.Containers[0]
	if strings.Join(m.Command, " ") != strings.Join(cfg.Config.Entrypoint, " ") {
		t.Errorf("the Deployment runs %q, the image's entrypoint is %q", m.Command, cfg.Config.Entrypoint)
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != int64(uid) {
		t.Errorf("the Deployment runs as %v, the image as %d", pod.SecurityContext, uid)
	}

	cp := testenv.ControlPlane(t)
	kube := testenv.Client(t, cp)
	ns := deployment.Namespace
	if err := kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]map[string]string{
		"switchboard-database":     {"url": storetest.NewDatabaseURL(t)},
		"switchboard-platform":     {"token": "image-test-platform-token"},
		"switchboard-link-signing": {"key": strings.Repeat("k", 48)},
		"switchboard-realtime":     {"secret": strings.Repeat("r", 32)},
	}
	// What the kubelet gives the container: the service account's files and the
	// kube-apiserver's address, the volumes, and the env with its references resolved.
	sa := filepath.Join(root, "var/run/secrets/kubernetes.io/serviceaccount")
	writeFiles(t, sa, map[string]string{"token": cp.Config.BearerToken, "ca.crt": string(cp.Config.CAData), "namespace": ns})
	host, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	env := append(run().Env, "KUBERNETES_SERVICE_HOST="+host.Hostname(), "KUBERNETES_SERVICE_PORT="+host.Port())
	vars := map[string]string{}
	for _, e := range m.Env {
		v := e.Value
		switch {
		case e.ValueFrom == nil:
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			v = ns
		case e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name == settings.Name:
			v = settings.Data[e.ValueFrom.ConfigMapKeyRef.Key]
		case e.ValueFrom.SecretKeyRef != nil && secrets[e.ValueFrom.SecretKeyRef.Name] != nil:
			v = secrets[e.ValueFrom.SecretKeyRef.Name][e.ValueFrom.SecretKeyRef.Key]
		default:
			t.Fatalf("env %s: no value for %+v", e.Name, e.ValueFrom)
		}
		vars[e.Name] = v
		env = append(env, e.Name+"="+v)
	}
	mountVolumes(t, root, pod, m, secrets)

	// The container's ports on free loopback ports of this machine.
	addrs := map[string]string{}
	args := make([]string, len(m.Args))
	for i, a := range m.Args {
		for name, v := range vars {
			a = strings.ReplaceAll(a, "$("+name+")", v)
		}
		args[i] = a
	}
	for _, p := range m.Ports {
		addr := testenv.FreeAddr(t)
		addrs[p.Name] = addr
		found := false
		for i, a := range args {
			if strings.HasSuffix(a, "=:"+strconv.Itoa(int(p.ContainerPort))) {
				args[i] = strings.TrimSuffix(a, ":"+strconv.Itoa(int(p.ContainerPort))) + addr
				found = true
			}
		}
		if !found {
			t.Fatalf("no argument listens on container port %s (%d): %q", p.Name, p.ContainerPort, m.Args)
		}
	}

	serve := run(args...)
	serve.Env = env
	var logs bytes.Buffer
	serve.Stdout, serve.Stderr = &logs, &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	done := false
	t.Cleanup(func() {
		if !done {
			_ = serve.Process.Kill()
			if err := <-exited; err != nil {
				t.Logf("serve after kill: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("serve's output:\n%s", logs.String())
		}
	})

	get := func(port intOrName, path string) int {
		resp, err := http.Get("http://" + addrs[port.name(m)] + path)
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	ready, live := m.ReadinessProbe.HTTPGet, m.LivenessProbe.HTTPGet
	deadline := time.Now().Add(2 * time.Minute)
	for get(intOrName(ready.Port.String()), ready.Path) != http.StatusOK {
		select {
		case err := <-exited:
			done = true
			t.Fatalf("serve exited before it was ready: %v", err)
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within 2 minutes", ready.Path)
		}
	}
	if got := get(intOrName(live.Port.String()), live.Path); got != http.StatusOK {
		t.Errorf("liveness probe %s: %d", live.Path, got)
	}
	if got := get("api", "/v1/me"); got != http.StatusUnauthorized {
		t.Errorf("public API without a key: %d, want 401", got)
	}
	// Every feature is on as deployed: the live channel has its secret.
	if strings.Contains(logs.String(), "the live channel is off") {
		t.Error("the live channel is off as deployed")
	}
	// The image has no local speech engine (docs/operations.md "The image").
	if !strings.Contains(logs.String(), "the local speech engine is not installed") {
		t.Error("serve did not say that the image has no local speech engine")
	}
	// The pod's service account reaches the kube-apiserver: the replica takes the Lease.
	lease := &coordinationv1.Lease{}
	for {
		err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "switchboard-controller-manager.switchboard.dev"}, lease)
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader lease: %v %+v", err, lease.Spec)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		done = true
		if err != nil {
			t.Errorf("serve exited with %v after SIGTERM", err)
		}
	case <-time.After(45 * time.Second):
		t.Error("serve still running 45 s after SIGTERM")
	}
}

// intOrName is a probe's port: a container port's name or number.
type intOrName string

func (p intOrName) name(m corev1.Container) string {
	for _, cp := range m.Ports {
		if string(p) == cp.Name || string(p) == strconv.Itoa(int(cp.ContainerPort)) {
			return cp.Name
		}
	}
	return string(p)
}

func imageUser(t *testing.T, user string) (uint32, uint32) {
	t.Helper()
	u, g, ok := strings.Cut(user, ":")
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("image user %q is not uid:gid", user)
	}
	return uint32(uid), uint32(gid)
}

// renderDeployment is config/default's Deployment and its settings ConfigMap, as
// `kustomize build` renders them.
func renderDeployment(t *testing.T) (appsv1.Deployment, corev1.ConfigMap) {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(moduleRoot(t), "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	var settings corev1.ConfigMap
	for _, r := range res.Resources() {
		obj, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		switch r.GetKind() {
		case "Deployment":
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &d)
		case "ConfigMap":
			if strings.HasPrefix(r.GetName(), "switchboard-settings") {
				err = runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &settings)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if d.Name == "" || settings.Name == "" || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("config/default renders no Deployment of one container with its settings ConfigMap")
	}
	return d, settings
}

// mountVolumes makes the container's volume mounts as directories of the root file system:
// Secrets as files (mode 0644, the default), emptyDirs world-writable, claims owned by the
// pod's fsGroup.
func mountVolumes(t *testing.T, root string, pod corev1.PodSpec, m corev1.Container, secrets map[string]map[string]string) {
	t.Helper()
	for _, vm := range m.VolumeMounts {
		dir := filepath.Join(root, vm.MountPath)
		var vol *corev1.Volume
		for i := range pod.Volumes {
			if pod.Volumes[i].Name == vm.Name {
				vol = &pod.Volumes[i]
			}
		}
		switch {
		case vol == nil:
			t.Fatalf("mount %s has no volume", vm.Name)
		case vol.Secret != nil:
			data := secrets[vol.Secret.SecretName]
			if data == nil {
				t.Fatalf("volume %s: no test value for Secret %s", vol.Name, vol.Secret.SecretName)
			}
			writeFiles(t, dir, data)
		case vol.EmptyDir != nil:
			mkdir(t, dir, 0o777|os.ModeSticky, 0, 0)
		case vol.PersistentVolumeClaim != nil:
			g := 0
			if pod.SecurityContext != nil && pod.SecurityContext.FSGroup != nil {
				g = int(*pod.SecurityContext.FSGroup)
			}
			mkdir(t, dir, 0o775|os.ModeSetgid, 0, g)
		default:
			t.Fatalf("volume %s: a kind this test does not make", vol.Name)
		}
	}
}

func mkdir(t *testing.T, dir string, mode os.FileMode, uid, gid int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(fmt.Errorf("%s: %w", name, err))
		}
	}
}

func TestFullName(t *testing.T) {
	for ref, want := range map[string]string{
		"switchboard:latest":                   "docker.io/library/switchboard:latest",
		"acme/switchboard:v1":                  "docker.io/acme/switchboard:v1",
		"registry.example.com/switchboard:v1":  "registry.example.com/switchboard:v1",
		"localhost:5000/switchboard:v1":        "localhost:5000/switchboard:v1",
		"localhost/switchboard":                "localhost/switchboard",
		"ghcr.io/acme/switchboard@sha256:abcd": "ghcr.io/acme/switchboard@sha256:abcd",
	} {
		if got := fullName(ref); got != want {
			t.Errorf("fullName(%q) = %q, want %q", ref, got, want)
		}
	}
}
