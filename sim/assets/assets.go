// Package assets locates the control-plane binaries (kube-apiserver, etcd,
// kube-controller-manager, kube-scheduler, kubectl, kwok) and builds them from
// source with scripts/build-controlplane.sh when they are missing.
package assets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
		return fmt.Sprintf("KUBEBUILDER_ASSETS=%s has no %s: unset KUBEBUILDER_ASSETS to use rlab's own build, or build into that directory with `RLAB_ASSETS=%s rlab assets build`",
			e.Dir, what, e.Dir)
	default:
		return fmt.Sprintf("control plane %s not built: %s missing in %s; build it with `rlab assets build` (or `make assets`), which takes a few minutes the first time",
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

// Ensure returns the asset directory, building the binaries first if they are
// missing from rlab's own directory. A KUBEBUILDER_ASSETS directory is never
// built into: it belongs to someone else.
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
	fmt.Fprintf(out, "control plane %s not built yet (%s missing); building it now into %s\n",
		KubeVersion, strings.Join(miss.Missing, ", "), dir)
	if err := Build(ctx, env, dir, out, miss.Missing...); err != nil {
		return dir, err
	}
	return FindOnly(env, names...)
}
