// Command imagebuild builds the switchboard container image without a container daemon and
// without pulling a base image: the static binary on an empty base, with the files
// distroless/static:nonroot (the Dockerfile's base) gives it, written as an OCI image
// layout in a tar archive (oci-archive). The same inputs give the same image digest: every
// timestamp is -created, every file's owner and mode are fixed, and layers are in order.
//
//	go run ./hack/imagebuild -version v1.2.3 -created 1767225600 -o bin/switchboard-image.tar
//
// Inputs: this source tree, the Go toolchain (go.mod's), the build machine's CA bundle
// (-ca-certificates) and the flags. make image runs it (see docs/operations.md).
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// VersionVar is where -ldflags -X puts the version (`switchboard --version` prints it).
const VersionVar = "github.com/switchboard-dev/switchboard/internal/cli.Version"

// UID and GID of the image's user: distroless's "nonroot", the Deployment's runAsUser.
const nonroot = 65532

// BuildFlags are the `go build` flags of the image's binary; the Dockerfile uses the same
// (a test compares them). CGO_ENABLED=0 makes it static, so it needs no libc in the image.
func BuildFlags(version string) []string {
	return []string{"-trimpath", "-buildvcs=false", "-ldflags=-s -w -X " + VersionVar + "=" + version}
}

// Options are the inputs of the image besides the binary.
type Options struct {
	Version  string    // switchboard --version and the version label
	Revision string    // source commit, a label; may be empty
	Created  time.Time // every timestamp in the image
	Arch     string    // GOARCH
	// CACerts is the PEM bundle put at /etc/ssl/certs/ca-certificates.crt (Go's first place to look).
	CACerts []byte
	// Name is the image reference recorded in the archive's index (what `ctr images import` and
	// `skopeo copy oci-archive:` name it).
	Name string
}

