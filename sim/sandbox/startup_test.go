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
	want := []string{sandbox.NextOperators, ""}
	if sb.Cluster().Type().LocalControlPlane { // envtest: three phases

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
// behind an Early Start ends it first, says nothing failed, and leaves no
// process and no pid file behind.
func TestStopWhileStarting(t *testing.T) {
	simtest.NeedsControlPlane(t)
	if underTest != backend.Envtest {
		t.Skip("the three phases are envtest's; the other backends start in one")
	}
	log := &simtest.EventLog{}
	b := bus.New()
	go log.Run(t.Context(), b.Subscribe(1<<12))
	d := state.Dir{Root: t.TempDir()}
	s, err := sandbox.Start(t.Context(), sandbox.Options{State: d, Assets: assetsDir, Self: rlabBin,
		Styles: style.All(), Sample: true, Bus: b, Early: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("stop while starting: %v", err)
	}
	if err := s.WaitOperators(t.Context()); err == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("WaitOperators after Stop = %v, want the second phase cancelled", err)
	}
	for _, e := range log.Of(trace.StartupStep) {
		if p, _ := e.Startup(); p.Error != "" {
			t.Errorf("a stop while starting was shown as a failure: %s", p.Error)
		}
	}
	left, err := os.ReadDir(d.PIDs())
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("pid files left: %v", left)
	}
}
