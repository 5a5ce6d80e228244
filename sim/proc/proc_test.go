package proc

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kkloud/rlab/sim/simtest"
)

// helperEnv makes the test binary act as a parent (rlab) that starts a child
// as helperModeEnv says, prints "child <pid>" and waits to be killed (see
// TestChildDiesWithParent).
const (
	helperEnv     = "RLAB_PROC_TEST_HELPER"
	helperModeEnv = "RLAB_PROC_TEST_MODE"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(helper(dir, os.Getenv(helperModeEnv)))
	}
	os.Exit(m.Run())
}

// helper starts one child in dir and waits. "started": proc.Start of a shell
// that leaves a grandchild in its group and writes its pid to dir/grandchild.
// "paused": the same, then the child's group is stopped (SIGSTOP).
func helper(dir, mode string) int {
	fail := func(err error) int { fmt.Println("error", err); return 1 }
	pids := filepath.Join(dir, "pids")
	switch mode {
	case "started", "paused":
		// Deaf to SIGHUP, which a stopped group gets when rlab dies: only
		// the lifeline's SIGKILL ends it.
		script := fmt.Sprintf("trap '' HUP; sleep 600 & echo $! > %[1]q.tmp && mv %[1]q.tmp %[1]q; wait", filepath.Join(dir, "grandchild"))
		c, err := Start(pids, "group", "/bin/sh", []string{"-c", script}, nil)
		if err != nil {
			return fail(err)
		}
		if mode == "paused" {
			// Once its grandchild runs: a frozen group (Supervisor.Pause).
			if err := simtest.Poll(context.Background(), 10*time.Second, simtest.True(func() bool {
				return readPID(filepath.Join(dir, "grandchild")) != 0
			})); err != nil {
				return fail(err)
			}
			if err := c.Signal(syscall.SIGSTOP); err != nil {
				return fail(err)
			}
		}
		fmt.Println("child", c.PID())
		<-c.Done()
	default:
		return fail(fmt.Errorf("mode %q", mode))
	}
	return 0
}

// readPID reads a pid a shell wrote to path, 0 until it is there.
func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// TestChildDiesWithParent: a child rlab started (as it starts etcd,
// kube-apiserver and the operators), with a grandchild in its group, dies
// with the grandchild when rlab is SIGKILLed. With NoPdeathsigEnv the
// lifeline alone must kill them, on Linux as on macOS; without, Linux has the
// parent-death signal too.
func TestChildDiesWithParent(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, mode  string
		noPdeathsig bool
	}{
		{"started, lifeline alone", "started", true},
		{"started and paused, lifeline alone", "paused", true},
		{"started, lifeline and death signal", "started", false},
	}
	adoptOrphans(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var procs []Entry // every process that must die, with its start time
			parent := exec.Command(self)
			parent.Env = append(os.Environ(), helperEnv+"="+dir, helperModeEnv+"="+tc.mode)
			if tc.noPdeathsig {
				parent.Env = append(parent.Env, NoPdeathsigEnv+"=1")
			}
			parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			out, err := parent.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := parent.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = syscall.Kill(-parent.Process.Pid, syscall.SIGKILL)
				_ = parent.Wait()
				// Whatever survived a failure.
				_, _ = Reap(filepath.Join(dir, "pids"), 5*time.Second)
				for _, p := range procs {
					if p.Alive() {
						_ = syscall.Kill(p.PID, syscall.SIGKILL)
					}
				}
			})
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			f := strings.Fields(line)
			if len(f) != 2 || f[0] != "child" {
				t.Fatalf("helper said %q", line)
			}
			child, _ := strconv.Atoi(f[1])

			simtest.Eventually(t, 10*time.Second, "child recorded and running", simtest.True(func() bool {
				es, _ := Entries(filepath.Join(dir, "pids"))
				if len(es) != 1 {
					return false
				}
				procs = es[:1]
				pid := readPID(filepath.Join(dir, "grandchild"))
				if pid == 0 {
					return false
				}
				st, err := startTime(pid)
				procs = append(procs, Entry{PID: pid, Start: st, Name: "grandchild"})
				return err == nil
			}))
			if e := procs[0]; e.PID != child || !e.Alive() {
				t.Fatalf("entry = %+v, want pid %d, alive", e, child)
			}
			for _, p := range procs {
				if !p.Alive() {
					t.Fatalf("%s (pid %d) not alive before its parent's death", p.Name, p.PID)
				}
			}

			// Only the parent, not its group: the child's own groups are apart.
			if err := syscall.Kill(parent.Process.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			for _, p := range procs {
				simtest.Eventually(t, 5*time.Second, p.Name+" dead after its parent's SIGKILL", simtest.True(func() bool { return !p.Alive() }))
			}
		})
	}
}

