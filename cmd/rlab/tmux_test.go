package main

import (
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

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/runner"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/proc"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/state"
)

// tmuxTerm is one tmux server of this test (its own socket) running one
// session, so the test touches no one else's tmux.
type tmuxTerm struct {
	t             testing.TB
	socket, name  string
	width, height int
}

func (m *tmuxTerm) cmd(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", m.socket}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (m *tmuxTerm) capture() string {
	out, err := m.cmd("capture-pane", "-p", "-t", m.name)
	if err != nil {
		m.t.Fatal(err)
	}
	return out
}

func (m *tmuxTerm) send(keys ...string) {
	if _, err := m.cmd(append([]string{"send-keys", "-t", m.name}, keys...)...); err != nil {
		m.t.Fatal(err)
	}
}

// waitScreen polls the screen until cond holds or the deadline passes. It
// polls every 100 ms, not simtest's 20: each look runs tmux.
func (m *tmuxTerm) waitScreen(what string, timeout time.Duration, cond func(screen string) bool) string {
	m.t.Helper()
	var s string
	err := wait.PollUntilContextTimeout(m.t.Context(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		s = m.capture()
		return cond(s), nil
	})
	if err != nil {
		m.t.Fatalf("after %s: %s; the screen:\n%s", timeout, what, s)
	}
	return s
}

