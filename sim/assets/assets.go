// Package assets locates the control-plane binaries (kube-apiserver, etcd,
// kube-controller-manager, kube-scheduler, kubectl, kwok) and, when they are
// missing, gets them: the official release binaries checked against their
// published sha256 (fetch.go), a classroom mirror's (mirror.go), or a build
// from source by scripts/build-controlplane.sh.
package assets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kkloud/rlab/sim/proc"
)

// KubeVersion is the Kubernetes version scripts/controlplane pins.
const KubeVersion = "v1.36.3"

// Binaries are the executables a sandbox needs, in start order.
var Binaries = []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok"}

// BuildScript is the script, relative to the source tree, that builds them.
const BuildScript = "scripts/build-controlplane.sh"

// Env reads environment variables; os.Getenv in production, a map in tests.
type Env func(string) string

// Dir returns where the binaries are looked for and which setting chose it:
// $KUBEBUILDER_ASSETS, then $RLAB_ASSETS, then the per-user cache
// $XDG_CACHE_HOME/rlab/controlplane/<version> (default ~/.cache/...).
func Dir(env Env) (dir, source string) {
	if d := env("KUBEBUILDER_ASSETS"); d != "" {
		return d, "KUBEBUILDER_ASSETS"
	}
	if d := env("RLAB_ASSETS"); d != "" {
		return d, "RLAB_ASSETS"
	}
	cache := env("XDG_CACHE_HOME")
	if cache == "" {
		cache = filepath.Join(env("HOME"), ".cache")
	}
	return filepath.Join(cache, "rlab", "controlplane", KubeVersion), "cache"
}

// MissingError says which binary is missing and what builds it.
type MissingError struct {
	Dir, Source string
	Missing     []string
	// Foreign are the Missing binaries that are there but whose stamp says
	// they were built for another platform (a copied cache, or RLAB_ASSETS
	// pointing at a cross-build): name → that platform.
	Foreign map[string]Platform
}

func (e *MissingError) Error() string {
	names := make([]string, len(e.Missing))
	for i, m := range e.Missing {
		names[i] = m
		if p, ok := e.Foreign[m]; ok {
			names[i] += fmt.Sprintf(" (built for %s, not %s)", p, Host())
		}
	}
	what := strings.Join(names, ", ")
	switch e.Source {
	case "KUBEBUILDER_ASSETS":
		return fmt.Sprintf("KUBEBUILDER_ASSETS=%s has no %s: unset KUBEBUILDER_ASSETS to use rlab's own build, or install into that directory with `RLAB_ASSETS=%s rlab assets get`",
			e.Dir, what, e.Dir)
	default:
		return fmt.Sprintf("control plane %s not installed: %s missing in %s; get it with `rlab assets get` (or `make assets`): the release binaries in seconds where the network reaches them, else a build from source of several minutes",
			KubeVersion, what, e.Dir)
	}
}

// Find returns the directory holding every binary, or a *MissingError.
func Find(env Env) (string, error) { return FindOnly(env, Binaries...) }

// FindOnly is Find for some of the binaries: the kind backend needs only
// kubectl (for the shell operator).
func FindOnly(env Env, names ...string) (string, error) {
	dir, source := Dir(env)
	var missing []string
	var foreign map[string]Platform
	for _, b := range names {
		path := filepath.Join(dir, b)
		st, err := os.Stat(path)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, b)
			continue
		}
		// A stamp, if any, must name this platform; whether the binary is
		// up to date is the build script's business (see Stamp).
		if s, err := ReadStamp(path); err == nil && s.Platform != Host() {
			missing = append(missing, b)
			if foreign == nil {
				foreign = map[string]Platform{}
			}
			foreign[b] = s.Platform
		}
	}
	if len(missing) > 0 {
		return dir, &MissingError{Dir: dir, Source: source, Missing: missing, Foreign: foreign}
	}
	return dir, nil
}

// SourceRoot finds the rlab source tree (the directory holding BuildScript):
// $RLAB_SRC, then upwards from the working directory, then upwards from the
// running executable (bin/rlab in a checkout).
func SourceRoot(env Env) (string, error) {
	var starts []string
	if s := env("RLAB_SRC"); s != "" {
		starts = append(starts, s)
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		// make install's link in ~/.local/bin is not the checkout's bin/
		// (on macOS, os.Executable does not resolve it).
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		starts = append(starts, filepath.Dir(exe))
	}
	for _, s := range starts {
		for d := s; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, BuildScript)); err == nil {
				return d, nil
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	return "", errors.New("cannot find " + BuildScript + ": run rlab from its source tree, or set RLAB_SRC to it")
}

