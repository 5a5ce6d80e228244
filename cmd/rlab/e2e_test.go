package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/proc"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/state"
)

// These tests drive the real rlab binary against the real control plane, the
// way a student does: rlab run in one terminal, rlab env and kubectl in another.

var rlabBin string

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "rlab-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rlabBin = filepath.Join(tmp, "rlab")
	// Built as `rlab assets pack` builds it (static, -trimpath), so that the
	// pack test finds every package compiled and only links. Under -race
	// (the fast tier) with the race detector too, which needs cgo, and
	// without -trimpath: the packages the test binary was compiled from are
	// the same compiles, so the build only links.
	build := exec.Command("go", "build", "-trimpath", "-o", rlabBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if raceOn {
		build = exec.Command("go", "build", "-race", "-o", rlabBin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=1")
	}
	out, err := build.CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build rlab: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(tmp)
	os.Exit(code)
}

// sandboxEnv is an environment with its own state dir and temp dir.
type sandboxEnv struct {
	state, tmp string
	env        []string
	dir        string // working directory of the commands; "" for the test's
}

func newSandboxEnv(t testing.TB) sandboxEnv {
	root := t.TempDir()
	e := sandboxEnv{state: filepath.Join(root, "state"), tmp: filepath.Join(root, "tmp")}
	if err := os.MkdirAll(e.tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_STATE_HOME=") && !strings.HasPrefix(kv, "TMPDIR=") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			e.env = append(e.env, kv)
		}
	}
	e.env = append(e.env, "XDG_STATE_HOME="+e.state, "TMPDIR="+e.tmp)
	return e
}

func (e sandboxEnv) rlabState() string { return filepath.Join(e.state, "rlab") }

// run is one `rlab run` process, in its own process group so the test can
// always stop exactly what it started.
type run struct {
	cmd            *exec.Cmd
	stdout, stderr *simtest.Buffer
	done           chan struct{}
	err            error
}

func startRun(t testing.TB, e sandboxEnv, args ...string) *run {
	t.Helper()
	return startRunOf(t, rlabBin, e, args...)
}

// startRunOf is startRun with another rlab binary.
func startRunOf(t testing.TB, bin string, e sandboxEnv, args ...string) *run {
	t.Helper()
	return startRlab(t, bin, e, append([]string{"run"}, args...)...)
}

// startRlab runs any rlab command the way startRun runs `rlab run`.
func startRlab(t testing.TB, bin string, e sandboxEnv, args ...string) *run {
	t.Helper()
	r := &run{stdout: &simtest.Buffer{}, stderr: &simtest.Buffer{}, done: make(chan struct{})}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Env, r.cmd.Dir = e.env, e.dir
	r.cmd.Stdout, r.cmd.Stderr = r.stdout, r.stderr
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
			<-r.done
		}
	})
	return r
}

func (r *run) pid() int { return r.cmd.Process.Pid }

// readyLine starts the line `rlab run` prints once the sample Echo has
// converged in every style (after "cluster ready in …").
const readyLine = "\nready in"

// waitStderr waits until stderr contains s, failing early if rlab exits.
func (r *run) waitStderr(t testing.TB, s string, timeout time.Duration) {
	t.Helper()
	exited := false
	err := simtest.Poll(t.Context(), timeout, func(context.Context) (bool, error) {
		select {
		case <-r.done:
			exited = true // its output is complete: look once more, and stop
		default:
		}
		return exited || strings.Contains(r.stderr.String(), s), nil
	})
	switch {
	case err != nil:
		t.Fatalf("no %q: %v; stderr:\n%s", s, err, r.stderr)
	case !strings.Contains(r.stderr.String(), s):
		t.Fatalf("rlab run exited (%v) before printing %q; stderr:\n%s", r.err, s, r.stderr)
	}
}

func (r *run) wait(t testing.TB, timeout time.Duration) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(timeout):
		t.Fatalf("rlab run did not exit within %s; stderr:\n%s", timeout, r.stderr)
		return nil
	}
}

// children lists pid's live descendants, with their start times.
func children(pid int) []proc.Entry {
	var out []proc.Entry
	for _, c := range directChildren(pid) {
		out = append(out, c)
		out = append(out, children(c.PID)...)
	}
	return out
}

// directChildren lists the live processes whose parent is pid.
func directChildren(pid int) []proc.Entry {
	des, _ := os.ReadDir("/proc")
	var out []proc.Entry
	for _, de := range des {
		p, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		if e, ppid, ok := stat(p); ok && ppid == pid {
			out = append(out, e)
		}
	}
	return out
}

