package checks

import (
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/supervisor"
	"github.com/kkloud/rlab/sim/world"
)

// TestFindActs: what the student (or rlab) does after the step was shown
// opens its window; what happened before, and what the operators do on
// their own, does not.
func TestFindActs(t *testing.T) {
	shown := at(1000)
	styleOf := func(ns string) style.Style { return style.FromNamespace(ns) }
	quiet := snapshot("2/2", 2, "Echo/hello")
	edited := func(ms int) world.Snapshot {
		sn := snapshot("2/2", 2, "Echo/hello")
		sn.Namespaces["echo-runtime"].Echoes["hello"].Edited = at(ms)
		return sn
	}
	kill := func(ms int, replica string) trace.Event {
		return ev(ms, supervisor.Source, trace.ProcessExit, "", replica, trace.Process{Signal: "killed"})
	}
	tests := []struct {
		name   string
		events []trace.Event
		sn     world.Snapshot
		first  int // ms; -1: no act
		by     map[style.Style]int
	}{
		{"nothing", nil, quiet, -1, nil},
		{"a kill before the step was shown", []trace.Event{kill(500, "clientgo/a")}, quiet, -1, nil},
		{"a kill after it", []trace.Event{kill(500, "clientgo/a"), kill(2000, "clientgo/b"), kill(2010, "runtime/a")}, quiet, 2000,
			map[style.Style]int{style.ClientGo: 2000, style.Runtime: 2010}},
		{"an exit of its own is no act", []trace.Event{ev(2000, supervisor.Source, trace.ProcessExit, "", "clientgo/a", trace.Process{Code: trace.ExitCode(1)})}, quiet, -1, nil},
		{"a Lease lost is no act", []trace.Event{ev(2000, "clientgo/a", trace.LeaderLost, "echo-clientgo", "Lease/echo-operator", trace.Leader{Reason: trace.ReasonLost})}, quiet, -1, nil},
		{"a Lease released on SIGTERM", []trace.Event{ev(2000, "runtime/b", trace.LeaderLost, "echo-runtime", "Lease/echo-operator", trace.Leader{Reason: trace.ReasonReleased})}, quiet, 2000,
			map[style.Style]int{style.Runtime: 2000}},
		{"rlab's action on both Go styles", []trace.Event{ev(3000, "rlab", trace.Act, "", "", trace.Action{Action: "partition_leader", Style: lessons.StyleGo})}, quiet, 3000,
			map[style.Style]int{style.ClientGo: 3000, style.Runtime: 3000}},
		{"a delete the world saw", []trace.Event{ev(2500, world.Source, trace.EchoDeleting, "echo-shell", "Echo/hello", nil)}, quiet, 2500,
			map[style.Style]int{style.Shell: 2500}},
		{"a field taken by hand", []trace.Event{ev(2600, world.Source, trace.Handover, "echo-shell", "Deployment/echo-hello",
			trace.Ownership{From: "echo-shell", To: "student"})}, quiet, 2600, map[style.Style]int{style.Shell: 2600}},
		{"a field taken back by the operator is no act", []trace.Event{ev(2600, world.Source, trace.Handover, "echo-shell", "Deployment/echo-hello",
			trace.Ownership{From: "student", To: "echo-shell"})}, quiet, -1, nil},
		{"an Echo with no finalizer deleted", []trace.Event{ev(2700, world.Source, trace.EchoDeleted, "echo-runtime", "Echo/hello", nil)}, quiet, 2700,
			map[style.Style]int{style.Runtime: 2700}},
		{"a Deployment scaled by hand", []trace.Event{ev(2600, world.Source, trace.DriftDetected, "echo-clientgo", "Deployment/echo-hello", nil)}, quiet, 2600,
			map[style.Style]int{style.ClientGo: 2600}},
		{"drift an operator reported is not the world's", []trace.Event{ev(2600, "clientgo/a", trace.DriftDetected, "echo-clientgo", "Deployment/echo-hello", nil)}, quiet, -1, nil},
		{"an edit after the step was shown", nil, edited(4000), 4000, map[style.Style]int{style.Runtime: 4000}},
		{"an edit before it", nil, edited(900), -1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := FindActs(shown, tt.events, tt.sn, styleOf)
			if tt.first < 0 {
				if !a.First.IsZero() {
					t.Fatalf("act at %v, want none", a.First.Sub(t0))
				}
				return
			}
			if !a.First.Equal(at(tt.first)) {
				t.Errorf("first act at %v, want %dms", a.First.Sub(t0), tt.first)
			}
			for st, ms := range tt.by {
				if got := a.at(st); !got.Equal(at(ms)) {
					t.Errorf("act for %s at %v, want %dms", st, got.Sub(t0), ms)
				}
			}
		})
	}
}

