package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/state"
	"github.com/kkloud/rlab/sim/supervisor"
)

// TestReplicaArgsImage: every replica of every style is told the sandbox's
// image, so that all three build the same pods.
func TestReplicaArgsImage(t *testing.T) {
	for _, image := range []string{echo.DefaultImage, "rlab.local/echo-server:v1"} {
		s := &Sandbox{
			opts: Options{Self: "/bin/rlab", ShellInterval: time.Second, Image: image},
			ops:  &Operators{},
		}
		for _, st := range style.All() {
			for _, r := range Replicas(st) {
				t.Run(image+"/"+st.Source(r), func(t *testing.T) {
					_, args := s.replicaArgs(st, r, "/run/kubeconfig", "/run/echo-operator.sh", "/run/bin/kubectl", nil)
					i := slices.Index(args, "--image")
					if i < 0 || i+1 >= len(args) || args[i+1] != image {
						t.Fatalf("args %q, want --image %s", args, image)
					}
				})
			}
		}
	}
}

// kindLike is a backend with a default image of its own, as kind has.
type kindLike struct {
	cluster.Cluster
	offline bool
}

func (k kindLike) WorkloadImage(fallback string) string {
	if k.offline {
		return cluster.OfflineEchoServer
	}
	return fallback
}

// TestWorkloadImage: an image asked for wins on every backend; none asked
// for is the backend's default, never empty.
func TestWorkloadImage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend cluster.Cluster
		asked   string
		want    string
	}{
		{"envtest", &cluster.Envtest{}, "", echo.DefaultImage},
		{"envtest, asked", &cluster.Envtest{}, "nginx:1.27", "nginx:1.27"},
		{"kind online", kindLike{}, "", echo.DefaultImage},
		{"kind offline", kindLike{offline: true}, "", cluster.OfflineEchoServer},
		{"kind offline, asked", kindLike{offline: true}, "nginx:1.27", "nginx:1.27"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := workloadImage(tc.backend, tc.asked); got != tc.want {
				t.Errorf("workloadImage = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCustomScripts: a custom operator's command is swapped at once for a
// script the sandbox writes to its run dir (a lesson's next version), and
// put back; a starter Script runs the same way.
func TestCustomScripts(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "version")
	// Each version says which it is, then waits as an operator does.
	version := func(v string) string { return "echo " + v + " > " + shellQuote(marker) + "; exec sleep 60" }
	mine := style.Style("mine")
	sd := state.Dir{Root: filepath.Join(dir, "it's a state dir")}
	custom := []Custom{{Name: mine, Command: version("v1"), Replicas: 1}}
	super := supervisor.New(supervisor.Options{PIDDir: filepath.Join(dir, "pids"), Backoff: 50 * time.Millisecond})
	c := &Customs{super: super, plan: replicaPlan{custom: custom}, dir: filepath.Join(sd.Run(), "operators")}
	t.Cleanup(func() { _ = super.Close(time.Second) })
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := super.Add(supervisor.Spec{Style: mine, Replica: "a", Path: "/bin/sh", Args: []string{"-c", custom[0].Command},
		LogFile: filepath.Join(dir, "mine-a.log")}); err != nil {
		t.Fatal(err)
	}
	runs := func(want string) {
		t.Helper()
		defer func() {
			if t.Failed() {
				b, _ := os.ReadFile(filepath.Join(dir, "mine-a.log"))
				t.Logf("log: %s; statuses %+v", b, super.Statuses())
			}
		}()
		simtest.Eventually(t, 10*time.Second, "version "+want+" runs", simtest.True(func() bool {
			b, _ := os.ReadFile(marker)
			st := super.Statuses()
			return strings.TrimSpace(string(b)) == want && st[0].Running
		}))
	}
	runs("v1")

	if err := c.RunCustomScript(mine, "v2.sh", []byte(version("v2"))); err != nil {
		t.Fatal(err)
	}
	runs("v2")
	path := filepath.Join(c.dir, "mine-v2.sh")
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("script %s: %v, %v", path, fi, err)
	}
	if got, err := c.CustomCommand(mine); err != nil || got != scriptCommand(path) {
		t.Errorf("CustomCommand = %q, %v, want %q", got, err, scriptCommand(path))
	}

	if err := c.ResetCustom(mine); err != nil {
		t.Fatal(err)
	}
	runs("v1")
	if got, _ := c.CustomCommand(mine); got != version("v1") {
		t.Errorf("after ResetCustom: %q", got)
	}
	restarts := super.Statuses()[0].Restarts
	if err := c.ResetCustom(mine); err != nil || super.Statuses()[0].Restarts != restarts {
		t.Errorf("ResetCustom on the starter restarted it: %v", err)
	}

	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"not an operator", c.RunCustomScript(style.Shell, "x.sh", nil), "no operator shell"},
		{"a path", c.RunCustomScript(mine, "../x.sh", nil), "want a plain file name"},
		{"no command", c.setCustomCommand(mine, " "), "no command to run"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, tc.err, tc.want)
		}
	}
}