// holdScreen looks at the screen every 100 ms for d, the time a student
// reads a step, and fails the first time cond does not hold: what must
// not happen while nobody acts.
func (m *tmuxTerm) holdScreen(what string, d time.Duration, cond func(screen string) bool) {
	m.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if s := m.capture(); !cond(s) {
			m.t.Fatalf("while the student read the step: %s; the screen:\n%s", what, s)
		}
		select {
		case <-m.t.Context().Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// panes cuts the screen into the three panes' columns, found by the "┌"
// corners on the line with the pane titles.
func panes(screen string) [][]string {
	lines := strings.Split(screen, "\n")
	for i, l := range lines {
		if !strings.Contains(l, "shell loop") || !strings.Contains(l, "controller-runtime") {
			continue
		}
		r := []rune(l)
		var starts []int
		for j, c := range r {
			if c == '┌' {
				starts = append(starts, j)
			}
		}
		starts = append(starts, len(r))
		out := make([][]string, len(starts)-1)
		for _, body := range lines[i:] {
			br := []rune(body)
			for p := range out {
				lo, hi := min(starts[p], len(br)), min(starts[p+1], len(br))
				out[p] = append(out[p], string(br[lo:hi]))
			}
		}
		return out
	}
	return nil
}

// everyPane says whether each pane (the three built-in ones, and any
// student's operator's beside them) has all the texts.
func everyPane(screen string, texts ...string) bool {
	ps := panes(screen)
	if len(ps) < 3 {
		return false
	}
	for _, p := range ps {
		all := strings.Join(p, "\n")
		for _, s := range texts {
			if !strings.Contains(all, s) {
				return false
			}
		}
	}
	return true
}

// tmuxRun is one rlab command running in a tmux terminal of its own, with
// a state dir of its own.
type tmuxRun struct {
	t    testing.TB
	term *tmuxTerm
	env  []string
	sd   state.Dir
	tree []proc.Entry // rlab and its descendants, once running
	dir  string       // the control-plane binaries
}

// startTmux runs rlab with args in tmux at 160x45. The test's cleanup ends
// the session and any process of the sandbox that outlived it, by pid.
func startTmux(t testing.TB, name string, args ...string) *tmuxRun {
	t.Helper()
	return startTmuxSized(t, name, 160, 45, args...)
}

// startTmuxSized is startTmux in a terminal of w×h. args are joined into
// a shell command line: quote those with spaces.
func startTmuxSized(t testing.TB, name string, w, h int, args ...string) *tmuxRun {
	t.Helper()
	return startTmuxEnv(t, name, w, h, nil, args...)
}

// startTmuxEnv is startTmuxSized with env (NAME=value) added to rlab's
// environment.
func startTmuxEnv(t testing.TB, name string, w, h int, env []string, args ...string) *tmuxRun {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed; this real-terminal test needs it: install it with `apt-get install -y tmux` (.ci/run does)")
	}
	dir, err := assets.Find(os.Getenv)
	if err != nil {
		t.Fatalf("control plane: %v", err)
	}
	root := t.TempDir()
	stateHome, tmp := filepath.Join(root, "state"), filepath.Join(root, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	r := &tmuxRun{t: t, dir: dir,
		env:  []string{"XDG_STATE_HOME=" + stateHome, "TMPDIR=" + tmp},
		sd:   state.Dir{Root: filepath.Join(stateHome, "rlab")},
		term: &tmuxTerm{t: t, socket: fmt.Sprintf("rlab-test-%d-%s", os.Getpid(), name), name: name, width: w, height: h},
	}
	// The shell says how rlab exited and keeps the pane (and what rlab
	// printed last) on screen until the session is killed.
	shell := fmt.Sprintf("env %s %s %s; echo \"rlab exit status $?\"; exec sleep 600", strings.Join(append(r.env, env...), " "), rlabBin, strings.Join(args, " "))
	if _, err := r.term.cmd("-f", "/dev/null", "new-session", "-d", "-s", name,
		"-x", strconv.Itoa(r.term.width), "-y", strconv.Itoa(r.term.height), shell); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = r.term.cmd("kill-server")
		for _, p := range alive(r.tree) {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	})
	return r
}

// ready waits for the three panes at Echo/hello 2/2 and records rlab's
// process tree.
func (r *tmuxRun) ready() {
	r.t.Helper()
	r.term.waitScreen("the three panes did not show Echo/hello 2/2", 4*time.Minute, func(s string) bool {
		return everyPane(s, "Echo/hello 2/2", "Deployment echo-hello 2/2")
	})
	pid := r.sd.Running()
	if pid <= 0 {
		r.t.Fatalf("no rlab pid in %s", r.sd.Root)
	}
	self, _, ok := stat(pid)
	if !ok {
		r.t.Fatalf("rlab (pid %d) is not running", pid)
	}
	r.tree = append([]proc.Entry{self}, children(pid)...)
	if len(r.tree) < 8 { // apiserver, etcd, kcm, scheduler, kwok, 5 operators
		r.t.Fatalf("rlab (pid %d) runs only %d processes", pid, len(r.tree)-1)
	}
}

// quit presses q and checks that rlab said so, exited 0, and left no
// process and no claim on its state dir.
func (r *tmuxRun) quit() {
	r.t.Helper()
	r.term.send("q")
	final := r.term.waitScreen("rlab did not exit", time.Minute, func(s string) bool {
		return strings.Contains(s, "rlab exit status")
	})
	simtest.Eventually(r.t, 30*time.Second, "no process left after q; the screen:\n"+final, func(context.Context) (bool, error) {
		left := alive(r.tree)
		return len(left) == 0, fmt.Errorf("left: %v", left)
	})
	if p := r.sd.Running(); p != 0 {
		r.t.Fatalf("state dir still held by pid %d", p)
	}
	if !strings.Contains(final, "sandbox stopped in") || !strings.Contains(final, "rlab exit status 0") {
		r.t.Fatalf("final screen:\n%s", final)
	}
	// The screen drew only on the alternate screen: the shell's has none
	// of its frames.
	if strings.Contains(final, "shell loop") || strings.Contains(final, "timeline") {
		r.t.Fatalf("a frame of the screen was left on the shell's screen:\n%s", final)
	}
}

// TestTmuxUp runs `rlab up` in a real terminal (tmux, 160x45) against the
// real sandbox: the three panes reach 2/2, `+` makes them 3/3 (and kubectl
// agrees), `q` stops everything and no process is left.
func TestTmuxUp(t *testing.T) {
	simtest.NeedsControlPlane(t)
	r := startTmux(t, "rlab-up", "up")
	r.ready()
	r.term.send("+")
	r.term.waitScreen("the three panes did not show Echo/hello 3/3 after +", time.Minute, func(s string) bool {
		return everyPane(s, "Echo/hello 3/3", "Deployment echo-hello 3/3")
	})

	cmdEnv := exec.Command(rlabBin, "env")
	cmdEnv.Env = append(os.Environ(), r.env...)
	kcOut, err := cmdEnv.Output()
	if err != nil {
		t.Fatalf("rlab env: %v", err)
	}
	kubeconfig, ok := strings.CutPrefix(strings.TrimSpace(string(kcOut)), "export KUBECONFIG=")
	if !ok {
		t.Fatalf("rlab env said %q", kcOut)
	}
	kubectl := filepath.Join(r.dir, "kubectl")
	for _, st := range style.All() {
		y, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "get", "echo", "hello", "-n", st.Namespace(), "-o", "yaml").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl get echo in %s: %v: %s", st, err, y)
		}
		if !strings.Contains(string(y), "replicas: 3") {
			t.Fatalf("Echo hello in %s is not replicas: 3:\n%s", st.Namespace(), y)
		}
	}
	r.quit()
}

