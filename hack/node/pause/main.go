// Command pause is the process of a pod's sandbox (it waits for SIGTERM or SIGINT) and,
// with -image, writes an OCI archive of an image holding itself as /pause. containerd's
// default sandbox image (registry.k8s.io/pause) cannot be pulled here: the network is
// loopback only. Build it static (CGO_ENABLED=0); hack/node/up.sh does.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	dir := flag.String("image", "", "write the pause image as an OCI image layout into this directory, and exit")
	name := flag.String("name", "localhost/pause:node", "image name recorded in the layout")
	flag.Parse()
	if *dir == "" {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
		<-c
		return
	}
	if err := writeImage(*dir, *name); err != nil {
		fmt.Fprintln(os.Stderr, "pause:", err)
		os.Exit(1)
	}
}

func writeImage(dir, name string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	exe, err := os.ReadFile(self)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(exe)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(exe); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{OS: "linux", Architecture: "amd64",
		Config: v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"}, RootFS: v1.RootFS{Type: "layers"}})
	if err != nil {
		return err
	}
	if img, err = mutate.AppendLayers(img, l); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendImage(img, layout.WithAnnotations(map[string]string{"io.containerd.image.name": name}))
}
