package sandbox_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/state"
)

// TestStartupPhases: the shared sandbox started Early (TestMain). Start
// returned as the apiserver served, before the cluster was ready; the
// trace said, step by step, what was still starting, and the last word was
// that nothing is; by then the kubeconfig `rlab env` hands out was written.
func TestStartupPhases(t *testing.T) {
	simtest.NeedsControlPlane(t)
	if err := sb.WaitOperators(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !(sb.Serving > 0 && sb.Serving < sb.ClusterReady && sb.ClusterReady <= sb.Ready) {
		t.Errorf("serving at %v, cluster ready at %v, ready at %v: want them in that order", sb.Serving, sb.ClusterReady, sb.Ready)
	}
	var next []string
	for _, e := range events.Of(trace.StartupStep) {
		p, _ := e.Startup()
		if p.Error != "" {
			t.Fatalf("the start-up failed: %s", p.Error)
		}
		next = append(next, p.Next)
	}
	want := []string{sandbox.NextOperatorsOnly, ""} // kind, an existing cluster: ready before the operators start
	if sb.Cluster().Type().LocalControlPlane {      // envtest: three phases

		want = []string{sandbox.NextOperators, sandbox.NextControllers, sandbox.NextSettle, ""}
	}
	if !slices.Equal(next, want) {
		t.Errorf("the start-up said, one step after another, that these were still starting: %q, want %q", next, want)
	}
	if _, err := os.Stat(sb.Cluster().Kubeconfig()); err != nil {
		t.Errorf("no kubeconfig for rlab env: %v", err)
	}
}

// TestStopWhileStarting: a sandbox stopped while its second phase runs
// behind an Early Start ends it first and says nothing failed; one whose
// Start's context ends after Start returned starts all the same (the
// second phase outlives it, as the sandbox does).
func TestStopWhileStarting(t *testing.T) {
	simtest.NeedsControlPlane(t)
	if underTest != backend.Envtest {
		t.Skip("the three phases are envtest's; the other backends start in one")
	}
	tests := []struct {
		name   string
		cancel bool // Start's context ends as Start returns
		stop   bool // Stop at once
	}{
		{"stopped while starting", false, true},
		{"start's context ended", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bus.New()
			sub := b.Subscribe(1 << 12)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			s, err := sandbox.Start(ctx, sandbox.Options{State: state.Dir{Root: t.TempDir()}, Assets: assetsDir, Self: rlabBin,
				Styles: style.All(), Sample: true, Bus: b, Early: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop() //nolint:errcheck // stopped below; again is harmless
			if tt.cancel {
				cancel()
			}
			if tt.stop {
				if err := s.Stop(); err != nil {
					t.Fatalf("stop while starting: %v", err)
				}
			}
			err = s.WaitOperators(t.Context())
			switch {
			case tt.stop && !errors.Is(err, sandbox.ErrStopped):
				t.Errorf("WaitOperators after Stop = %v, want ErrStopped", err)
			case !tt.stop && err != nil:
				t.Errorf("WaitOperators = %v, want the operators started", err)
			}
			evs, _ := sub.Drain() // every event of the start-up was published before WaitOperators returned
			var last trace.Startup
			for _, e := range evs {
				if p, ok := e.Startup(); ok {
					last = p
					if p.Error != "" {
						t.Errorf("the start-up was shown as failed: %s", p.Error)
					}
				}
			}
			if !tt.stop && (last.Done != "started" || last.Next != "") {
				t.Errorf("the start-up's last word = %+v, want that it started", last)
			}
		})
	}
}