// TestTmuxLesson follows lesson 2 on the real screen: the panel shows the
// step and its live check, `a` plays it and the check passes, `n` moves on,
// the last step ends the lesson, the progress is saved, `q` leaves nothing.
func TestTmuxLesson(t *testing.T) {
	simtest.NeedsControlPlane(t)
	r := startTmux(t, "rlab-lesson", "lesson", "start", "2", "--shell-interval", "1s")
	r.ready()
	// "waiting for:" shows while the sandbox starts too, when a answers
	// "the sandbox is still starting"; the step is open once it waits for
	// the student's act.
	r.term.waitScreen("no lesson panel on step 1", time.Minute, func(s string) bool {
		return strings.Contains(s, "lesson 2/") && strings.Contains(s, "step 1 of 2: Ask for four replicas") &&
			strings.Contains(s, "waiting for you to act") && strings.Contains(s, `'{"spec":{"replicas":4}}'`)
	})
	r.term.send("a")
	r.term.waitScreen("step 1 not passed after a", 2*time.Minute, func(s string) bool {
		return strings.Contains(s, "✓ passed") && everyPane(s, "Echo/hello 4/4")
	})
	r.term.send("n")
	r.term.waitScreen("no step 2 after n", time.Minute, func(s string) bool {
		return strings.Contains(s, "step 2 of 2: And back to two") && strings.Contains(s, "waiting for you to act")
	})
	r.term.send("a")
	r.term.waitScreen("lesson not done after the last step", 2*time.Minute, func(s string) bool {
		return strings.Contains(s, "lesson done") && everyPane(s, "Echo/hello 2/2")
	})
	r.quit()
	b, err := os.ReadFile(runner.ProgressFile(r.sd))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"02-desired-vs-actual"`) || !strings.Contains(string(b), `"done": true`) {
		t.Fatalf("progress after the lesson:\n%s", b)
	}
	// Both steps passed after a: the list says they were played.
	_, l, err := lessons.LoadOne(2)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := runner.LoadProgress(r.sd)
	if err != nil {
		t.Fatal(err)
	}
	if got := prog.Where(l); got != "0/2, 2 played" {
		t.Errorf("lesson 2 listed as %q after a, n, a; want 0/2, 2 played\n%s", got, b)
	}
}

// paneOf is the column of the pane titled title, joined, or "".
// TestTmuxLeaderByHand follows lesson 8 on the real screen as a student
// does, where it used to fail: the first step opens only once the Go
// styles are led (so the first election is no takeover); k pressed with
// the shell pane focused kills both Go leaders, as the step says, and the
// takeover counts from the kill, not from the reading; the SIGTERM step,
// typed in another terminal after reading it for longer than its 4 s
// bound, passes, timed from the leader's release.
func TestTmuxLeaderByHand(t *testing.T) {
	simtest.NeedsControlPlane(t)
	r := startTmux(t, "rlab-leader", "lesson", "start", "8", "--shell-interval", "1s")
	r.ready()
	r.term.waitScreen("no step 1 after the sandbox's baseline", time.Minute, func(s string) bool {
		return strings.Contains(s, "step 1 of 8: Kill -9 the leader") && strings.Contains(s, "waiting for you to act")
	})
	// The student reads the step for 5 s: nothing passes or fails meanwhile.
	r.term.holdScreen("step 1 moved before the act", 5*time.Second, func(s string) bool {
		return strings.Contains(s, "waiting for you to act") && !strings.Contains(s, "✓ passed")
	})
	r.term.send("1", "k") // the shell pane focused: the step's key still acts on both Go styles
	r.term.waitScreen("step 1 not passed after k", 2*time.Minute, func(s string) bool {
		return strings.Contains(s, "✓ passed") && strings.Contains(s, "took over from")
	})
	r.term.send("n")
	r.term.waitScreen("no step 2", time.Minute, func(s string) bool {
		return strings.Contains(s, "step 2 of 8: The new leader works")
	})
	r.term.send("s")
	r.term.waitScreen("step 2 not passed after s", 2*time.Minute, func(s string) bool {
		return strings.Contains(s, "step 2 of 8") && strings.Contains(s, "✓ passed")
	})
	r.term.send("n")
	r.term.waitScreen("no step 3", time.Minute, func(s string) bool {
		return strings.Contains(s, "step 3 of 8: Stop the leader gracefully") && strings.Contains(s, "waiting for you to act")
	})
	_, l, err := lessons.LoadOne(8)
	if err != nil {
		t.Fatal(err)
	}
	// Read for longer than the step's 4 s bound: reading is not the
	// takeover's time, and nothing moves meanwhile.
	r.term.holdScreen("step 3 moved before the act", 6*time.Second, func(s string) bool {
		return strings.Contains(s, "waiting for you to act") && !strings.Contains(s, "can no longer pass")
	})
	// The step's command, typed in another terminal as shown.
	cmd := exec.Command("bash", "-c", l.Steps[2].Action.Kubectl)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+r.sd.Kubeconfig(), "PATH="+r.dir+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("step 3's command: %v\n%s", err, out)
	}
	screen := r.term.waitScreen("step 3 not passed after the SIGTERM typed by hand", 2*time.Minute, func(s string) bool {
		return strings.Contains(s, "step 3 of 8") && (strings.Contains(s, "✓ passed") || strings.Contains(s, "can no longer pass"))
	})
	if !strings.Contains(screen, "✓ passed") {
		t.Fatalf("step 3 failed by hand:\n%s", screen)
	}
	r.quit()
}

func paneOf(screen, title string) string {
	for _, p := range panes(screen) {
		if len(p) > 0 && strings.Contains(p[0], "─ "+title+" ─") || len(p) > 0 && strings.Contains(p[0], "▶ "+title+" ─") {
			return strings.Join(p, "\n")
		}
	}
	return ""
}

var apiCount = regexp.MustCompile(`API (\d+) req`)

// requestsOf is the request count the pane shows, -1 if none.
func requestsOf(pane string) int {
	m := apiCount.FindStringSubmatch(pane)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestTmuxOwnOperator runs `rlab up` with a student's own operator (the
// bash watch-operator) in a real terminal at 160x48: four panes; mine's
// shows the sample Echo at 2/2 from the cluster and counts its requests
// from its proxy, with no pipeline of its own; after + its count grows as
// it reconciles 3/3; o opens its log on screen with a line its process
// wrote; q stops everything and no process is left.
func TestTmuxOwnOperator(t *testing.T) {
	simtest.NeedsControlPlane(t)
	script, err := filepath.Abs(filepath.Join("..", "..", "testdata", "operators", "watch-operator.sh"))
	if err != nil {
		t.Fatal(err)
	}
	r := startTmuxSized(t, "rlab-mine", 160, 48, "up", "--operator", "'mine=bash "+script+" good'")
	r.ready()
	before := -1
	r.term.waitScreen("mine's pane did not show Echo/hello 2/2 and its requests", time.Minute, func(s string) bool {
		p := paneOf(s, "mine")
		before = requestsOf(p)
		return strings.Contains(p, "no own trace") && strings.Contains(p, "Echo/hello 2/2") && before > 0 &&
			strings.Contains(p, "watches") && !strings.Contains(p, "queue") && !strings.Contains(p, "reconciles")
	})

	r.term.send("+")
	r.term.waitScreen("mine's requests did not grow as it reconciled 3/3", time.Minute, func(s string) bool {
		p := paneOf(s, "mine")
		return strings.Contains(p, "Echo/hello 3/3") && strings.Contains(p, "Deployment echo-hello 3/3") && requestsOf(p) > before
	})

	r.term.send("4")
	r.term.send("o")
	var line string
	r.term.waitScreen("the log view did not show a line of mine's log", 30*time.Second, func(s string) bool {
		b, err := os.ReadFile(filepath.Join(r.sd.Logs(), "mine-a.log"))
		if err != nil {
			return false
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if strings.Contains(l, "serverside-applied") || strings.Contains(l, "patched") {
				line = strings.TrimSpace(l)
			}
		}
		return line != "" && strings.Contains(s, "log · mine replica a") && strings.Contains(s, line)
	})
	r.term.send("o")
	r.term.waitScreen("o did not close the log view", 10*time.Second, func(s string) bool {
		return !strings.Contains(s, "log · mine") && strings.Contains(s, "timeline ·")
	})
	r.quit()
}