// stat reads pid's entry (with its start time) and parent from /proc; ok is
// false if it is gone or a zombie.
func stat(pid int) (e proc.Entry, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return e, 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces, so cut at ")".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || f[0] == "Z" {
		return e, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	st, _ := strconv.ParseUint(f[19], 10, 64)
	return proc.Entry{PID: pid, Start: st, Name: strings.TrimPrefix(s[:i], strconv.Itoa(pid)+" (")}, ppid, true
}

func alive(es []proc.Entry) []proc.Entry {
	var out []proc.Entry
	for _, e := range es {
		if e.Alive() {
			out = append(out, e)
		}
	}
	return out
}

// cli runs a short command and returns its stdout, stderr and exit code.
func cli(t testing.TB, env []string, name string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return out.String(), errb.String(), code
}

func kubectlPath(t *testing.T) string {
	dir, err := assets.Find(os.Getenv)
	if err != nil {
		t.Fatalf("the e2e tests need the control plane: %v", err)
	}
	return filepath.Join(dir, "kubectl")
}

// TestRunEnvKubectl: rlab run reports ready with phase timings; rlab env
// hands out a kubeconfig the student's kubectl (the one built here) can use:
// Echo columns, the apiserver's own validation message, both versions. A
// second rlab run is refused; SIGINT stops everything and leaves no files.
// checkTimings checks `rlab run --timings`' timeline: every process
// started, in time order, kube-controller-manager only once the apiserver
// was healthy, and the CPU each had used.
func checkTimings(t *testing.T, stderr string) {
	t.Helper()
	_, tl, ok := strings.Cut(stderr, "start-up timeline (seconds since rlab started):\n")
	if !ok {
		t.Fatalf("no start-up timeline; stderr:\n%s", stderr)
	}
	line := regexp.MustCompile(`^  +(\d+\.\d{3})  (\S+) +(.+)$`)
	var (
		last float64
		at   = map[string]float64{} // "who what" → seconds
	)
	for _, l := range strings.Split(tl, "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			break
		}
		sec, _ := strconv.ParseFloat(m[1], 64)
		if sec < last {
			t.Errorf("timeline goes back in time at %q", l)
		}
		last = sec
		at[m[2]+" "+strings.Fields(m[3])[0]] = sec
	}
	for _, p := range []string{"etcd", "kube-apiserver", "kube-scheduler", "kwok", "kube-controller-manager", "garbage-collector"} {
		if _, ok := at[p+" started"]; !ok {
			t.Errorf("timeline lacks %s started:\n%s", p, tl)
		}
	}
	if kcm, healthy := at["kube-controller-manager started"], at["kube-apiserver healthy"]; healthy == 0 || kcm < healthy {
		t.Errorf("kube-controller-manager started at %.3fs, the apiserver healthy at %.3fs: want it after\n%s", kcm, healthy, tl)
	}
	if !regexp.MustCompile(`CPU used by the end of the control plane's start-up: .*kube-apiserver [1-9]?\d\.\d\ds`).MatchString(tl) {
		t.Errorf("no CPU line naming kube-apiserver:\n%s", tl)
	}
}

