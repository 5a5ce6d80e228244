package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/proc"
	"github.com/kkloud/rlab/sim/simtest"
)

// timeout bounds every wait for a replica.
const timeout = 10 * time.Second

// fakeOperator emits one event and one malformed line, then waits; it exits
// on SIGTERM like a real operator.
const fakeOperator = `echo '{"kind":"reconcile.start","object":"Echo/hello"}'
echo 'this is not json'
trap 'exit 0' TERM
while :; do sleep 0.05; done`

func TestSupervisorRestartsAndReadsTrace(t *testing.T) {
	dir := t.TempDir()
	rec := &simtest.EventLog{}
	s := New(Options{PIDDir: filepath.Join(dir, "pids"), Publish: rec.Publish, Backoff: 50 * time.Millisecond})
	spec := Spec{Style: style.ClientGo, Replica: "a", Path: "/bin/sh", Args: []string{"-c", fakeOperator},
		LogFile: filepath.Join(dir, "a.log")}
	if err := s.Add(spec); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, timeout, "trace read", simtest.True(func() bool { return rec.Count(trace.ReconcileStart, "clientgo/a") == 1 }))
	simtest.Eventually(t, timeout, "malformed line counted", simtest.True(func() bool {
		st := s.Statuses()
		return rec.Count(trace.Malformed, "clientgo/a") == 1 && st[0].Malformed == 1
	}))
	first := s.Statuses()[0]
	if !first.Running || first.PID == 0 || first.Restarts != 0 {
		t.Fatalf("status = %+v", first)
	}
	if name, ok := s.ByPID(first.PID); !ok || name != "clientgo/a" {
		t.Fatalf("ByPID = %q, %v", name, ok)
	}
	// Paused, then resumed: the same process throughout, and each said on
	// the trace with its pid, so the screen knows it from the events alone.
	for _, step := range []struct {
		act    func(string) error
		paused bool
		kind   trace.Kind
	}{{s.Pause, true, trace.ProcessPause}, {s.Resume, false, trace.ProcessResume}} {
		if err := step.act("clientgo/a"); err != nil {
			t.Fatal(err)
		}
		if st := s.Statuses()[0]; st.Paused != step.paused || !st.Running || st.PID != first.PID {
			t.Fatalf("status = %+v, want paused %v, running as pid %d", st, step.paused, first.PID)
		}
		var said []string
		for _, e := range rec.Of(step.kind) {
			said = append(said, e.Object+" pid "+strconv.Itoa(trace.As[trace.Process](e).PID))
		}
		if want := []string{fmt.Sprintf("clientgo/a pid %d", first.PID)}; !slices.Equal(said, want) {
			t.Fatalf("%s events: %q, want %q", step.kind, said, want)
		}
	}

	tests := []struct {
		name string
		act  func() error
	}{
		{"kill", func() error { return s.Kill("clientgo/a") }},
		{"graceful stop", func() error { return s.Stop("clientgo/a") }},
		{"stop while paused", func() error {
			if err := s.Pause("clientgo/a"); err != nil {
				return err
			}
			return s.Stop("clientgo/a")
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.Statuses()[0]
			if err := tc.act(); err != nil {
				t.Fatal(err)
			}
			simtest.Eventually(t, timeout, "restarted with a new pid", simtest.True(func() bool {
				st := s.Statuses()[0]
				return st.Running && st.PID != before.PID && st.Restarts == i+1
			}))
			if got := rec.Count(trace.ProcessExit, "clientgo/a"); got != i+1 {
				t.Fatalf("process.exit events = %d, want %d", got, i+1)
			}
			// Frozen, then let go on by the stop: both on the trace (once
			// more than the pause and resume above).
			paused := 1
			if tc.name == "stop while paused" {
				paused = 2
			}
			if p, r := rec.Count(trace.ProcessPause, "clientgo/a"), rec.Count(trace.ProcessResume, "clientgo/a"); p != paused || r != paused {
				t.Fatalf("process.pause/resume events = %d/%d, want %d/%d", p, r, paused, paused)
			}
			simtest.Eventually(t, timeout, "new process traced", simtest.True(func() bool { return rec.Count(trace.ReconcileStart, "clientgo/a") == i+2 }))
		})
	}

	pid := s.Statuses()[0].PID
	if err := s.Close(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if st := s.Statuses()[0]; st.Running {
		t.Fatalf("still running after Close: %+v", st)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("pid %d alive after Close", pid)
	}
	if es, _ := proc.Entries(filepath.Join(dir, "pids")); len(es) != 0 {
		t.Fatalf("pid entries left: %+v", es)
	}
	rec.CheckSchema(t) // process.start, process.exit with code and signal, trace.malformed
}