// KindScript builds the offline kind node image (root and Docker needed).
const KindScript = "scripts/build-kind-node.sh"

// Build runs the build script into dir, streaming its progress to out. With
// names it builds only those binaries.
func Build(ctx context.Context, env Env, dir string, out io.Writer, names ...string) error {
	if err := runScript(ctx, env, BuildScript, dir, out, names...); err != nil {
		return fmt.Errorf("building the control plane (%s) failed: %w", BuildScript, err)
	}
	return nil
}

// BuildPlatform cross-builds the control plane for p into dir (see
// PlatformDir), streaming the script's progress to out.
func BuildPlatform(ctx context.Context, env Env, p Platform, dir string, out io.Writer) error {
	if err := runScript(ctx, env, BuildScript, dir, out, "--platform", string(p)); err != nil {
		return fmt.Errorf("building the control plane for %s (%s --platform %s) failed: %w", p, BuildScript, p, err)
	}
	return nil
}

// BuildKind builds the offline kind node image (kubelet and kubeadm into
// dir, a Debian rootfs, the control-plane images) and loads it into Docker,
// streaming its progress to out.
func BuildKind(ctx context.Context, env Env, dir string, out io.Writer) error {
	if err := runScript(ctx, env, KindScript, dir, out); err != nil {
		return fmt.Errorf("building the kind node image (%s) failed: %w", KindScript, err)
	}
	return nil
}

// runScript runs one of the source tree's build scripts with RLAB_ASSETS=dir.
func runScript(ctx context.Context, env Env, script, dir string, out io.Writer, args ...string) error {
	root, err := SourceRoot(env)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(root, script)}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "RLAB_ASSETS="+dir)
	cmd.Stdout, cmd.Stderr = out, out
	groupCmd(cmd)
	return cmd.Run()
}

// groupCmd runs cmd in its own process group and, when its context ends,
// stops the whole group (go build forks compilers), not just its leader.
func groupCmd(cmd *exec.Cmd) {
	cmd.SysProcAttr = proc.ChildAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
}

// Ensure returns the asset directory, getting the binaries first (Get) if they
// are missing from rlab's own directory. A KUBEBUILDER_ASSETS directory is
// never installed into: it belongs to someone else.
func Ensure(ctx context.Context, env Env, out io.Writer) (string, error) {
	return EnsureOnly(ctx, env, out, Binaries...)
}

// EnsureOnly is Ensure for some of the binaries.
func EnsureOnly(ctx context.Context, env Env, out io.Writer, names ...string) (string, error) {
	dir, err := FindOnly(env, names...)
	var miss *MissingError
	if !errors.As(err, &miss) || miss.Source == "KUBEBUILDER_ASSETS" {
		return dir, err
	}
	fmt.Fprintf(out, "control plane %s not installed yet (%s missing); getting it now into %s\n",
		KubeVersion, strings.Join(miss.Missing, ", "), dir)
	if err := Get(ctx, env, dir, out, miss.Missing...); err != nil {
		return dir, err
	}
	return FindOnly(env, names...)
}

// SourceEnv is the variable that says where Get gets the binaries from.
const SourceEnv = "RLAB_ASSETS_SOURCE"

// A Source is where Get takes the binaries from.
type Source struct {
	// Kind is "auto" (unset: the official releases, and the source build
	// if they cannot be had), "release", "source", or "mirror" (URL).
	Kind string
	URL  string
}

func (s Source) String() string {
	if s.Kind == "mirror" {
		return s.URL
	}
	return s.Kind
}

// ParseSource reads $RLAB_ASSETS_SOURCE.
func ParseSource(v string) (Source, error) {
	switch v = strings.TrimSpace(v); {
	case v == "" || v == "auto":
		return Source{Kind: "auto"}, nil
	case v == "release" || v == "source":
		return Source{Kind: v}, nil
	case strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://"):
		return Source{Kind: "mirror", URL: v}, nil
	}
	return Source{}, fmt.Errorf("%s=%s: want release, source, or a classroom mirror's URL such as http://192.168.1.10:8080 (unset: release, then source)", SourceEnv, v)
}

// GetOptions tunes Get for tests; production passes none.
type GetOptions struct {
	Upstream Upstream
	Timeouts Timeouts
	// Build replaces the source build (tests: a fake that records names).
	Build func(ctx context.Context, names []string) error
	// Stamp replaces asking the build script for the stamp it would write.
	Stamp func(ctx context.Context) (Stamp, error)
}

