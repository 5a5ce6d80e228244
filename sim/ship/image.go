// Package ship puts a student's Go operator into the cluster, as a team
// ships one: an image of its binary built here with no registry and no
// network (the binary on an empty base, as ko does), loaded into the kind
// node, and a Deployment that runs it under its ServiceAccount. It also
// follows the Deployment's pods: their logs, their restarts, and which pod
// made which request (the apiserver's audit log), for rlab check.
package ship

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Binary is where the operator's binary is in its image, and the image's
// entrypoint.
const Binary = "/manager"

// NonRoot is the user the image runs as: distroless's nonroot, as a
// kubebuilder project's Dockerfile has it.
const NonRoot = "65532:65532"

// ImageOptions say what to build.
type ImageOptions struct {
	// Dir is the operator's Go module; Package its main package in it
	// ("./cmd" if ""), as `go run` would be given.
	Dir, Package string
	// Repository names the image ("rlab.local/echo-mine-operator"); the tag
	// is the binary's digest, so that a changed operator is a new image.
	Repository string
	// Arch is the nodes' GOARCH (this machine's if "").
	Arch string
	// Out is the image archive to write (docker save's format).
	Out string
}

// Image is a built image.
type Image struct {
	Ref     string // repository:tag
	Archive string // ImageOptions.Out
	// Build and Pack are how long `go build` and writing the archive took.
	Build, Pack time.Duration
	Size        int64 // of the archive, in bytes
}

// BuildImage compiles the operator for linux (static: CGO_ENABLED=0) and
// writes an image of it: one layer holding the binary and an empty /tmp,
// run as NonRoot. A build that fails is one error quoting the compiler.
func BuildImage(ctx context.Context, o ImageOptions) (*Image, error) {
	if o.Package == "" {
		o.Package = "./cmd"
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH // a kind node runs on this machine's kernel
	}
	if err := os.MkdirAll(filepath.Dir(o.Out), 0o700); err != nil {
		return nil, fmt.Errorf("image dir: %w", err)
	}
	bin := o.Out + ".bin"
	defer os.Remove(bin)
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, o.Package)
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+o.Arch, "GOFLAGS=-mod=mod")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s in %s: %s: %w", o.Package, o.Dir, firstLines(out.String(), 3), err)
	}
	img := &Image{Archive: o.Out, Build: time.Since(t0)}
	t1 := time.Now()
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("read the binary: %w", err)
	}
	sum := sha256.Sum256(data)
	img.Ref = o.Repository + ":" + hex.EncodeToString(sum[:])[:12]
	if err := writeImage(img.Ref, o.Arch, data, o.Out); err != nil {
		return nil, err
	}
	img.Pack = time.Since(t1)
	if st, err := os.Stat(o.Out); err == nil {
		img.Size = st.Size()
	}
	return img, nil
}

// writeImage writes the archive: an empty base, one layer, the config.
func writeImage(ref, arch string, binary []byte, out string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image name %s: %w", ref, err)
	}
	layerTar, err := layer(binary)
	if err != nil {
		return err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil })
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("image config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Config.Entrypoint = []string{Binary}
	cf.Config.User = NonRoot
	cf.Config.WorkingDir = "/"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return fmt.Errorf("image config: %w", err)
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}

// layer is the image's one layer: the binary at Binary and /tmp (for
// whatever writes a temporary file), with fixed times, so that the same
// binary is the same layer.
func layer(binary []byte) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	epoch := time.Unix(0, 0)
	hdrs := []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: epoch},
		{Typeflag: tar.TypeReg, Name: Binary[1:], Mode: 0o755, Size: int64(len(binary)), ModTime: epoch},
	}
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer: %w", err)
		}
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return b.Bytes(), nil
}

// firstLines are the first n lines of s, joined by "; ".
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "; ")
}
