package proc

import (
	"bufio"
	"fmt"
	"io"
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

// helperEnv makes the test binary act as a parent that starts a wrapped child
// and then waits to be killed (see TestWrapperChildDiesWithParent).
const helperEnv = "RLAB_PROC_TEST_HELPER"

func TestMain(m *testing.M) {
	MaybeRunWrapper()
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(helper(dir))
	}
	os.Exit(m.Run())
}

func helper(dir string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	w, err := WriteWrapper(filepath.Join(dir, "bin"), "sleep", self, "/bin/sleep", filepath.Join(dir, "pids"))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	// Like envtest: own process group, no parent-death signal of our own.
	cmd := exec.Command(w, "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("child", cmd.Process.Pid)
	_ = cmd.Wait()
	return 0
}

// TestWrapperChildDiesWithParent: a process started through the wrapper, in
// its own process group as envtest starts kube-apiserver, dies when its parent
// is SIGKILLed, and was recorded in the pid dir under its own pid.
func TestWrapperChildDiesWithParent(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(self)
	parent.Env = append(os.Environ(), helperEnv+"="+dir)
	parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-parent.Process.Pid, syscall.SIGKILL); _ = parent.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "child" {
		t.Fatalf("helper said %q", line)
	}
	child, _ := strconv.Atoi(f[1])
	go func() { _, _ = io.Copy(io.Discard, out) }()

	var entry Entry
	simtest.Eventually(t, 10*time.Second, "wrapped child recorded and exec'd", simtest.True(func() bool {
		es, _ := Entries(filepath.Join(dir, "pids"))
		if len(es) != 1 {
			return false
		}
		entry = es[0]
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(child) + "/cmdline")
		return strings.HasPrefix(string(b), "/bin/sleep\x00600")
	}))
	if entry.PID != child || entry.Name != "sleep" || entry.PGID != child || !entry.Alive() {
		t.Fatalf("entry = %+v, want pid/pgid %d named sleep, alive", entry, child)
	}

	if err := syscall.Kill(parent.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, 5*time.Second, "wrapped child dead after its parent's SIGKILL", simtest.True(func() bool { return !entry.Alive() }))
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
	if err != nil || len(es) != 1 || es[0].PID != c.PID() || !es[0].Alive() {
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
		})
	}
}