// Remove stops a replica for good: no restart, gone from the statuses, its
// process dead; also when it is waiting for a restart.
func TestSupervisorRemove(t *testing.T) {
	dir := t.TempDir()
	rec := &simtest.EventLog{}
	s := New(Options{PIDDir: filepath.Join(dir, "pids"), Publish: rec.Publish, Backoff: 10 * time.Second})
	defer s.Close(5 * time.Second)
	for _, r := range []string{"a", "b"} {
		if err := s.Add(Spec{Style: style.Shell, Replica: r, Path: "/bin/sh", Args: []string{"-c", fakeOperator},
			LogFile: filepath.Join(dir, r+".log")}); err != nil {
			t.Fatal(err)
		}
	}
	simtest.Eventually(t, timeout, "both traced", simtest.True(func() bool {
		return rec.Count(trace.ReconcileStart, "shell/a") == 1 && rec.Count(trace.ReconcileStart, "shell/b") == 1
	}))
	var pid int
	for _, st := range s.Statuses() {
		if st.Name == "shell/b" {
			pid = st.PID
		}
	}
	if err := s.Remove("shell/b", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if st := s.Statuses(); len(st) != 1 || st[0].Name != "shell/a" || !st[0].Running {
		t.Fatalf("statuses after Remove = %+v, want shell/a alone, running", st)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("removed replica's pid %d is alive", pid)
	}
	if err := s.Remove("shell/b", time.Second); err == nil {
		t.Fatal("removing it twice succeeded")
	}

	// Killed, it waits 10 s to restart: Remove ends that wait.
	if err := s.Kill("shell/a"); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, timeout, "shell/a exited", simtest.True(func() bool { return rec.Count(trace.ProcessExit, "shell/a") == 1 }))
	start := time.Now()
	if err := s.Remove("shell/a", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Remove waited out the backoff: %s", took)
	}
	if st := s.Statuses(); len(st) != 0 {
		t.Fatalf("statuses = %+v, want none", st)
	}
	// Each removal is on the trace: shell/b as it exited, shell/a after
	// its exit, once its restart was called off.
	for _, r := range []string{"shell/a", "shell/b"} {
		removed := 0
		for _, e := range rec.Of(trace.ProcessExit) {
			if e.Object == r && trace.As[trace.Process](e).Removed {
				removed++
			}
		}
		if removed != 1 {
			t.Errorf("%s: %d process.exit events with removed, want 1", r, removed)
		}
	}
	rec.CheckSchema(t) // process.exit of a removed replica
}

