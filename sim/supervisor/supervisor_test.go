package supervisor

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/proc"
	"github.com/kkloud/rlab/sim/simtest"
)

type recorder struct {
	mu     sync.Mutex
	events []trace.Event
}

func (r *recorder) publish(e trace.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) count(kind trace.Kind, source string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.Kind == kind && (source == "" || e.Source == source || e.Object == source) {
			n++
		}
	}
	return n
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("%s: not within 10s", what)
	}
}

// fakeOperator emits one event and one malformed line, then waits; it exits
// on SIGTERM like a real operator.
const fakeOperator = `echo '{"kind":"reconcile.start","object":"Echo/hello"}'
echo 'this is not json'
trap 'exit 0' TERM
while :; do sleep 0.05; done`

func TestSupervisorRestartsAndReadsTrace(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	s := New(Options{PIDDir: filepath.Join(dir, "pids"), Publish: rec.publish, Backoff: 50 * time.Millisecond})
	spec := Spec{Style: "clientgo", Replica: "a", Path: "/bin/sh", Args: []string{"-c", fakeOperator},
		LogFile: filepath.Join(dir, "a.log")}
	if err := s.Add(spec); err != nil {
		t.Fatal(err)
	}
	eventually(t, "trace read", func() bool { return rec.count(trace.ReconcileStart, "clientgo/a") == 1 })
	eventually(t, "malformed line counted", func() bool {
		st := s.Statuses()
		return rec.count(trace.Malformed, "clientgo/a") == 1 && st[0].Malformed == 1
	})
	first := s.Statuses()[0]
	if !first.Running || first.PID == 0 || first.Restarts != 0 {
		t.Fatalf("status = %+v", first)
	}
	if name, ok := s.ByPID(first.PID); !ok || name != "clientgo/a" {
		t.Fatalf("ByPID = %q, %v", name, ok)
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
			eventually(t, "restarted with a new pid", func() bool {
				st := s.Statuses()[0]
				return st.Running && st.PID != before.PID && st.Restarts == i+1
			})
			if got := rec.count(trace.ProcessExit, "clientgo/a"); got != i+1 {
				t.Fatalf("process.exit events = %d, want %d", got, i+1)
			}
			// Frozen, then let go on by the stop: both on the trace, so
			// the screen knows it from the events alone.
			paused := 0
			if tc.name == "stop while paused" {
				paused = 1
			}
			if p, r := rec.count(trace.ProcessPause, "clientgo/a"), rec.count(trace.ProcessResume, "clientgo/a"); p != paused || r != paused {
				t.Fatalf("process.pause/resume events = %d/%d, want %d/%d", p, r, paused, paused)
			}
			eventually(t, "new process traced", func() bool { return rec.count(trace.ReconcileStart, "clientgo/a") == i+2 })
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
}

// Remove stops a replica for good: no restart, gone from the statuses, its
// process dead; also when it is waiting for a restart.
func TestSupervisorRemove(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	s := New(Options{PIDDir: filepath.Join(dir, "pids"), Publish: rec.publish, Backoff: 10 * time.Second})
	defer s.Close(5 * time.Second)
	for _, r := range []string{"a", "b"} {
		if err := s.Add(Spec{Style: "shell", Replica: r, Path: "/bin/sh", Args: []string{"-c", fakeOperator},
			LogFile: filepath.Join(dir, r+".log")}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "both traced", func() bool {
		return rec.count(trace.ReconcileStart, "shell/a") == 1 && rec.count(trace.ReconcileStart, "shell/b") == 1
	})
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
	eventually(t, "shell/a exited", func() bool { return rec.count(trace.ProcessExit, "shell/a") == 1 })
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
		rec.mu.Lock()
		for _, e := range rec.events {
			if e.Kind == trace.ProcessExit && e.Object == r && e.Str(trace.FieldRemoved) == "true" {
				removed++
			}
		}
		rec.mu.Unlock()
		if removed != 1 {
			t.Errorf("%s: %d process.exit events with removed, want 1", r, removed)
		}
	}
}

// Pause and Resume freeze and let go on a replica, and say so on the trace
// with its pid: the screen knows a frozen replica from the events alone.
func TestSupervisorPauseResume(t *testing.T) {
	dir := t.TempDir()
	var rec simtest.Recorder
	s := New(Options{PIDDir: filepath.Join(dir, "pids"), Publish: rec.Publish})
	defer s.Close(5 * time.Second)
	if err := s.Add(Spec{Style: "runtime", Replica: "a", Path: "/bin/sh", Args: []string{"-c", fakeOperator},
		LogFile: filepath.Join(dir, "a.log")}); err != nil {
		t.Fatal(err)
	}
	pid := s.Statuses()[0].PID
	steps := []struct {
		name   string
		act    func(string) error
		kind   trace.Kind
		paused bool
	}{
		{"pause", s.Pause, trace.ProcessPause, true},
		{"resume", s.Resume, trace.ProcessResume, false},
	}
	for _, st := range steps {
		if err := st.act("runtime/a"); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := s.Statuses()[0]; got.Paused != st.paused || !got.Running {
			t.Fatalf("%s: status = %+v", st.name, got)
		}
		var said []string
		for _, e := range rec.Of(st.kind) {
			if e.Object == "runtime/a" {
				said = append(said, e.Str(trace.FieldPID))
			}
		}
		if want := []string{fmt.Sprint(pid)}; !slices.Equal(said, want) {
			t.Fatalf("%s: %s events with pids %q, want %q", st.name, st.kind, said, want)
		}
	}
}
