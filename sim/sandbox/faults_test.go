package sandbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/proxy"
	"github.com/kkloud/rlab/sim/sandbox"
)

// TestFaults: the built-in Go operators under faults at their own proxies,
// in the shared sandbox. Under conflicts a repair still lands (they requeue
// and read again); killed right after a write, the write stays and the
// operator, restarted or failed over, finishes the work from what it finds.
func TestFaults(t *testing.T) {
	fault := func(t *testing.T, st style.Style, spec string) time.Time {
		t.Helper()
		f, err := proxy.ParseFault(spec)
		if err != nil {
			t.Fatal(err)
		}
		since := time.Now()
		if err := sb.Operators().SetFault(st, f); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Operators().ClearFault(st, "") })
		if got := sb.Operators().Faults(st); len(got) != 1 || got[0].String() != f.String() {
			t.Fatalf("faults on = %v, want %s", got, f)
		}
		return since
	}
	injected := func(st style.Style, kind proxy.FaultKind, since time.Time) func(trace.Event) bool {
		return func(e trace.Event) bool {
			return e.Kind == trace.FaultInjected && strings.HasPrefix(e.Source, "proxy/"+st.String()+"/") &&
				e.Str(trace.FieldFault) == string(kind) && e.Time.After(since)
		}
	}

	t.Run("conflict/runtime", func(t *testing.T) {
		st := style.Runtime
		since := fault(t, st, "conflict,n=2")
		for _, msg := range []string{"under conflicts", sandbox.SampleMessage} {
			if err := sb.Student().SetMessageIn(t.Context(), []style.Style{st}, sandbox.SampleName, msg); err != nil {
				t.Fatal(err)
			}
			eventually(t, time.Minute, "converged on "+msg+" under conflicts", converged(st, sandbox.SampleName, 2, msg))
		}
		waitEvent(t, "a conflict injected at runtime's proxy", injected(st, proxy.FaultConflict, since))
		waitEvent(t, "an update answered 409 at runtime's proxy", func(e trace.Event) bool {
			r, ok := e.Request()
			return ok && r.Code == 409 && strings.HasPrefix(e.Source, "proxy/runtime/") && e.Time.After(since)
		})
	})

	t.Run("crash/clientgo", func(t *testing.T) {
		st := style.ClientGo
		leader := holder(t, st, "")
		since := fault(t, st, "crash,n=1")
		if err := sb.Student().ScaleDeployment(t.Context(), st, sandbox.SampleName, 1); err != nil {
			t.Fatal(err)
		}
		hit := waitEvent(t, "the crash after the repair's write", injected(st, proxy.FaultCrash, since))
		if hit.Source != "proxy/"+leader {
			t.Errorf("the crash hit %s, want the leader %s: only it writes", hit.Source, leader)
		}
		waitEvent(t, "the leader killed", func(e trace.Event) bool {
			return e.Kind == trace.ProcessExit && e.Object == leader && e.Str(trace.FieldSignal) == "killed" && e.Time.After(since)
		})
		// One kill per style: the replica that takes over is not killed
		// at its first write as well.
		for _, r := range sb.Operators().Replicas(st) {
			if on := sb.Operators().Proxy(st.Source(r)).Faults(); len(on) != 0 {
				t.Errorf("faults on at %s after the crash: %v", st.Source(r), on)
			}
		}
		eventually(t, time.Minute, "converged after the crash", converged(st, sandbox.SampleName, 2, sandbox.SampleMessage))
	})
}