// SetArgs on a replica that has exited and waits out its restart backoff
// (a Go leader that let go of its Lease) restarts it at once with the new
// arguments; there is no process to stop, and that is not an error. Lesson
// 9 once failed on "no such process" here.
func TestSupervisorSetArgsWhileWaiting(t *testing.T) {
	dir := t.TempDir()
	rec := &simtest.EventLog{}
	s := New(Options{PIDDir: filepath.Join(dir, "pids"), Publish: rec.Publish, Backoff: 10 * time.Second})
	defer s.Close(5 * time.Second)
	if err := s.Add(Spec{Style: style.Runtime, Replica: "a", Path: "/bin/sh", Args: []string{"-c", fakeOperator},
		LogFile: filepath.Join(dir, "a.log")}); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, timeout, "traced", simtest.True(func() bool { return rec.Count(trace.ReconcileStart, "runtime/a") == 1 }))
	if err := s.Kill("runtime/a"); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, timeout, "exited", simtest.True(func() bool { return rec.Count(trace.ProcessExit, "runtime/a") == 1 }))

	start := time.Now()
	v2 := `echo '{"kind":"log","fields":{"msg":"v2"}}'` + "\n" + fakeOperator
	if err := s.SetArgs("runtime/a", []string{"-c", v2}); err != nil {
		t.Fatalf("SetArgs while waiting to restart: %v", err)
	}
	rec.Wait(t, timeout, trace.Log, "", func(e trace.Event) bool { return trace.As[trace.Message](e).Msg == "v2" })
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("restarted with the new arguments after %s: it waited out the 10 s backoff", took)
	}
}

// TestSupervisorUntraced: a student's operator prints what it likes; with
// Untraced its stdout lands in the log file beside stderr, and none of it is
// read as a trace.
func TestSupervisorUntraced(t *testing.T) {
	dir := t.TempDir()
	rec := &simtest.EventLog{}
	s := New(Options{PIDDir: filepath.Join(dir, "pids"), Publish: rec.Publish})
	defer s.Close(timeout)
	logFile := filepath.Join(dir, "mine-a.log")
	// An earlier sandbox's log: not this one's, and so not kept.
	if err := os.WriteFile(logFile, []byte("an earlier run's error\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(Spec{Style: "mine", Replica: "a", Path: "/bin/sh", Untraced: true, LogFile: logFile,
		Args: []string{"-c", fakeOperator + "\n"}}); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, timeout, "stdout in the log file", simtest.True(func() bool {
		b, _ := os.ReadFile(logFile)
		return strings.Contains(string(b), "this is not json") && strings.Contains(string(b), `"kind":"reconcile.start"`)
	}))
	if n := rec.Count(trace.ReconcileStart, "mine/a") + rec.Count(trace.Malformed, "mine/a"); n != 0 {
		t.Fatalf("%d events read from an untraced replica's stdout, want 0", n)
	}
	if st := s.Statuses(); len(st) != 1 || !st[0].Running || st[0].Malformed != 0 {
		t.Fatalf("statuses = %+v", st)
	}
	// A restart appends: the log holds every run of this sandbox.
	if err := s.Kill("mine/a"); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, timeout, "both runs in the log, not the earlier sandbox's", simtest.True(func() bool {
		b, _ := os.ReadFile(logFile)
		return strings.Count(string(b), "this is not json") == 2 && !strings.Contains(string(b), "earlier run")
	}))
}

// TestSupervisorCountsFailures: exits with a non-zero code count as failures
// (a crash loop); an operator that exits 0 to be run again does not.
func TestSupervisorCountsFailures(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		failing      bool
	}{
		{"exits 0", "exit 0", false},
		{"exits 3", "echo 'listen tcp :8081: bind: address already in use' >&2; exit 3", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := New(Options{PIDDir: filepath.Join(dir, "pids"), Publish: (&simtest.EventLog{}).Publish, Backoff: 10 * time.Millisecond})
			defer s.Close(timeout)
			if err := s.Add(Spec{Style: "mine", Replica: "a", Path: "/bin/sh", Untraced: true,
				LogFile: filepath.Join(dir, "mine-a.log"), Args: []string{"-c", tc.script}}); err != nil {
				t.Fatal(err)
			}
			simtest.Eventually(t, timeout, "restarted twice", simtest.True(func() bool { return s.Statuses()[0].Restarts >= 2 }))
			st := s.Statuses()[0]
			if failing := st.Failed >= 2; failing != tc.failing || (!tc.failing && st.Failed != 0) {
				t.Fatalf("status %+v: failed %d after %d restarts, want failing %v", st, st.Failed, st.Restarts, tc.failing)
			}
		})
	}
}