// TestReapKillsLeftovers: a recorded child that is still alive (its rlab was
// killed and it somehow survived) is killed by the next run's Reap, with its
// whole process group, and the pid dir is emptied.
func TestReapKillsLeftovers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pids")
	// A shell leading a group with a grandchild: both must die.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	c, err := Start(dir, "group", "/bin/sh", []string{"-c", "sleep 600 & echo $!; wait"}, pw)
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(time.Second) })
	es, err := Entries(dir)
	if err != nil || len(es) != 1 || es[0].PID != c.PID() || es[0].PGID != c.pgid || !es[0].Alive() {
		t.Fatalf("entries = %+v, %v", es, err)
	}
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	gpid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("grandchild pid %q: %v", line, err)
	}
	st, err := startTime(gpid)
	if err != nil {
		t.Fatal(err)
	}
	grandchild := Entry{PID: gpid, Start: st}

	killed, err := Reap(dir, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 1 || killed[0].PID != c.PID() {
		t.Fatalf("killed = %+v", killed)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("reaped child did not exit")
	}
	simtest.Eventually(t, 5*time.Second, "grandchild in the same group dead", simtest.True(func() bool { return !grandchild.Alive() }))
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("pid dir still there: %v", err)
	}
	// Reap of a dir whose entries are dead kills nothing.
	if err := Record(dir, os.Getpid(), "me"); err != nil {
		t.Fatal(err)
	}
	es, _ = Entries(dir)
	es[0].Start++ // same pid, another process: must be left alone
	_ = os.WriteFile(filepath.Join(dir, strconv.Itoa(os.Getpid())),
		[]byte(fmt.Sprintf("%d %d %d %s\n", es[0].PID, es[0].PGID, es[0].Start, es[0].Name)), 0o600)
	if killed, err := Reap(dir, time.Second); err != nil || len(killed) != 0 {
		t.Fatalf("Reap of a reused pid killed %+v (%v)", killed, err)
	}
}

// TestStartTime: the start time tells a live process, a zombie and a gone
// one apart (the platform code behind Entry.Alive).
func TestStartTime(t *testing.T) {
	me, err := startTime(os.Getpid())
	if err != nil || me == 0 {
		t.Fatalf("startTime(self) = %d, %v", me, err)
	}
	if again, _ := startTime(os.Getpid()); again != me {
		t.Fatalf("startTime(self) changed: %d, then %d", me, again)
	}
	if zombie(os.Getpid()) {
		t.Fatal("self is a zombie")
	}
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	simtest.Eventually(t, 5*time.Second, "exited child is a zombie", simtest.True(func() bool { return zombie(pid) }))
	st, err := startTime(pid)
	if err != nil || st < me {
		t.Fatalf("startTime(zombie) = %d, %v; want at least %d", st, err, me)
	}
	if e := (Entry{PID: pid, Start: st}); e.Alive() {
		t.Fatal("a zombie is alive")
	}
	_ = cmd.Wait()
	if _, err := startTime(pid); err == nil {
		t.Fatal("startTime of a reaped pid succeeded")
	}
}

// TestChildExitTakesGroup: what a child leaves running in its process group
// (the kubectl a dying shell loop had started) dies when the child exits.
func TestChildExitTakesGroup(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	c, err := StartCmd(t.TempDir(), Cmd{Name: "sh", Path: "/bin/sh",
		Args: []string{"-c", "sleep 600 & echo $!; wait"}, Stdout: pw})
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	st, err := startTime(orphan)
	if err != nil {
		t.Fatal(err)
	}
	left := Entry{PID: orphan, Start: st}
	t.Cleanup(func() {
		if left.Alive() { // only if the test failed
			_ = syscall.Kill(orphan, syscall.SIGKILL)
		}
	})
	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil { // the child alone, not its group
		t.Fatal(err)
	}
	<-c.Done()
	simtest.Eventually(t, 10*time.Second, "the child's background sleep gone with it", func(context.Context) (bool, error) {
		return !left.Alive(), fmt.Errorf("pid %d still alive", orphan)
	})
}

func TestChildStop(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		wantErr string
	}{
		{"exits on SIGTERM", "echo ready; exec sleep 600", ""},
		{"ignores SIGTERM", "trap '' TERM; echo ready; while :; do sleep 0.05; done", "ignored SIGTERM"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			c, err := StartCmd(dir, Cmd{Name: "sh", Path: "/bin/sh", Args: []string{"-c", tc.script}, Stdout: pw})
			pw.Close()
			if err != nil {
				t.Fatal(err)
			}
			st, err := startTime(c.pgid)
			if err != nil {
				t.Fatal(err)
			}
			watcher := Entry{PID: c.pgid, Start: st}
			// Signal only once the shell has set its trap.
			if line, err := bufio.NewReader(pr).ReadString('\n'); err != nil || line != "ready\n" {
				t.Fatalf("child said %q, %v", line, err)
			}
			err = c.Stop(300 * time.Millisecond)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Stop = %v, want %q", err, tc.wantErr)
			}
			select {
			case <-c.Done():
			default:
				t.Fatal("Stop returned before the child was reaped")
			}
			if es, _ := Entries(dir); len(es) != 0 {
				t.Fatalf("entry left after exit: %+v", es)
			}
			// Its watcher is gone too. (Not Signal(0) on the group: a
			// killed sleep, orphaned, stays there as a zombie until init
			// reaps it, and some inits never do.)
			if watcher.Alive() {
				t.Fatalf("watcher %+v alive after Stop", watcher)
			}
		})
	}
}
