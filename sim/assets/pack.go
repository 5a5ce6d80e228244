package assets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ErrNoGo: packing builds with the Go toolchain, and there is none.
var ErrNoGo = errors.New("rlab assets pack builds rlab and the control plane with the Go toolchain, and there is no `go` on PATH: " +
	"install Go 1.26 or newer (https://go.dev/dl) or pack on a machine that has it; unpacking needs no Go")

// PackOptions says what to pack.
type PackOptions struct {
	Env       Env
	Platforms []Platform // default: Host()
	// Output is the archive to write; default rlab-VERSION-PLATFORMS.tar.gz
	// in the working directory.
	Output string
	// Version is rlab's version when the source tree has no git description
	// (the running rlab's).
	Version  string
	Progress io.Writer // progress lines; nil for none
}

// Packed describes a written archive.
type Packed struct {
	Manifest *Manifest
	Output   string
	Size     int64 // of the archive
	// Per platform: the files' total size, and what they take in the archive.
	Raw, Compressed map[Platform]int64
}

// Pack builds rlab and the control plane for each platform (the control plane
// with the build script, which reuses what is up to date: the host's in the
// per-user cache, the others in PlatformDir) and writes one archive with a
// manifest of versions, sizes and checksums. rlab is built first for every
// platform, so a platform rlab does not compile for fails in seconds, not
// after minutes of control-plane builds.
func Pack(ctx context.Context, o PackOptions) (*Packed, error) {
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	if len(o.Platforms) == 0 {
		o.Platforms = []Platform{Host()}
	}
	if _, err := exec.LookPath("go"); err != nil {
		return nil, fmt.Errorf("%w (%w)", ErrNoGo, err)
	}
	root, err := SourceRoot(o.Env)
	if err != nil {
		return nil, fmt.Errorf("rlab assets pack builds from rlab's source tree: %w", err)
	}
	gover, err := output(ctx, root, "go", "env", "GOVERSION")
	if err != nil {
		return nil, fmt.Errorf("go env GOVERSION: %w", err)
	}
	version := o.Version
	if v, err := output(ctx, root, "git", "describe", "--tags", "--always", "--dirty"); err == nil && v != "" {
		version = v
	}
	if version == "" {
		version = "dev"
	}
	if o.Output == "" {
		slugs := make([]string, len(o.Platforms))
		for i, p := range o.Platforms {
			slugs[i] = p.Slug()
		}
		o.Output = fmt.Sprintf("rlab-%s-%s.tar.gz", strings.ReplaceAll(version, "/", "-"), strings.Join(slugs, "_"))
	}

	tmp, err := os.MkdirTemp("", "rlab-pack-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	// 1. rlab, every platform.
	for _, p := range o.Platforms {
		bin := filepath.Join(tmp, p.Slug(), "rlab")
		if err := buildRlab(ctx, root, p, version, bin, progress); err != nil {
			return nil, err
		}
	}
	// 2. The control plane, every platform.
	for _, p := range o.Platforms {
		dir := PlatformDir(o.Env, p)
		fmt.Fprintf(progress, "%s: control plane %s into %s\n", p, KubeVersion, dir)
		pw := &prefixWriter{w: progress, prefix: string(p) + ": "}
		err := BuildPlatform(ctx, o.Env, p, dir, pw)
		pw.Flush()
		if err != nil {
			return nil, err
		}
	}

	// 3. The manifest: sizes, checksums, stamps.
	m := &Manifest{
		Format: ManifestFormat, Created: time.Now().UTC().Truncate(time.Second),
		Rlab: version, Kubernetes: KubeVersion, Kwok: KwokVersion, Go: gover,
	}
	var srcs [][]source
	for _, p := range o.Platforms {
		var ps []source
		add := func(entry, local, stamp string) error {
			size, sum, err := hashFile(local)
			if err != nil {
				return err
			}
			ps = append(ps, source{File: File{Path: entry, Size: size, SHA256: sum, Stamp: stamp}, Local: local})
			return nil
		}
		if err := add(rlabPath(p), filepath.Join(tmp, p.Slug(), "rlab"), ""); err != nil {
			return nil, err
		}
		dir := PlatformDir(o.Env, p)
		for _, b := range Binaries {
			local := filepath.Join(dir, b)
			s, err := ReadStamp(local)
			if err != nil {
				return nil, fmt.Errorf("after the build, %s has no usable stamp: %w", local, err)
			}
			if s.Platform != p {
				return nil, fmt.Errorf("after the build, %s says it is for %s, not %s", local, s.Platform, p)
			}
			if err := add(controlPlanePath(p, b), local, s.String()); err != nil {
				return nil, err
			}
		}
		pf := PlatformFile{Platform: p}
		for _, s := range ps {
			pf.Files = append(pf.Files, s.File)
		}
		m.Platforms = append(m.Platforms, pf)
		srcs = append(srcs, ps)
	}

	// 4. The archive, under a temporary name until complete.
	out, err := os.CreateTemp(filepath.Dir(o.Output), "."+filepath.Base(o.Output)+".partial-")
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", o.Output, err)
	}
	defer os.Remove(out.Name())
	res := &Packed{Manifest: m, Output: o.Output, Raw: map[Platform]int64{}, Compressed: map[Platform]int64{}}
	aw, err := newArchiveWriter(out, m)
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("writing %s: %w", o.Output, err)
	}
	last, err := aw.flush()
	for i, p := range o.Platforms {
		if err != nil {
			break
		}
		var raw int64
		for _, s := range srcs[i] {
			raw += s.Size
		}
		fmt.Fprintf(progress, "%s: writing %d files, %s, into %s\n", p, len(srcs[i]), MB(raw), o.Output)
		for _, s := range srcs[i] {
			if err = aw.add(s); err != nil {
				break
			}
		}
		var at int64
		if at, err = aw.flush(); err == nil {
			res.Raw[p], res.Compressed[p] = raw, at-last
			last = at
		}
	}
	if err == nil {
		res.Size, err = aw.close()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(out.Name(), 0o644) // CreateTemp's 0600 would keep it from a shared drive
	}
	if err == nil {
		err = os.Rename(out.Name(), o.Output)
	}
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", o.Output, err)
	}
	return res, nil
}