// TestActsMerge: the first act of each style stays the first, whatever
// later looks find (the world keeps only an Echo's last edit).
func TestActsMerge(t *testing.T) {
	var a Acts
	a.Merge(Acts{First: at(2000), By: map[style.Style]time.Time{style.Shell: at(2000)}})
	a.Merge(Acts{First: at(5000), By: map[style.Style]time.Time{style.Shell: at(5000), style.Runtime: at(5000)}})
	if !a.First.Equal(at(2000)) || !a.at(style.Shell).Equal(at(2000)) || !a.at(style.Runtime).Equal(at(5000)) {
		t.Fatalf("merged %+v", a)
	}
	if !a.at(style.ClientGo).Equal(at(2000)) {
		t.Errorf("a style with no act of its own: %v, want the first act", a.at(style.ClientGo).Sub(t0))
	}
}

// TestNewLeaderFromTheAct: a takeover is timed from the act that stopped
// the leader, never from when the step was shown; the first election and a
// takeover before the act do not count.
func TestNewLeaderFromTheAct(t *testing.T) {
	lease := func(ms int, id string) trace.Event {
		return ev(ms, world.Source, trace.LeaderObserved, "echo-clientgo", "Lease/echo-operator", trace.Leader{Identity: id})
	}
	min2 := lessons.Cond{Kind: "new_leader", Args: Args{"style": "clientgo", "min": 2 * time.Second}, Line: 0}
	max4 := lessons.Cond{Kind: "new_leader", Args: Args{"style": "clientgo", "max": 4 * time.Second}, Line: 0}
	view := func(holder string, acted int, evs ...trace.Event) View {
		v := View{Snapshot: snapshot("2/2", 2, "Echo/hello"), Began: t0, Now: at(60000), Events: evs,
			Holders: map[style.Style]string{style.ClientGo: holder}}
		if acted >= 0 {
			v.Acted = at(acted)
			v.Acts.Note(at(acted), style.ClientGo)
		}
		return v
	}
	tests := []struct {
		name      string
		cond      lessons.Cond
		view      View
		ok, final bool
		detail    string
	}{
		{"the first election is no takeover", min2, view("", 100, lease(200, "clientgo-a-1")), false, false, "nobody led when the step began"},
		{"read for 12s, then killed: 4.2s after the kill", min2, view("clientgo-a-1", 12000, lease(16200, "clientgo-b-2")), true, false, "after 4.20s"},
		{"SIGTERM read slowly still within 4s", max4, view("clientgo-a-1", 11000, lease(11800, "clientgo-b-2")), true, false, "after 0.80s"},
		{"a takeover before the act is not this one", max4, view("clientgo-a-1", 20000, lease(5000, "clientgo-b-2"), lease(21000, "clientgo-a-3")), true, false,
			"clientgo-a-3 took over from clientgo-b-2 after 1.00s"},
		{"too soon after the act is final", min2, view("clientgo-a-1", 12000, lease(12500, "clientgo-b-2")), false, true, "sooner than 2s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := EvalCond(tt.cond, tt.view)
			if o.OK != tt.ok || o.Final != tt.final || !strings.Contains(o.Detail, tt.detail) {
				t.Errorf("= %+v, want ok %v final %v detail containing %q", o, tt.ok, tt.final, tt.detail)
			}
		})
	}
}

// TestGated: a step whose action leaves a trace waits for it; one that
// only shows something, whose act the apiserver refuses, or whose act is a
// Role edited by hand (the world does not watch Roles), does not.
func TestGated(t *testing.T) {
	all, err := lessons.Load()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		lesson int
		gated  []bool
	}{
		{1, []bool{false, true, false, true}},
		{10, []bool{false, true, false, true}},
		{12, []bool{false, false, false, false, false, false}},
		{16, []bool{false, false, false, true, false, true, true}},
	}
	for _, tt := range tests {
		l, err := lessons.Find(all, tt.lesson)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range tt.gated {
			if got := l.Steps[i].Gated(); got != want {
				t.Errorf("lesson %d step %d %q: gated %v, want %v", tt.lesson, i+1, l.Steps[i].Title, got, want)
			}
			if c := l.Steps[i].Check; c != nil && c.Gated != want {
				t.Errorf("lesson %d step %d: its check says gated %v", tt.lesson, i+1, c.Gated)
			}
		}
	}
}

// TestOrphansGone: an orphaned Deployment deleted by hand is an act; one
// still there, or a namespace not watched, is not.
func TestOrphansGone(t *testing.T) {
	ns := &world.NamespaceView{Orphans: []*world.DeploymentView{{Name: "echo-gc-demo"}}}
	tests := []struct {
		name  string
		ns    *world.NamespaceView
		names []string
		want  bool
	}{
		{"still there", ns, []string{"echo-gc-demo"}, false},
		{"deleted", &world.NamespaceView{}, []string{"echo-gc-demo"}, true},
		{"none at the start", &world.NamespaceView{}, nil, false},
		{"not watched", nil, []string{"echo-gc-demo"}, false},
	}
	for _, tt := range tests {
		if got := OrphansGone(tt.ns, tt.names); got != tt.want {
			t.Errorf("%s: orphansGone = %v, want %v", tt.name, got, tt.want)
		}
	}
}
