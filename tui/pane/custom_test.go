package pane

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/internal/fixture"
	"github.com/kkloud/rlab/tui/stats"
)

// customData is the pane of the fixture's own operator after its events,
// with edit applied to its stats first.
func customData(lease, holder string, edit func(*stats.Operator)) Data {
	s := stats.New(append(style.All(), fixture.Mine))
	for _, e := range fixture.CustomEvents(fixture.Mine) {
		s.Apply(e)
	}
	st := s.Styles[fixture.Mine]
	if edit != nil {
		edit(st)
	}
	ns := fixture.CustomSnapshot(fixture.Mine, lease, holder).Namespaces[fixture.Mine.Namespace()]
	return Data{Style: fixture.Mine, Stats: st, NS: ns, Echo: "hello", Now: fixture.At(40*time.Second + 300*time.Millisecond),
		Focused: true, Summary: Summarize(ns)}
}

// TestTUIPaneCustom: a student's operator's pane shows what its proxy and
// the cluster say (requests by verb and resource, watch events, writes,
// the denied request, its replica, its own Lease, the tree) and nothing
// only an operator's own trace could say (no pipeline, queue, reconciles).
func TestTUIPaneCustom(t *testing.T) {
	tests := []struct {
		name          string
		w             int
		lease, holder string
		verbs         bool
		edit          func(*stats.Operator)
		want, not     []string
	}{
		{name: "watching", w: 60,
			want: []string{
				"no trace of its own: seen from its proxy and the cluster",
				"API 33 req · 33/min · watches",
				"get 14 list 3 watch 2 patch 14",
				"deployments: get 7 list 1 watch 1 patch 7",
				"echoes: get 7 list 1 watch 1",
				"… 2 more resources",
				"watch events 7: deployments 6 · echoes 1",
				"last ADDED Deployment/echo-hello",
				"writes 14 · denied 1 (403)", "✗ list pods: not in its Role",
				"replica a pid 4200 · restarts 0",
				"Lease: none (no election seen)",
				"Echo/hello 2/2 converged in 4.20s",
				"drift repaired in 420ms (deleted)",
			},
			not: []string{"queue", "reconciles", "informer", "cause:", "client limit", "leader:"}},
		{name: "all resources with v", w: 60, verbs: true,
			want: []string{"echoes/status: patch 7", "pods: list 1"}, not: []string{"more resources"}},
		{name: "narrow", w: 36, want: []string{"no own trace: seen from outside", "API 33 req", "watch events 7"}},
		{name: "its own Lease", w: 60, lease: "mine-lock", holder: "mine-a",
			want: []string{"Lease mine-lock mine-a 9.7s left · 0 transitions", "replica a pid 4200 · restarts 0 ♛"}},
		{name: "polling", w: 60, edit: func(st *stats.Operator) {
			st.Verbs = map[stats.VerbKey]int{{Verb: "get", Resource: "echoes"}: 40, {Verb: "list", Resource: "echoes"}: 8}
			st.Watch = stats.WatchEvents{ByResource: map[string]int{}}
			st.Denied = stats.Denied{}
		}, want: []string{"polls: no watch", "get 40 list 8", "watch events 0", "none delivered", "writes 0 · denied 0"},
			not: []string{"watches", "403"}},
		{name: "two replicas, no Lease", w: 60, edit: func(st *stats.Operator) {
			st.Replicas["b"] = &stats.Replica{Name: "b", PID: 4201, Running: true, Restarts: 2}
		}, want: []string{"replica a pid 4200", "replica b pid 4201 · restarts 2", "no Lease: 2 replicas, all act"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := customData(tt.lease, tt.holder, tt.edit)
			d.Verbs = tt.verbs
			body := ansi.Strip(strings.Join(Body(d, tt.w, common.NewTheme(true)), "\n"))
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("no %q in:\n%s", w, body)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(body, n) {
					t.Errorf("%q in a pane that cannot know it:\n%s", n, body)
				}
			}
		})
	}
}

// TestTUIPaneCustomGolden is the whole pane, ANSI stripped, at the width
// of four panes on 200 and on 160 columns; refresh with
// `go test ./tui/pane -run TestTUIPaneCustomGolden -update`.
func TestTUIPaneCustomGolden(t *testing.T) {
	for _, w := range []int{50, 40} {
		t.Run("w"+strconv.Itoa(w), func(t *testing.T) {
			d := customData("", "", nil)
			out := Render(d, w, 20, common.NewTheme(true))
			for i, l := range out {
				if lw := ansi.StringWidth(l); lw != w {
					t.Errorf("line %d is %d wide, want %d: %q", i, lw, w, ansi.Strip(l))
				}
			}
			golden.RequireEqual(t, ansi.Strip(strings.Join(out, "\n"))+"\n")
		})
	}
}

// TestTUIPaneHolds: a replica is crowned when the Lease's holder is its
// rlab identity or built on its POD_NAME, and not for a longer name.
func TestTUIPaneHolds(t *testing.T) {
	tests := []struct {
		replica, identity string
		want              bool
	}{
		{"a", "mine-a-4121", true},
		{"b", "mine-a-4121", false},
		{"a", "mine-a", true},
		{"a", "mine-a_5f2c", true},
		{"a", "mine-ab", false},
		{"a", "other-a", false},
	}
	for _, tt := range tests {
		if got := holds(fixture.Mine, tt.replica, tt.identity); got != tt.want {
			t.Errorf("holds(%s, %q) = %v, want %v", tt.replica, tt.identity, got, tt.want)
		}
	}
}