// Get installs the binaries names (default all) into dir from the source
// $RLAB_ASSETS_SOURCE names: by default the release downloads, each checked
// against its published sha256, and, for whatever they could not give (no
// network, no release for the platform, a checksum that does not match), the
// source build. Binaries built here (or unpacked) that the build script would
// rebuild, since its recipe or this Go changed, are fetched anew too.
func Get(ctx context.Context, env Env, dir string, out io.Writer, names ...string) error {
	return GetWith(ctx, env, dir, out, GetOptions{}, names...)
}

// GetWith is Get with options.
func GetWith(ctx context.Context, env Env, dir string, out io.Writer, o GetOptions, names ...string) error {
	src, err := ParseSource(env(SourceEnv))
	if err != nil {
		return err
	}
	if len(names) == 0 {
		names = Binaries
	}
	build := o.Build
	if build == nil {
		build = func(ctx context.Context, names []string) error { return Build(ctx, env, dir, out, names...) }
	}
	if src.Kind == "source" {
		return build(ctx, names)
	}
	stampOf := o.Stamp
	if stampOf == nil {
		stampOf = func(ctx context.Context) (Stamp, error) { return scriptStamp(ctx, env, dir) }
	}
	stale := staleBuilt(ctx, dir, names, stampOf)
	if len(stale) > 0 {
		fmt.Fprintf(out, "%s: built or unpacked for another recipe or Go; getting them anew\n", strings.Join(stale, ", "))
	}
	fo := FetchOptions{Dir: dir, Names: names, From: src.URL, Upstream: o.Upstream, Timeouts: o.Timeouts, Progress: out,
		GitHubToken: env("GITHUB_TOKEN"), Replace: stale}
	res, err := Fetch(ctx, fo)
	if len(res.Installed) > 0 {
		fmt.Fprintf(out, "fetched %d binaries (%s) in %.1fs; %d already installed\n",
			len(res.Installed), MB(res.Bytes()), res.Elapsed.Seconds(), len(res.Present))
	}
	if err == nil {
		return nil
	}
	if src.Kind != "auto" || ctx.Err() != nil {
		return fmt.Errorf("%s=%s: %w", SourceEnv, src, err)
	}
	var rest []string
	for _, n := range names {
		if !slices.Contains(res.Present, n) && !slices.ContainsFunc(res.Installed, func(f FetchedFile) bool { return f.Name == n }) {
			rest = append(rest, n)
		}
	}
	if len(rest) == 0 { // the script would take "none" for "every one"
		return err
	}
	var un *UnreachableError
	if errors.As(err, &un) {
		fmt.Fprintf(out, "no release download: %v; building from source instead (%s=source skips this look)\n", un.Err, SourceEnv)
	} else {
		fmt.Fprintf(out, "release download failed: %v\nbuilding %s from source instead\n", err, strings.Join(rest, ", "))
	}
	return build(ctx, rest)
}

// staleBuilt are those of names in dir, built here or unpacked, that the
// build script would rebuild: their recipe is not the current one, or (built
// here) this Go is not the one that built them (the script's rule, in
// scripts/build-controlplane.sh). None when the script cannot say (no Go, no
// source tree): then nothing could rebuild them either.
func staleBuilt(ctx context.Context, dir string, names []string, current func(context.Context) (Stamp, error)) []string {
	var mine []string
	stamps := map[string]Stamp{}
	for _, n := range names {
		if s, err := ReadStamp(filepath.Join(dir, n)); err == nil && s.Origin != OriginRelease {
			mine = append(mine, n)
			stamps[n] = s
		}
	}
	if len(mine) == 0 {
		return nil
	}
	cur, err := current(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range mine {
		s := stamps[n]
		if s.Platform != cur.Platform || s.Recipe != cur.Recipe || (s.Origin == OriginBuild && s.Go != cur.Go) {
			out = append(out, n)
		}
	}
	return out
}

// scriptStamp is the stamp the build script would write for this platform
// (its --print-stamp).
func scriptStamp(ctx context.Context, env Env, dir string) (Stamp, error) {
	var b strings.Builder
	if err := runScript(ctx, env, BuildScript, dir, &b, "--print-stamp"); err != nil {
		return Stamp{}, err
	}
	return ParseStamp(strings.TrimSpace(b.String()))
}