// TestCustomReplicas: SetReplicas gives a custom operator replicas from
// its spares, every one running its command with the flags added; a next
// version keeps the flags, fewer replicas stop the last ones for good, and
// ResetCustom brings back the operator as it started.
func TestCustomReplicas(t *testing.T) {
	dir := t.TempDir()
	mine := style.Style("mine")
	// Each replica writes, to a file of its own, its version and its
	// arguments, then waits as an operator does.
	version := func(v string) string {
		return `f() { echo "` + v + ` $*" > "` + dir + `/$POD_NAME"; exec sleep 60; }; f "$@"`
	}
	custom := []Custom{{Name: mine, Command: version("v1"), Replicas: 1}}
	super := supervisor.New(supervisor.Options{PIDDir: filepath.Join(dir, "pids"), Backoff: 50 * time.Millisecond})
	t.Cleanup(func() { _ = super.Close(time.Second) })
	spec := func(r string) supervisor.Spec {
		return supervisor.Spec{Style: mine, Replica: r, Path: "/bin/sh", Args: []string{"-c", custom[0].Command},
			Env: []string{"POD_NAME=mine-" + r}, LogFile: filepath.Join(dir, "mine-"+r+".log")}
	}
	c := &Customs{super: super, plan: replicaPlan{custom: custom, live: &liveReplicas{}}, dir: filepath.Join(dir, "operators"),
		spare: map[string]supervisor.Spec{"mine/b": spec("b")}}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := super.Add(spec("a")); err != nil {
		t.Fatal(err)
	}
	// runs waits until the replicas named (and no other) run, each saying want.
	runs := func(want string, replicas ...string) {
		t.Helper()
		simtest.Eventually(t, 10*time.Second, fmt.Sprintf("%v run %q", replicas, want), func(context.Context) (bool, error) {
			var names []string
			for _, s := range super.Statuses() {
				if !s.Running {
					return false, fmt.Errorf("%s is not running", s.Name)
				}
				names = append(names, s.Replica)
				if b, _ := os.ReadFile(filepath.Join(dir, "mine-"+s.Replica)); strings.TrimSpace(string(b)) != want {
					return false, fmt.Errorf("%s says %q", s.Name, b)
				}
			}
			if !slices.Equal(names, replicas) || !slices.Equal(c.plan.of(mine), replicas) {
				return false, fmt.Errorf("running %v, planned %v", names, c.plan.of(mine))
			}
			return true, nil
		})
	}
	runs("v1", "a")

	if err := c.SetReplicas(mine, 2, "--leader-elect"); err != nil {
		t.Fatal(err)
	}
	runs("v1 --leader-elect", "a", "b")
	if got, err := c.CustomCommand(mine); err != nil || got != version("v1") {
		t.Errorf("CustomCommand = %q, %v, want the command without the flags", got, err)
	}
	// Asked again, nothing changes: no replica restarts.
	restarts := super.Statuses()[0].Restarts
	if err := c.SetReplicas(mine, 2, "--leader-elect"); err != nil || super.Statuses()[0].Restarts != restarts {
		t.Errorf("SetReplicas with nothing to change restarted mine/a: %v", err)
	}

	if err := c.RunCustomScript(mine, "v2.sh", []byte(version("v2"))); err != nil {
		t.Fatal(err)
	}
	runs("v2 --leader-elect", "a", "b")

	if err := c.SetReplicas(mine, 1, ""); err != nil {
		t.Fatal(err)
	}
	runs("v2", "a")

	if err := c.SetReplicas(mine, 2, "--x=1"); err != nil {
		t.Fatal(err)
	}
	runs("v2 --x=1", "a", "b")
	if err := c.ResetCustom(mine); err != nil {
		t.Fatal(err)
	}
	runs("v1", "a")

	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"none", c.SetReplicas(mine, 0, ""), "0 replicas of mine: want 1 to 5"},
		{"too many", c.SetReplicas(mine, 6, ""), "want 1 to 5"},
		{"no spare", c.SetReplicas(mine, 3, ""), "no replica c to start here"},
		{"not a flag", c.SetReplicas(mine, 2, "--leader-elect true"), `argument "true": want flags only`},
		{"not an operator", c.SetReplicas(style.Shell, 2, ""), "no operator shell"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, tc.err, tc.want)
		}
	}
}

