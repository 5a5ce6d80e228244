package sandbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/fault"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/world"
)

// TestFaults: the built-in Go operators under faults at their own proxies,
// in the shared sandbox. Under conflicts a repair still lands (they requeue
// and read again); killed right after a write, the write stays and the
// operator, restarted or failed over, finishes the work from what it finds.
func TestFaults(t *testing.T) {
	simtest.NeedsControlPlane(t)
	setFault := func(t *testing.T, st style.Style, spec string) time.Time {
		t.Helper()
		f, err := fault.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		since := time.Now()
		if err := sb.Faults().SetFault(st, f); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Faults().ClearFault(st, "") })
		if got := sb.Faults().Faults(st); len(got) != 1 || got[0].String() != f.String() {
			t.Fatalf("faults on = %v, want %s", got, f)
		}
		return since
	}
	injected := func(st style.Style, kind fault.Kind, since time.Time) func(trace.Event) bool {
		return func(e trace.Event) bool {
			return e.Kind == trace.FaultInjected && strings.HasPrefix(e.Source, "proxy/"+st.String()+"/") &&
				trace.As[trace.Injection](e).Fault == string(kind) && e.Time.After(since)
		}
	}

	t.Run("conflict/runtime", func(t *testing.T) {
		st := style.Runtime
		since := setFault(t, st, "conflict,n=2")
		for _, msg := range []string{"under conflicts", sandbox.SampleMessage} {
			if err := sb.Student().SetMessageIn(t.Context(), []style.Style{st}, sandbox.SampleName, msg); err != nil {
				t.Fatal(err)
			}
			eventually(t, time.Minute, "converged on "+msg+" under conflicts", converged(st, sandbox.SampleName, 2, msg))
		}
		waitEvent(t, "a conflict injected at runtime's proxy", injected(st, fault.Conflict, since))
		waitEvent(t, "an update answered 409 at runtime's proxy", func(e trace.Event) bool {
			r, ok := e.Request()
			return ok && r.Code == 409 && strings.HasPrefix(e.Source, "proxy/runtime/") && e.Time.After(since)
		})
	})

	t.Run("crash/clientgo", func(t *testing.T) {
		st := style.ClientGo
		leader := holder(t, st, "")
		since := setFault(t, st, "crash,n=1")
		if err := sb.Student().ScaleDeployment(t.Context(), st, sandbox.SampleName, 1); err != nil {
			t.Fatal(err)
		}
		hit := waitEvent(t, "the crash after the repair's write", injected(st, fault.Crash, since))
		if hit.Source != "proxy/"+leader {
			t.Errorf("the crash hit %s, want the leader %s: only it writes", hit.Source, leader)
		}
		waitEvent(t, "the leader killed", func(e trace.Event) bool {
			return e.Kind == trace.ProcessExit && e.Object == leader && trace.As[trace.Process](e).Signal == "killed" && e.Time.After(since)
		})
		// One kill per style: the replica that takes over is not killed
		// at its first write as well.
		for _, r := range sb.Operators().Replicas(st) {
			if on := sb.Faults().Proxy(st.Source(r)).Faults(); len(on) != 0 {
				t.Errorf("faults on at %s after the crash: %v", st.Source(r), on)
			}
		}
		eventually(t, time.Minute, "converged after the crash", converged(st, sandbox.SampleName, 2, sandbox.SampleMessage))
	})

	// rlab's own clients (the world's informers, which the screen and the
	// lessons' checks read, and the student's edits) do not pass through
	// the operators' proxies: with every style cut off, an edit lands and
	// the world sees it, while no operator follows it.
	t.Run("world untouched", func(t *testing.T) {
		since := time.Now()
		for _, st := range style.All() {
			setFault(t, st, "partition:2m")
		}
		const msg = "while the operators are cut off"
		if err := sb.Student().SetMessageIn(t.Context(), style.All(), sandbox.SampleName, msg); err != nil {
			t.Fatalf("the student's edit under a partition of every operator: %v", err)
		}
		eventually(t, 10*time.Second, "the world seeing the edit", func(sn world.Snapshot) bool {
			for _, st := range style.All() {
				if e := echoOf(sn, st, sandbox.SampleName); e == nil || e.Message != msg {
					return false
				}
			}
			return true
		})
		waitEvent(t, "a request refused 503 at an operator's proxy", func(e trace.Event) bool {
			r, ok := e.Request()
			return ok && r.Code == 503 && strings.HasPrefix(e.Source, "proxy/") && e.Time.After(since)
		})
		for _, st := range style.All() {
			if d := echoOf(sb.World().Snapshot(), st, sandbox.SampleName).Deployment; d == nil || d.Message == msg {
				t.Errorf("%s: Deployment %+v followed the edit under a partition", st, d)
			}
			sb.Faults().ClearFault(st, "")
		}
		if err := sb.Student().SetMessageIn(t.Context(), style.All(), sandbox.SampleName, sandbox.SampleMessage); err != nil {
			t.Fatal(err)
		}
		for _, st := range style.All() {
			eventually(t, time.Minute, string(st)+" converged after the partition", converged(st, sandbox.SampleName, 2, sandbox.SampleMessage))
		}
	})
}
