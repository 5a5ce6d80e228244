// Command kindimage writes a one-layer container image as a docker-archive
// tarball (what `docker load` and `ctr images import` read), with no registry:
// scripts/build-kind-node.sh uses it for the images a kind node preloads and for
// the node image itself.
//
// The layer is either files placed at given paths (-file SRC:DEST, for static
// binaries) or a prepared tar (-layer TAR, for a whole root file system):
//
//	kindimage -file bin/etcd:/usr/local/bin/etcd -entrypoint /usr/local/bin/etcd \
//	    -tag rlab.local/etcd:3.6.8-0 -o etcd.tar
//	kindimage -layer rootfs.tar -entrypoint /usr/local/bin/entrypoint -entrypoint /sbin/init \
//	    -env container=docker -stopsignal SIGRTMIN+3 -tag rlab.local/kind-node:v1.36.3 -o node.tar
package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// list is a repeatable string flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

// options is what the command line asks for.
type options struct {
	files, tags, entrypoint, cmd, env, labels list
	layer, user, stopSignal, workdir, out     string
}

func main() {
	var o options
	fs := flag.NewFlagSet("kindimage", flag.ContinueOnError)
	fs.Var(&o.files, "file", "SRC:DEST: put file SRC at DEST in the layer (repeatable)")
	fs.StringVar(&o.layer, "layer", "", "use this uncompressed tar as the layer instead of -file")
	fs.Var(&o.tags, "tag", "image reference to tag the image with (repeatable, at least one)")
	fs.Var(&o.entrypoint, "entrypoint", "one entrypoint argument (repeatable, in order)")
	fs.Var(&o.cmd, "cmd", "one cmd argument (repeatable, in order)")
	fs.Var(&o.env, "env", "KEY=VALUE in the image's environment (repeatable)")
	fs.Var(&o.labels, "label", "KEY=VALUE image label (repeatable)")
	fs.StringVar(&o.user, "user", "", "user the image runs as, e.g. 65535:65535")
	fs.StringVar(&o.stopSignal, "stopsignal", "", "signal that stops the container, e.g. SIGRTMIN+3")
	fs.StringVar(&o.workdir, "workdir", "", "working directory")
	fs.StringVar(&o.out, "o", "", "docker-archive tarball to write (written atomically)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "kindimage:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	switch {
	case o.out == "":
		return errors.New("-o is required")
	case len(o.tags) == 0:
		return errors.New("at least one -tag is required")
	case (o.layer == "") == (len(o.files) == 0):
		return errors.New("give either -layer or -file, not both or neither")
	}
	refs := make(map[name.Reference]v1.Image, len(o.tags))
	var tags []name.Tag
	for _, t := range o.tags {
		tag, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("tag %q: %w", t, err)
		}
		tags = append(tags, tag)
	}

	// Level 1: the node layer is hundreds of MB and speed matters more than bytes.
	layerOpts := []tarball.LayerOption{tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithCompressedCaching}
	var layer v1.Layer
	var err error
	if o.layer != "" {
		layer, err = tarball.LayerFromFile(o.layer, layerOpts...)
	} else {
		var entries []fileEntry
		if entries, err = parseFiles(o.files); err != nil {
			return err
		}
		layer, err = tarball.LayerFromOpener(func() (io.ReadCloser, error) { return tarFiles(entries) }, layerOpts...)
	}
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}

	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("image config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = runtime.GOARCH
	cf.Config.Entrypoint = o.entrypoint
	cf.Config.Cmd = o.cmd
	cf.Config.Env = o.env
	cf.Config.User = o.user
	cf.Config.StopSignal = o.stopSignal
	cf.Config.WorkingDir = o.workdir
	if len(o.labels) > 0 {
		cf.Config.Labels = map[string]string{}
		for _, kv := range o.labels {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("label %q is not KEY=VALUE", kv)
			}
			cf.Config.Labels[k] = v
		}
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return fmt.Errorf("image config: %w", err)
	}
	for _, t := range tags {
		refs[t] = img
	}

	tmp := o.out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", o.out, err)
	}
	if err := os.Rename(tmp, o.out); err != nil {
		return fmt.Errorf("write %s: %w", o.out, err)
	}
	return nil
}

// fileEntry is one file of a -file layer.
type fileEntry struct{ src, dest string }

func parseFiles(specs []string) ([]fileEntry, error) {
	var out []fileEntry
	for _, s := range specs {
		src, dest, ok := strings.Cut(s, ":")
		if !ok || src == "" || !path.IsAbs(dest) {
			return nil, fmt.Errorf("-file %q: want SRC:/absolute/dest", s)
		}
		if _, err := os.Stat(src); err != nil {
			return nil, fmt.Errorf("-file %q: %w", s, err)
		}
		out = append(out, fileEntry{src: src, dest: path.Clean(dest)})
	}
	return out, nil
}

// tarFiles streams an uncompressed tar holding the entries, with their parent
// directories, owned by root. Times are fixed so that the same inputs give the
// same layer digest.
func tarFiles(entries []fileEntry) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeTar(pw, entries))
	}()
	return pr, nil
}

func writeTar(w io.Writer, entries []fileEntry) error {
	epoch := time.Unix(0, 0)
	tw := tar.NewWriter(w)
	dirs := map[string]bool{}
	var dirList []string
	for _, e := range entries {
		for d := path.Dir(e.dest); d != "/" && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			dirList = append(dirList, d)
		}
	}
	sort.Strings(dirList) // parents sort before their children
	for _, d := range dirList {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755, ModTime: epoch}); err != nil {
			return fmt.Errorf("tar %s: %w", d, err)
		}
	}
	for _, e := range entries {
		if err := addFile(tw, e, epoch); err != nil {
			return err
		}
	}
	return tw.Close()
}

func addFile(tw *tar.Writer, e fileEntry, epoch time.Time) error {
	f, err := os.Open(e.src)
	if err != nil {
		return fmt.Errorf("layer file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("layer file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", e.src)
	}
	mode := int64(0o644)
	if st.Mode()&0o111 != 0 {
		mode = 0o755
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: e.dest[1:], Size: st.Size(), Mode: mode, ModTime: epoch}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("tar %s: %w", e.dest, err)
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("tar %s: %w", e.dest, err)
	}
	return nil
}