// MB formats a byte count, e.g. "412.3 MB".
func MB(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// buildRlab cross-builds ./cmd/rlab the way the control plane is built
// (CGO_ENABLED=0, -trimpath, stripped), with version stamped in.
func buildRlab(ctx context.Context, root string, p Platform, version, bin string, progress io.Writer) error {
	fmt.Fprintf(progress, "%s: building rlab %s ...\n", p, version)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", bin, "./cmd/rlab")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS(), "GOARCH="+p.Arch())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	groupCmd(cmd)
	stop := heartbeat(progress, fmt.Sprintf("%s: rlab", p), start)
	err := cmd.Run()
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("rlab does not build for %s (CGO_ENABLED=0 GOOS=%s GOARCH=%s go build ./cmd/rlab in %s): %w\n%s",
			p, p.OS(), p.Arch(), root, err, strings.TrimSpace(out.String()))
	}
	fmt.Fprintf(progress, "%s: rlab built in %s\n", p, time.Since(start).Round(time.Second))
	return nil
}

// heartbeat says every 30 s that what is still building; stop ends it.
func heartbeat(w io.Writer, what string, start time.Time) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(w, "%s: still building (%s)\n", what, time.Since(start).Round(time.Second))
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// output runs a short command in dir and returns its trimmed stdout.
func output(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	b, err := cmd.Output()
	return strings.TrimSpace(string(b)), err
}

// prefixWriter prefixes every line written through it.
type prefixWriter struct {
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i]); err != nil {
			return len(b), err
		}
		p.buf = p.buf[i+1:]
	}
}

// Flush writes a last unterminated line.
func (p *prefixWriter) Flush() {
	if len(p.buf) > 0 {
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf)
		p.buf = nil
	}
}