// shellQuote keeps every string whole through /bin/sh.
func TestShellQuote(t *testing.T) {
	for _, in := range []string{"", "plain", "it's", `"$HOME" \ * ünï`, "a'b'c", "new\nline"} {
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+shellQuote(in)).Output()
		if err != nil || string(out) != in {
			t.Errorf("shellQuote(%q) gave %q, %v", in, out, err)
		}
	}
}

// TestTuningArgs: a Tuning is the operator's flags, one argument each and
// none for a zero field; a bad one is refused in those flags' words.
func TestTuningArgs(t *testing.T) {
	tests := []struct {
		t       Tuning
		args    []string
		words   string
		invalid string // Validate's error, "" if none
	}{
		{Tuning{}, nil, "the library's defaults", ""},
		{Tuning{Workers: 10, QPS: 100, Burst: 200}, []string{"--workers=10", "--qps=100", "--burst=200"}, "--workers=10 --qps=100 --burst=200", ""},
		{Tuning{QPS: 2.5, Burst: 4}, []string{"--qps=2.5", "--burst=4"}, "--qps=2.5 --burst=4", ""},
		{Tuning{QPS: -1}, []string{"--qps=-1"}, "--qps=-1", ""},
		{Tuning{Workers: -1}, []string{"--workers=-1"}, "--workers=-1", "--workers -1: want 0 (the library's default, 1) or more"},
		{Tuning{QPS: 50}, []string{"--qps=50"}, "--qps=50", "--qps 50: want a --burst of at least 1 with it"},
	}
	for _, tt := range tests {
		t.Run(tt.words, func(t *testing.T) {
			if got := tt.t.Args(); !slices.Equal(got, tt.args) {
				t.Errorf("Args = %q, want %q", got, tt.args)
			}
			if got := tt.t.String(); got != tt.words {
				t.Errorf("String = %q, want %q", got, tt.words)
			}
			err := tt.t.Validate()
			if tt.invalid == "" && err != nil || tt.invalid != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.invalid)) {
				t.Errorf("Validate = %v, want %q", err, tt.invalid)
			}
			for _, a := range tt.args {
				if !isTuningArg(a) {
					t.Errorf("%s is not taken for a tuning argument: SetTuning would not drop it", a)
				}
			}
		})
	}
	for _, a := range []string{"--watch-owned=false", "--warmup", "--replica", "--workersx"} {
		if isTuningArg(a) {
			t.Errorf("%s taken for a tuning argument", a)
		}
	}
}

// TestProjectDirOf: the folder comes back out of the command that runs it,
// quotes and all; another command has none.
func TestProjectDirOf(t *testing.T) {
	for _, dir := range []string{"/tmp/run/operators/mine-cache", "/tmp/it's here"} {
		got, ok := projectDirOf(ProjectCommand(dir))
		if !ok || got != dir {
			t.Errorf("projectDirOf(ProjectCommand(%q)) = %q, %v", dir, got, ok)
		}
	}
	if _, ok := projectDirOf("go run ./cmd"); ok {
		t.Error("a student's go run ./cmd has a folder of its own")
	}
}

// TestWriteProjectSource: a go.mod that replaces rlab's module with
// SourcePlaceholder gets rlab's source tree; where there is none to find,
// one error and no file written.
func TestWriteProjectSource(t *testing.T) {
	files := map[string][]byte{
		"go.mod":      []byte("module example.com/echo\n\nreplace github.com/kkloud/rlab => " + SourcePlaceholder + "\n"),
		"cmd/main.go": []byte("package main\n"),
	}
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, assets.BuildScript), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RLAB_SRC", src)
	dir := t.TempDir()
	if err := WriteProject(dir, files); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !strings.Contains(string(got), "=> "+src+"\n") {
		t.Errorf("go.mod %q (%v), want rlab's source tree %s", got, err, src)
	}
	if !strings.Contains(string(files["go.mod"]), SourcePlaceholder) {
		t.Error("WriteProject changed the files it was given")
	}

	t.Setenv("RLAB_SRC", "")
	t.Chdir(t.TempDir())
	dir = filepath.Join(t.TempDir(), "p")
	err = WriteProject(dir, files)
	if err == nil || !strings.Contains(err.Error(), "RLAB_SRC") {
		t.Errorf("WriteProject with no source tree: %v, want an error naming RLAB_SRC", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s written (%v)", dir, err)
	}
}