func TestRunEnvKubectl(t *testing.T) {
	simtest.NeedsControlPlane(t)
	kubectl := kubectlPath(t)
	e := newSandboxEnv(t)

	_, stderr, code := cli(t, e.env, rlabBin, "env")
	if code != 1 || !strings.Contains(stderr, "no sandbox is running") {
		t.Fatalf("rlab env with no sandbox: exit %d, stderr %q", code, stderr)
	}

	r := startRun(t, e, "--operators", "none", "--for", "10m", "--timings")
	// The phase lines follow "ready in", then "point your kubectl", then
	// the timeline, which ends with the CPU line.
	r.waitStderr(t, "CPU used by the end of the control plane's start-up: ", 3*time.Minute)
	if !regexp.MustCompile(`ready in \d+\.\d+s on envtest\n(  \S.*\d\.\d\ds\n){7}`).MatchString(r.stderr.String()) {
		t.Errorf("want `ready in <seconds>s on envtest` then 7 phase lines; stderr:\n%s", r.stderr)
	}
	checkTimings(t, r.stderr.String())
	if out := r.stdout.String(); out != "" {
		t.Errorf("stdout is for the timeline and should be empty with no operators, got %q", out)
	}

	out, stderr, code := cli(t, e.env, rlabBin, "env")
	want := "export KUBECONFIG=" + filepath.Join(e.rlabState(), "kubeconfig") + "\n"
	if code != 0 || out != want {
		t.Fatalf("rlab env: exit %d, out %q (want %q), stderr %q", code, out, want, stderr)
	}
	kenv := append(append([]string(nil), e.env...), strings.TrimPrefix(strings.TrimSpace(out), "export "))
	if st, err := os.Stat(filepath.Join(e.rlabState(), "kubeconfig")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig mode %v (%v), want 0600", st.Mode().Perm(), err)
	}

	t.Run("kubectl version", func(t *testing.T) {
		out, stderr, code := cli(t, kenv, kubectl, "version")
		if code != 0 || !strings.Contains(out, "Client Version: v1.36.3") || !strings.Contains(out, "Server Version: v1.36.3") {
			t.Fatalf("kubectl version: exit %d\n%s%s", code, out, stderr)
		}
	})

	t.Run("kubectl get ec", func(t *testing.T) {
		apply := exec.Command(kubectl, "apply", "-f", "-")
		apply.Env = kenv
		apply.Stdin = strings.NewReader("apiVersion: kkloud.io/v1\nkind: Echo\nmetadata: {name: hello, namespace: default}\nspec: {message: \"xin chao operator\"}\n")
		if b, err := apply.CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, b)
		}
		out, stderr, code := cli(t, kenv, kubectl, "get", "ec", "-n", "default")
		if code != 0 {
			t.Fatalf("kubectl get ec: exit %d: %s", code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || !reflectFields(lines[0], "NAME", "MESSAGE", "REPLICAS", "READY") ||
			!strings.HasPrefix(lines[1], "hello") || !strings.Contains(lines[1], "xin chao operator") {
			t.Fatalf("kubectl get ec:\n%s", out)
		}
		if f := strings.Fields(strings.TrimPrefix(lines[1], "hello")); f[3] != "1" { // "xin chao operator" is 3 fields
			t.Fatalf("REPLICAS column = %q, want the default 1:\n%s", f[3], out)
		}
	})

	t.Run("kubectl shows the apiserver's validation message", func(t *testing.T) {
		apply := exec.Command(kubectl, "apply", "-f", "-")
		apply.Env = kenv
		apply.Stdin = strings.NewReader("apiVersion: kkloud.io/v1\nkind: Echo\nmetadata: {name: bad, namespace: default}\nspec: {message: hi, replicas: 6}\n")
		b, err := apply.CombinedOutput()
		if err == nil || !strings.Contains(string(b), `The Echo "bad" is invalid: spec.replicas`) ||
			!strings.Contains(string(b), "should be less than or equal to 5") {
			t.Fatalf("kubectl apply replicas 6: err=%v\n%s", err, b)
		}
	})

	t.Run("second run refused", func(t *testing.T) {
		_, stderr, code := cli(t, e.env, rlabBin, "run", "--operators", "none", "--for", "1s")
		if code == 0 || !strings.Contains(stderr, "already running") || !strings.Contains(stderr, fmt.Sprintf("pid %d", r.pid())) {
			t.Fatalf("second rlab run: exit %d, stderr %q", code, stderr)
		}
	})

	kids := children(r.pid())
	if len(kids) < 5 {
		t.Fatalf("want at least 5 children (apiserver, etcd, kcm, scheduler, kwok), got %v", kids)
	}
	if err := syscall.Kill(r.pid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := r.wait(t, 60*time.Second); err != nil {
		t.Fatalf("rlab run after SIGINT: %v\n%s", err, r.stderr)
	}
	if a := alive(kids); len(a) > 0 {
		t.Fatalf("children alive after SIGINT: %v", a)
	}
	for _, p := range []string{"run", "pids", "kubeconfig", "rlab.pid"} {
		if _, err := os.Stat(filepath.Join(e.rlabState(), p)); !os.IsNotExist(err) {
			t.Errorf("%s left in the state dir after SIGINT (%v)", p, err)
		}
	}
	if left, _ := os.ReadDir(e.tmp); len(left) > 0 {
		t.Errorf("temp files left after SIGINT: %v", left)
	}
	if _, stderr, code := cli(t, e.env, rlabBin, "env"); code != 1 || !strings.Contains(stderr, "no sandbox is running") {
		t.Errorf("rlab env after stop: exit %d, %q", code, stderr)
	}
}

// reflectFields reports whether line's whitespace-separated fields are want.
func reflectFields(line string, want ...string) bool {
	return strings.Join(strings.Fields(line), " ") == strings.Join(want, " ")
}

// TestSIGKILLLeavesNothing: after SIGKILL of rlab run every child dies on its
// own (parent-death signal), and the next run cleans the stale state and
// starts normally.
func TestSIGKILLLeavesNothing(t *testing.T) {
	simtest.NeedsControlPlane(t)
	e := newSandboxEnv(t)
	r := startRun(t, e, "--shell-interval", "1s", "--for", "10m")
	r.waitStderr(t, readyLine, 4*time.Minute)
	// The cluster is ready (operators started) before the sample converges,
	// and the run says how long each style took.
	r.waitStderr(t, "after the operators started", 10*time.Second)
	if re := regexp.MustCompile(`(?s)cluster ready in \d+\.\d+s on envtest\n(?:.*\n)?ready in \d+\.\d+s on envtest\n.*` +
		`hello 2/2 after the operators started: shell \d+\.\d+s, clientgo \d+\.\d+s, runtime \d+\.\d+s\n`); !re.MatchString(r.stderr.String()) {
		t.Errorf("want `cluster ready in`, then `ready in`, then each style's convergence; stderr:\n%s", r.stderr)
	}
	kids := children(r.pid())
	// apiserver, etcd, kcm, scheduler, kwok, 5 operator replicas, and
	// whatever kubectl the shell loop runs at that moment.
	if len(kids) < 10 {
		t.Fatalf("want at least 10 descendants, got %v", kids)
	}
	if err := syscall.Kill(r.pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = r.wait(t, 10*time.Second)
	simtest.Eventually(t, 5*time.Second, "children gone after SIGKILL of rlab", func(context.Context) (bool, error) {
		a := alive(kids)
		return len(a) == 0, fmt.Errorf("still alive: %v", a)
	})
	if _, err := os.Stat(filepath.Join(e.rlabState(), "rlab.pid")); err != nil {
		t.Fatalf("a killed run should leave its stale pid file behind for the next run to find: %v", err)
	}

	// The next run finds the stale pid file and run dir, cleans up, goes on.
	r2 := startRun(t, e, "--operators", "none", "--for", "10m")
	r2.waitStderr(t, readyLine, 3*time.Minute)
	out, _, code := cli(t, e.env, rlabBin, "env")
	if code != 0 || !strings.HasPrefix(out, "export KUBECONFIG=") {
		t.Fatalf("rlab env after restart: exit %d, %q", code, out)
	}
	if err := syscall.Kill(r2.pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := r2.wait(t, 60*time.Second); err != nil {
		t.Fatalf("rlab run after SIGTERM: %v\n%s", err, r2.stderr)
	}
	if left, _ := os.ReadDir(e.tmp); len(left) > 0 {
		t.Errorf("temp files left: %v", left)
	}
}

// TestRunOperatorsJSON: rlab run with the three operators says ready once
// every style reports the sample Echo 2/2, and with --output json every line
// of stdout is a trace event, from every style. rlab do acts on it, as the
// timeline shows (rlab.act), and says so when no sandbox runs; its socket
// goes with the sandbox.
func TestRunOperatorsJSON(t *testing.T) {
	simtest.NeedsControlPlane(t)
	e := newSandboxEnv(t)
	_, stderr, code := cli(t, e.env, rlabBin, "do", "partition", "clientgo")
	if want := "rlab do: no sandbox runs in " + e.rlabState() + ": start one with rlab up\n"; code != 1 || stderr != want {
		t.Fatalf("rlab do with no sandbox: exit %d, stderr %q, want exit 1 and %q", code, stderr, want)
	}
	r := startRun(t, e, "--output", "json", "--shell-interval", "1s", "--for", "10m")
	r.waitStderr(t, "point your kubectl at it", 4*time.Minute) // after the phase lines
	for _, phase := range []string{"operators started", "sample echo 2/2"} {
		if !strings.Contains(r.stderr.String(), phase) {
			t.Errorf("no %q phase on stderr:\n%s", phase, r.stderr)
		}
	}
	t.Run("rlab do partition, heal", func(t *testing.T) { doPartitionHeal(t, e, r) })
	if err := syscall.Kill(r.pid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := r.wait(t, 60*time.Second); err != nil {
		t.Fatalf("rlab run after SIGINT: %v\n%s", err, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.rlabState(), "control.sock")); !os.IsNotExist(err) {
		t.Errorf("control.sock left in the state dir after SIGINT (%v)", err)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout.String(), "\n"), "\n")
	sources := map[string]bool{}
	for i, line := range lines {
		ev, err := trace.ParseLine([]byte(line))
		if err != nil {
			t.Fatalf("stdout line %d is not a JSON event: %v: %q", i+1, err, line)
		}
		sources[string(ev.Style())+" "+string(ev.Kind)] = true
	}
	for _, st := range style.All() {
		for _, kind := range []trace.Kind{trace.ReconcileEnd, trace.APIRequest} {
			if want := string(st) + " " + string(kind); !sources[want] {
				t.Errorf("no %q in %d lines of --output json", want, len(lines))
			}
		}
	}
}

// TestRunFlagErrors: flags rlab run cannot use are refused, said once, before
// anything starts.
func TestRunFlagErrors(t *testing.T) {
	e := newSandboxEnv(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--output", "yaml"}, `rlab: --output "yaml": want text or json` + "\n"},
		{[]string{"run", "--operators", "shell,python"}, `rlab: --operators: unknown style "python" (want some of shell,clientgo,runtime, or none)` + "\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, stderr, code := cli(t, e.env, rlabBin, tt.args...)
			if code != 1 || out != "" || stderr != tt.want {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and stderr %q", code, out, stderr, tt.want)
			}
		})
	}
	if pid := (state.Dir{Root: e.rlabState()}).Running(); pid != 0 {
		t.Fatalf("a sandbox (pid %d) runs after refused flags", pid)
	}
}

// doPartitionHeal: rlab do cuts clientgo's leader off (its proxy answers
// 503, it loses the Lease), the timeline says rlab did it at the student's
// command, and rlab do heal lets it through again.
func doPartitionHeal(t *testing.T, e sandboxEnv, r *run) {
	out, stderr, code := cli(t, e.env, rlabBin, "do", "partition", "clientgo")
	m := regexp.MustCompile(`^partitioned (clientgo/[a-e]) \(refuse\)\n$`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("rlab do partition clientgo: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	cut := m[1]
	tl := &timeline{r: r}
	tl.wait(t, 10*time.Second, "the act of rlab do partition", func(e trace.Event) bool {
		return e.Kind == trace.Act && trace.As[trace.Action](e).Action == "partition_leader" &&
			trace.As[trace.Action](e).Style == "clientgo" && trace.As[trace.Action](e).Via == trace.ViaCommand
	})
	refused := func(e trace.Event) bool {
		c := e.Code()
		return e.Kind == trace.APIRequest && e.Source == "proxy/"+cut && c == 503
	}
	tl.wait(t, 30*time.Second, "a request of "+cut+" refused (503)", refused)
	tl.wait(t, 30*time.Second, "leader.lost of "+cut, func(e trace.Event) bool {
		return e.Kind == trace.LeaderLost && e.Source == cut
	})

	out, stderr, code = cli(t, e.env, rlabBin, "do", "heal", "clientgo")
	if code != 0 || !regexp.MustCompile(`^healed clientgo/a, clientgo/b\n$`).MatchString(out) {
		t.Fatalf("rlab do heal clientgo: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	healed := time.Now()
	tl.wait(t, 60*time.Second, cut+" answered again after the heal", func(e trace.Event) bool {
		c := e.Code()
		return e.Kind == trace.APIRequest && e.Source == "proxy/"+cut && c == 200 && e.Time.After(healed)
	})
	_, stderr, code = cli(t, e.env, rlabBin, "do", "partition", "shell")
	if code != 1 || !strings.Contains(stderr, `rlab do: partition: STYLE: want a Go style, with a Lease and watches: clientgo, runtime or go, got "shell"`) {
		t.Errorf("rlab do partition shell: exit %d, stderr %q", code, stderr)
	}
}

// timeline reads the JSON events of rlab run's stdout as they come.
type timeline struct {
	r    *run
	read int // bytes of stdout parsed
}

// wait polls stdout until an event after those already seen matches.
func (tl *timeline) wait(t *testing.T, timeout time.Duration, what string, match func(trace.Event) bool) trace.Event {
	t.Helper()
	var found trace.Event
	simtest.Eventually(t, timeout, what, func(context.Context) (bool, error) {
		out := tl.r.stdout.String()
		for {
			i := strings.IndexByte(out[tl.read:], '\n')
			if i < 0 {
				return false, fmt.Errorf("not in %d bytes of stdout", tl.read)
			}
			line := out[tl.read : tl.read+i]
			tl.read += i + 1
			if ev, err := trace.ParseLine([]byte(line)); err == nil && match(ev) {
				found = ev
				return true, nil
			}
		}
	})
	return found
}
