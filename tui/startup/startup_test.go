package startup

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/kkloud/rlab/tui/common"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// TestTUIStartupGolden renders the start-up view's states, ANSI stripped.
func TestTUIStartupGolden(t *testing.T) {
	phases := []Phase{{"apiserver+etcd", 3450 * time.Millisecond}, {"echo crd", 40 * time.Millisecond},
		{"controllers", 10 * time.Millisecond}, {"node ready", 510 * time.Millisecond}}
	tests := []struct {
		name string
		do   func(m *Model)
		at   time.Duration
	}{
		{"first-phase", func(*Model) {}, 1200 * time.Millisecond},
		{"phases", func(m *Model) {
			for _, p := range phases {
				m.AddPhase(p)
			}
			m.AddPhase(Phase{"operators started", 40 * time.Millisecond})
		}, 6 * time.Second},
		{"cold-build", func(m *Model) {
			m.AddBuildLine("control plane v1.36.3 not built yet (kube-apiserver, etcd missing); building it now into /root/.cache/rlab/controlplane/v1.36.3")
			for i := range 20 {
				m.AddBuildLine(fmt.Sprintf("go: downloading k8s.io/module%d v0.36.3", i))
			}
		}, 95 * time.Second},
		{"failed", func(m *Model) {
			m.AddPhase(phases[0])
			m.Notes = append(m.Notes, "cleaned up etcd (pid 4242) left by a previous run")
			m.Fail(errors.New("start sandbox: install CRD: the server could not find the requested resource (post customresourcedefinitions.apiextensions.k8s.io)\n\nEverything started was stopped. Logs are in /home/student/.local/state/rlab/logs"), t0.Add(5*time.Second))
		}, 9 * time.Second},
		{"interrupted", func(m *Model) { m.AddPhase(phases[0]); m.Stopping = true }, 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New("starting the sandbox · envtest v1.36.3 · state in /home/student/.local/state/rlab", t0)
			tt.do(m)
			out := m.Render(t0.Add(tt.at), 100, 30, common.NewTheme(true))
			golden.RequireEqual(t, ansi.Strip(out)+"\n")
		})
	}
}
