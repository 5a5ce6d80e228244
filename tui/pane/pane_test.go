package pane

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/internal/fixture"
	"github.com/kkloud/rlab/tui/stats"
)

func folded() *stats.Stats {
	s := stats.New(style.All())
	for _, e := range fixture.Events() {
		s.Apply(e)
	}
	return s
}

// TestTUIPaneGolden renders one pane per case, ANSI stripped; refresh the
// files with `go test ./tui/pane -update`.
func TestTUIPaneGolden(t *testing.T) {
	now := fixture.At(40*time.Second + 300*time.Millisecond)
	snap := fixture.Snapshot()
	deadLeader := func(s *stats.Stats) { s.Styles[style.ClientGo].Replicas["a"].Running = false }
	noEcho := world.Snapshot{Namespaces: map[string]*world.NamespaceView{style.Runtime.Namespace(): {Echoes: map[string]*world.EchoView{}}}}
	scaling := fixture.Namespace(style.ClientGo, 3, 2, style.ClientGo.Identity("a", 4123))
	held := fixture.Namespace(style.Runtime, 2, 2, style.Runtime.Identity("a", 4124))
	held.Echoes["hello"].Deleting, held.Echoes["hello"].Finalizers = true, []string{"kkloud.io/echo-registry"}
	tests := []struct {
		name  string
		style style.Style
		w, h  int
		ns    *world.NamespaceView
		edit  func(*stats.Stats)
		data  func(*Data)
	}{
		{name: "shell", style: style.Shell, w: 53, h: 18, ns: snap.Namespaces[style.Shell.Namespace()]},
		{name: "clientgo", style: style.ClientGo, w: 53, h: 18, ns: snap.Namespaces[style.ClientGo.Namespace()]},
		{name: "runtime-narrow", style: style.Runtime, w: 40, h: 18, ns: snap.Namespaces[style.Runtime.Namespace()]},
		{name: "tiny-pipeline", style: style.ClientGo, w: 30, h: 18, ns: snap.Namespaces[style.ClientGo.Namespace()]},
		{name: "held-by-finalizer", style: style.Runtime, w: 60, h: 18, ns: held},
		{name: "frozen", style: style.ClientGo, w: 53, h: 18, ns: snap.Namespaces[style.ClientGo.Namespace()], edit: func(s *stats.Stats) {
			s.Styles[style.ClientGo].Replicas["a"].Paused = true
			s.Styles[style.ClientGo].Replicas["b"].Paused = true
		}},
		{name: "two-shell-loops", style: style.Shell, w: 53, h: 18, ns: snap.Namespaces[style.Shell.Namespace()], edit: func(s *stats.Stats) {
			s.Styles[style.Shell].Replicas["b"] = &stats.Replica{Name: "b", Running: true, PID: 4242}
		}},
		{name: "dead-leader", style: style.ClientGo, w: 53, h: 18, ns: snap.Namespaces[style.ClientGo.Namespace()], edit: deadLeader},
		{name: "no-echo", style: style.Runtime, w: 53, h: 14, ns: noEcho.Namespaces[style.Runtime.Namespace()]},
		{name: "no-world-yet", style: style.Runtime, w: 53, h: 14},
		{name: "fresh-pod-and-verbs", style: style.ClientGo, w: 60, h: 22, ns: scaling, edit: func(s *stats.Stats) {
			s.Styles[style.ClientGo].Verbs = map[string]int{"list echoes": 3, "watch echoes": 2, "update leases": 40, "create deployments": 2, "get leases": 1}
			s.Styles[style.ClientGo].APITotal = 48
		}, data: func(d *Data) {
			d.Fresh = func(p string) bool { return strings.Contains(p, "-cmz") }
			d.Verbs = true
		}},
		{name: "drift-open", style: style.Runtime, w: 53, h: 18, ns: snap.Namespaces[style.Runtime.Namespace()], edit: func(s *stats.Stats) {
			s.Styles[style.Runtime].Drift = &stats.Drift{Object: "Deployment/echo-hello", What: "replicas", Detected: fixture.At(39 * time.Second)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := folded()
			if tt.edit != nil {
				tt.edit(s)
			}
			d := Data{Style: tt.style, Stats: s.Styles[tt.style], NS: tt.ns, Echo: "hello", Now: now, Focused: true}
			if tt.data != nil {
				tt.data(&d)
			}
			out := Render(d, tt.w, tt.h, common.NewStyles(true))
			for i, l := range out {
				if w := ansi.StringWidth(l); w != tt.w {
					t.Errorf("line %d is %d wide, want %d: %q", i, w, tt.w, ansi.Strip(l))
				}
			}
			golden.RequireEqual(t, ansi.Strip(strings.Join(out, "\n"))+"\n")
		})
	}
}

func TestTUISpark(t *testing.T) {
	tests := []struct {
		in   []int
		want string
	}{
		{[]int{0, 0, 0}, "▁▁▁"},
		{[]int{0, 1, 2, 3, 4}, "▁▂▄▆█"},
		{[]int{0, 8, 4}, "▁█▄"},
	}
	for _, tt := range tests {
		if got := Spark(tt.in); got != tt.want {
			t.Errorf("Spark(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