func main() {
	var (
		out     = flag.String("o", "bin/switchboard-image.tar", "OCI archive to write")
		version = flag.String("version", "dev", "version (switchboard --version, image label)")
		rev     = flag.String("revision", "", "source commit (image label)")
		created = flag.Int64("created", 0, "Unix time of every timestamp in the image (SOURCE_DATE_EPOCH)")
		arch    = flag.String("arch", runtime.GOARCH, "GOARCH of the binary and the image")
		ca      = flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "PEM bundle of trusted CAs to put in the image")
		name    = flag.String("name", "switchboard:latest", "image reference recorded in the archive")
	)
	flag.Parse()
	if err := run(*out, *version, *rev, *created, *arch, *ca, *name); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(out, version, rev string, created int64, arch, caPath, name string) error {
	ca, err := os.ReadFile(caPath)
	if err != nil {
		return fmt.Errorf("read the CA bundle (install Debian's ca-certificates): %w", err)
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "imagebuild-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	bin, err := BuildBinary(context.Background(), root, tmp, version, arch)
	if err != nil {
		return err
	}
	digest, err := Build(bin, Options{Version: version, Revision: rev, Created: time.Unix(created, 0).UTC(),
		Arch: arch, CACerts: ca, Name: name}, out)
	if err != nil {
		return err
	}
	fmt.Printf("%s %s\n", out, digest)
	return nil
}

// BuildBinary builds the switchboard binary of the module at root into dir, static, for linux/arch.
func BuildBinary(ctx context.Context, root, dir, version, arch string) (string, error) {
	bin := filepath.Join(dir, "switchboard")
	args := append([]string{"build"}, BuildFlags(version)...)
	cmd := exec.CommandContext(ctx, "go", append(args, "-o", bin, ".")...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
}

// Build assembles the image from the binary at bin and writes it to out as an OCI archive;
// it returns the image's manifest digest.
func Build(bin string, o Options, out string) (v1.Hash, error) {
	img, err := Image(bin, o)
	if err != nil {
		return v1.Hash{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	if err := WriteArchive(img, o, out); err != nil {
		return v1.Hash{}, err
	}
	return digest, nil
}

// Image is the image: a base layer (users, CA certificates, /tmp, the user's home) and a
// layer with the binary, on empty.Image with OCI media types.
func Image(bin string, o Options) (v1.Image, error) {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	base, err := layer(o.Created, baseFiles(o.CACerts))
	if err != nil {
		return nil, err
	}
	app, err := layer(o.Created, []file{{name: "switchboard", mode: 0o755, data: exe}})
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.Created}
	labels := map[string]string{
		"org.opencontainers.image.title":       "switchboard",
		"org.opencontainers.image.description": "Switchboard call-handling service: switchboard serve and the operator tools",
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.created":     o.Created.Format(time.RFC3339),
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.source":      "https://github.com/switchboard-dev/switchboard",
	}
	if o.Revision != "" {
		labels["org.opencontainers.image.revision"] = o.Revision
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: o.Arch,
		OS:           "linux",
		Created:      created,
		Config: v1.Config{
			Entrypoint: []string{"/switchboard"},
			User:       strconv.Itoa(nonroot) + ":" + strconv.Itoa(nonroot),
			WorkingDir: "/",
			Env: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
			},
			// The Deployment's container ports (config/manager/manager.yaml).
			ExposedPorts: map[string]struct{}{"8080/tcp": {}, "8081/tcp": {}, "8083/tcp": {}, "8443/tcp": {}},
			Labels:       labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "imagebuild: users, CA certificates, /tmp"}},
		mutate.Addendum{Layer: app, History: v1.History{Created: created, CreatedBy: "imagebuild: /switchboard " + o.Version}})
}

type file struct {
	name     string
	dir      bool
	mode     int64
	uid, gid int
	data     []byte
}

// baseFiles are what distroless/static:nonroot gives a static binary, less what Go does not
// read: tzdata is in the binary (time/tzdata), so there is no /usr/share/zoneinfo.
func baseFiles(ca []byte) []file {
	return []file{
		{name: "etc", dir: true, mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n")},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl", dir: true, mode: 0o755},
		{name: "etc/ssl/certs", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: ca},
		{name: "home", dir: true, mode: 0o755},
		{name: "home/nonroot", dir: true, mode: 0o700, uid: nonroot, gid: nonroot},
		{name: "root", dir: true, mode: 0o700},
		{name: "tmp", dir: true, mode: 0o1777},
	}
}

// layer is an uncompressed tar of files in the given order, every entry dated t; ggcr
// compresses it with Go's gzip, which writes no timestamp or name.
func layer(t time.Time, files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: t, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// fullName is a reference as containerd stores it: `ctr images import` names the image by
// the annotation as given, and the kubelet asks for docker.io/library/x for an image "x".
func fullName(ref string) string {
	first, _, found := strings.Cut(ref, "/")
	switch {
	case !found:
		return "docker.io/library/" + ref
	case strings.ContainsAny(first, ".:") || first == "localhost":
		return ref
	}
	return "docker.io/" + ref
}

// WriteArchive writes img as an OCI image layout (index.json naming it o.Name) and tars
// that layout into out, files sorted and dated o.Created, so the archive's bytes are as
// reproducible as the digest.
func WriteArchive(img v1.Image, o Options, out string) error {
	dir, err := os.MkdirTemp("", "imagebuild-layout-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if _, err := name.ParseReference(o.Name); err != nil {
		return fmt.Errorf("image name: %w", err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": o.Name,
		"io.containerd.image.name":          fullName(o.Name),
	})); err != nil {
		return err
	}
	var names []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		names = append(names, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp) }()
	tw := tar.NewWriter(f)
	for _, name := range names {
		full := filepath.Join(dir, name)
		st, err := os.Stat(full)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: name, Mode: 0o644, ModTime: o.Created, Format: tar.FormatPAX}
		if st.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, name+"/", 0o755
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return err
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}
