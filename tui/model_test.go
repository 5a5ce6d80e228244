package tui

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui/internal/fixture"
)

var now40 = fixture.At(40*time.Second + 300*time.Millisecond)

// newScreen is the main screen on the fixture: hello 2/2 everywhere, the
// fixture's events folded, a fixed clock; edit, if not nil, changes the
// options first.
func newScreen(t testing.TB, edit func(*Options)) (*Model, *fixture.Source) {
	t.Helper()
	src := fixture.NewSource(fixture.Snapshot())
	o := Options{
		Source: src,
		Info:   Info{Backend: "envtest", Version: "v1.36.3"},
		Now:    func() time.Time { return now40 },
		Start:  fixture.T0,
		Frame:  10 * time.Millisecond,
		Dark:   true,
	}
	if edit != nil {
		edit(&o)
	}
	m := New(o)
	m.Ingest(fixture.Events())
	m.SetSnapshot(src.Snapshot())
	return m, src
}

// newModel is the main screen on the fixture, acting through a.
func newModel(t testing.TB, a Actions) (*Model, *fixture.Source) {
	t.Helper()
	return newScreen(t, func(o *Options) { o.Actions = a })
}

func keyMsg(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "ctrl+u":
		return tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

// press sends keys; an action's Cmd is run at once and its result fed back,
// as the program would.
func press(m *Model, keys ...string) {
	for _, k := range keys {
		_, cmd := m.Update(keyMsg(k))
		if cmd == nil {
			continue
		}
		if k == "enter" || strings.ContainsAny(k, "+-dxnkgs") && !m.ctl.inputOpen() {
			if msg, ok := cmd().(actionMsg); ok {
				m.Update(msg)
			}
		}
	}
}

// TestTUIScreenGolden renders the whole screen in several states and sizes,
// ANSI stripped; refresh with `go test ./tui -run TestTUIScreenGolden -update`.
func TestTUIScreenGolden(t *testing.T) {
	rejected := &fixture.Actions{Err: func(c fixture.Call) error {
		if c.Method == "SetMessage" {
			return errors.New(`Echo.kkloud.io "hello" is invalid: spec.message: Invalid value: "": spec.message in body should be at least 1 chars long`)
		}
		return nil
	}}
	tests := []struct {
		name string
		w, h int
		keys []string
		a    Actions
	}{
		{name: "160x45", w: 160, h: 45},
		{name: "120x40", w: 120, h: 40},
		{name: "100x30-single-pane", w: 100, h: 30},
		{name: "200x60", w: 200, h: 60},
		{name: "99x30-too-small", w: 99, h: 30},
		{name: "120x29-too-small", w: 120, h: 29},
		{name: "help", w: 160, h: 45, keys: []string{"?"}},
		{name: "focus-clientgo-full-width", w: 160, h: 45, keys: []string{"2", "f"}},
		{name: "verbs", w: 160, h: 45, keys: []string{"v"}},
		{name: "timeline-runtime-gc-paused", w: 160, h: 45, keys: []string{"t", "t", "t", "T", "T", "T", "T", "T", "T", "T", "p"}},
		{name: "timeline-scrolled", w: 120, h: 40, keys: []string{"up", "up", "up"}},
		{name: "edit-message", w: 160, h: 45, keys: []string{"e", "ctrl+u", "x", "i", "n"}},
		{name: "edit-rejected", w: 160, h: 45, keys: []string{"e", "ctrl+u", "enter"}, a: rejected},
		{name: "replicas-rejected", w: 120, h: 40, keys: []string{"+"}, a: &fixture.Actions{Err: func(fixture.Call) error {
			return errors.New(`Echo.kkloud.io "hello" is invalid: spec.replicas: Invalid value: 6: spec.replicas in body should be less than or equal to 5`)
		}}},
		{name: "scale-prompt", w: 160, h: 45, keys: []string{"s"}},
		{name: "kill-shell-refused", w: 160, h: 45, keys: []string{"k"}},
		{name: "killed-clientgo", w: 160, h: 45, keys: []string{"tab", "k"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.a
			if a == nil {
				a = &fixture.Actions{}
			}
			m, _ := newModel(t, a)
			m.Update(tea.WindowSizeMsg{Width: tt.w, Height: tt.h})
			press(m, tt.keys...)
			out := m.View().Content
			lines := strings.Split(out, "\n")
			if !strings.Contains(tt.name, "too-small") {
				if len(lines) != tt.h {
					t.Errorf("%d lines, want %d", len(lines), tt.h)
				}
				for i, l := range lines {
					if w := ansi.StringWidth(l); w != tt.w {
						t.Errorf("line %d is %d wide, want %d: %q", i, w, tt.w, ansi.Strip(l))
					}
				}
			}
			golden.RequireEqual(t, ansi.Strip(out)+"\n")
		})
	}
}

// TestTUIViewCached: View does no drawing when nothing changed.
func TestTUIViewCached(t *testing.T) {
	m, _ := newModel(t, nil)
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
	m.Update(FrameMsg{}) // the first frame takes the world and the counts
	first := m.View().Content
	if m.draw.dirty {
		t.Fatal("dirty after View")
	}
	m.draw.cache = "cached" // a redraw would replace it
	if got := m.View().Content; got != "cached" {
		t.Fatal("View drew again with nothing changed")
	}
	m.Update(FrameMsg{}) // same clock, nothing on the bus, same world
	if got := m.View().Content; got != "cached" {
		t.Fatal("an idle frame caused a redraw")
	}
	m.Update(keyMsg("p"))
	if got := m.View().Content; got == "cached" || got == first {
		t.Fatal("a key did not redraw")
	}
}

// TestTUIFrameDrains: one frame drains the bus, folds and takes the world.
func TestTUIFrameDrains(t *testing.T) {
	m, src := newModel(t, nil)
	before := m.feed.stats.Events
	for _, e := range fixture.Events()[:10] {
		src.Bus.Publish(e)
	}
	w := fixture.Snapshot()
	w.Namespaces[style.Shell.Namespace()] = fixture.Namespace(style.Shell, 3, 3, "")
	src.SetWorld(w)
	m.Update(FrameMsg{})
	if got := m.feed.stats.Events - before; got != 10 {
		t.Fatalf("folded %d events, want 10", got)
	}
	if got := m.feed.namespace(style.Shell).Echoes["hello"].Ready; got != "3/3" {
		t.Fatalf("world not taken: ready %s", got)
	}
	// The third pod is new: it fades in.
	fresh := m.feed.fresh(style.Shell, now40)
	if !fresh("echo-hello-7c9f5-cmz") || fresh("echo-hello-7c9f5-akx") {
		t.Fatal("fresh pods wrong")
	}
}

// TestTUIIngestBudget: a huge backlog is folded a budget at a time, so a
// key press waits at most one budget. The clock is asked every 256 events:
// with a budget always spent, each Ingest folds exactly 256 and leaves the
// rest for the next (how long a budget takes is BenchmarkTUIIngestScale's).
func TestTUIIngestBudget(t *testing.T) {
	m, _ := newModel(t, nil)
	m.feed.budget = -1 // always over
	const n = 1 << 16  // a full subscription ring
	m.Ingest(burst(n))
	if got := m.Pending(); got != n-256 {
		t.Fatalf("after one Ingest %d events pending, want %d: a backlog must be folded a budget at a time", got, n-256)
	}
	calls := 1
	for m.Pending() > 0 {
		m.Ingest(nil)
		calls++
	}
	if calls != n/256 {
		t.Errorf("drained in %d Ingests, want %d", calls, n/256)
	}
}

// burst is n events of every common kind, spread over the styles.
func burst(n int) []trace.Event {
	base := fixture.Events()
	out := make([]trace.Event, n)
	for i := range out {
		out[i] = base[i%len(base)]
	}
	return out
}

// TestTUIActions drives the program with keys against fake Actions: each
// key calls the right action with the right arguments.
func TestTUIActions(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		want []fixture.Call
		text string // on screen afterwards
	}{
		{"plus", []string{"+"}, []fixture.Call{fixture.C("SetReplicas", "hello", 3)}, "replicas → 3"},
		{"minus", []string{"-"}, []fixture.Call{fixture.C("SetReplicas", "hello", 1)}, "replicas → 1"},
		{"plus thrice adds up", []string{"+", "+", "+"}, []fixture.Call{
			fixture.C("SetReplicas", "hello", 3), fixture.C("SetReplicas", "hello", 4), fixture.C("SetReplicas", "hello", 5)}, "replicas → 5"},
		{"edit message", []string{"e", "ctrl+u", "x", "i", "n", " ", "c", "h", "a", "o", "enter"},
			[]fixture.Call{fixture.C("SetMessage", "hello", "xin chao")}, `message → "xin chao"`},
		{"delete deployment", []string{"d"}, []fixture.Call{fixture.C("DeleteDeployment", style.Style(""), "hello")}, "deleted Deployment"},
		{"scale by hand", []string{"s", "enter"}, []fixture.Call{fixture.C("ScaleDeployment", style.Style(""), "hello", 3)}, "scaled Deployment"},
		{"scale to 5", []string{"s", "ctrl+u", "5", "enter"}, []fixture.Call{fixture.C("ScaleDeployment", style.Style(""), "hello", 5)}, "to 5 by hand"},
		{"delete echo", []string{"x"}, []fixture.Call{fixture.C("DeleteEcho", "hello")}, "deleted Echo/hello"},
		{"create echo", []string{"n"}, []fixture.Call{fixture.C("CreateEcho", "hello", "hello from rlab", 2)}, "created Echo/hello"},
		{"kill leader of client-go", []string{"2", "k"}, []fixture.Call{fixture.C("KillLeader", style.ClientGo)}, "killed (SIGKILL) leader clientgo/a"},
		{"stop leader of runtime", []string{"3", "g"}, []fixture.Call{fixture.C("StopLeader", style.Runtime)}, "stopped (SIGTERM) leader runtime/a"},
		{"shell has no leader", []string{"k"}, nil, "no leader"},
		{"fault at runtime", []string{"3", "F", "enter"}, []fixture.Call{fixture.C("ApplyFault", style.Runtime, "stale:2s")}, "fault stale:2s at runtime"},
		{"fault off at client-go", []string{"2", "F", "ctrl+u", "o", "f", "f", "enter"}, []fixture.Call{fixture.C("ApplyFault", style.ClientGo, "off")}, "fault off at clientgo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &fixture.Actions{Called: make(chan fixture.Call, 8)}
			m, _ := newModel(t, a)
			tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(160, 45))
			for _, k := range tt.keys {
				tm.Send(keyMsg(k))
				if len(tt.want) > 1 {
					<-a.Called // the next + only after the last was sent
				}
			}
			if len(tt.want) == 1 {
				select {
				case <-a.Called:
				case <-time.After(5 * time.Second):
					t.Fatal("no action called")
				}
			}
			// The result is on the status line once the action returned.
			teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("✓")) || bytes.Contains(b, []byte("✗")) },
				teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
			tm.Send(keyMsg("q"))
			fm := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
			if got := ansi.Strip(fm.Render()); !strings.Contains(got, tt.text) {
				t.Errorf("screen does not say %q:\n%s", tt.text, got)
			}
			if got := a.Calls(); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("calls = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestTUIEditRejected: a message the apiserver rejects is shown inline, as
// worded, the input stays open and nothing changes.
func TestTUIEditRejected(t *testing.T) {
	apiErr := `Echo.kkloud.io "hello" is invalid: spec.message: Invalid value: "": must not be empty`
	a := &fixture.Actions{Called: make(chan fixture.Call, 1), Err: func(fixture.Call) error { return errors.New(apiErr) }}
	m, _ := newModel(t, a)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(160, 45))
	for _, k := range []string{"e", "ctrl+u", "enter"} {
		tm.Send(keyMsg(k))
	}
	<-a.Called
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("must not be empty")) },
		teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	tm.Send(keyMsg("esc"))
	tm.Send(keyMsg("q"))
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	if got := fm.feed.namespace(style.Shell).Echoes["hello"].Message; got != "hello from rlab" {
		t.Fatalf("message changed to %q", got)
	}
	if fm.ctl.inputOpen() {
		t.Fatal("esc did not close the input")
	}
}

// TestTUINoActionsInReplay: with no Actions, keys say so and call nothing.
func TestTUINoActionsInReplay(t *testing.T) {
	m, _ := newModel(t, nil)
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
	press(m, "+")
	if !strings.Contains(m.Render(), "no cluster in a replay") {
		t.Fatal("no message for an action in a replay")
	}
}

// TestTUIQuitKey: q (and ctrl+c) quit the standalone screen.
func TestTUIQuitKey(t *testing.T) {
	for _, k := range []tea.KeyPressMsg{keyMsg("q"), {Code: 'c', Mod: tea.ModCtrl}} {
		m, _ := newModel(t, nil)
		_, cmd := m.Update(k)
		if cmd == nil {
			t.Fatalf("%s: no command", k)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Fatalf("%s did not quit", k)
		}
	}
}

// An idle sandbox is never quiet: every Go replica renews its Lease each
// second. Those renewals (their API requests and the Lease's new renew
// time) must not redraw the screen on their own; everything else must.
func TestTUIBackgroundDoesNotRedraw(t *testing.T) {
	cg := style.ClientGo
	lease := func(src string) trace.Event {
		return trace.Event{Time: now40, Source: "proxy/" + src, Kind: trace.APIRequest, Namespace: cg.Namespace(),
			Payload: trace.Request{Verb: "update", Resource: "leases", Code: 200}}
	}
	renewed := func(s world.Snapshot) world.Snapshot {
		out := world.Snapshot{Namespaces: map[string]*world.NamespaceView{}}
		for ns, v := range s.Namespaces {
			c := *v
			if v.Lease != nil {
				l := *v.Lease
				l.Renewed = l.Renewed.Add(time.Second)
				c.Lease = &l
			}
			out.Namespaces[ns] = &c
		}
		return out
	}
	tests := []struct {
		name   string
		filter int // T presses: 1 shows every kind, API requests included
		act    func(m *Model)
		redraw bool
	}{
		{"lease renewals", 0, func(m *Model) { m.Ingest([]trace.Event{lease(cg.Source("a")), lease(style.Runtime.Source("b"))}) }, false},
		{"lease renewals, timeline showing API requests", 1, func(m *Model) { m.Ingest([]trace.Event{lease(cg.Source("a"))}) }, true},
		{"a reconcile among them", 0, func(m *Model) {
			m.Ingest([]trace.Event{lease(cg.Source("a")), {Time: now40, Source: cg.Source("a"), Kind: trace.ReconcileStart,
				Namespace: cg.Namespace(), Object: "Echo/hello", Payload: trace.Reconcile{ID: 9, Cause: trace.CauseEvent}}})
		}, true},
		{"a status write", 0, func(m *Model) {
			m.Ingest([]trace.Event{{Time: now40, Source: "proxy/" + cg.Source("a"), Kind: trace.APIRequest, Namespace: cg.Namespace(),
				Payload: trace.Request{Verb: "update", Resource: "echoes/status", Code: 200}}})
		}, true},
		{"a Lease renewed in the world", 0, func(m *Model) { m.SetSnapshot(renewed(m.feed.snap)) }, false},
		{"a new Lease holder in the world", 0, func(m *Model) {
			s := renewed(m.feed.snap)
			s.Namespaces[cg.Namespace()].Lease.Holder = cg.Identity("b", 1)
			m.SetSnapshot(s)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newModel(t, nil)
			m.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
			for range tt.filter {
				m.Update(keyMsg("T"))
			}
			m.View()
			m.draw.dirty = false
			tt.act(m)
			if m.draw.dirty != tt.redraw {
				t.Errorf("dirty = %v, want %v", m.draw.dirty, tt.redraw)
			}
		})
	}
}

// TestTUIRaceFromStart: the screen opens as the operators start, before
// the sample Echo has a Deployment; each pane follows its own style's
// convergence, and keeps the time once converged.
func TestTUIRaceFromStart(t *testing.T) {
	world0 := func(f func(st style.Style, ns *world.NamespaceView)) world.Snapshot {
		s := fixture.Snapshot()
		for _, st := range style.All() {
			f(st, s.Namespaces[st.Namespace()])
		}
		return s
	}
	steps := []struct {
		name  string
		world world.Snapshot
		evs   []trace.Event
		want  []string // in the shell, client-go and runtime panes, in order
	}{
		{"not seen yet", world.Snapshot{Namespaces: map[string]*world.NamespaceView{}}, nil, []string{"not seen yet"}},
		{"creating", world0(func(_ style.Style, ns *world.NamespaceView) {
			e := ns.Echoes["hello"]
			e.Ready, e.Deployment = "", nil
		}), nil, []string{"Echo/hello -/2 creating", "Echo/hello -/2 creating", "Echo/hello -/2 creating", "no Deployment yet"}},
		{"the Go styles first", world0(func(st style.Style, ns *world.NamespaceView) {
			e := ns.Echoes["hello"]
			switch st {
			case style.Shell:
				e.Ready, e.Deployment.ReadyReplicas = "", 0
			default:
				e.Ready = "2/2"
			}
		}), []trace.Event{
			{Time: fixture.At(3 * time.Second), Source: trace.SourceWorld, Kind: trace.Converged, Namespace: style.ClientGo.Namespace(), Object: "Echo/hello",
				Payload: trace.Convergence{LatencyMS: 1100.0, Echo: "hello", Created: true}},
			{Time: fixture.At(3 * time.Second), Source: trace.SourceWorld, Kind: trace.Converged, Namespace: style.Runtime.Namespace(), Object: "Echo/hello",
				Payload: trace.Convergence{LatencyMS: 1020.0, Echo: "hello", Created: true}},
		}, []string{"waiting for pods 0/2", "converged in 1.10s", "converged in 1.02s"}},
		{"the shell loop last", fixture.Snapshot(), []trace.Event{
			{Time: fixture.At(11 * time.Second), Source: trace.SourceWorld, Kind: trace.Converged, Namespace: style.Shell.Namespace(), Object: "Echo/hello",
				Payload: trace.Convergence{LatencyMS: 9300.0, Echo: "hello", Created: true}},
		}, []string{"converged in 9.30s", "converged in 1.10s", "converged in 1.02s"}},
	}
	src := fixture.NewSource(world.Snapshot{})
	m := New(Options{Source: src, Now: func() time.Time { return fixture.At(12 * time.Second) }, Start: fixture.T0})
	wall := fixture.At(0)
	m.wall = func() time.Time { return wall }
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	for _, step := range steps {
		wall = wall.Add(2 * snapGapIdle) // past the snapshot gap
		src.SetWorld(step.world)
		for _, e := range step.evs {
			src.Bus.Publish(e)
		}
		m.Update(keyMsg("esc")) // a key: drawn at once
		m.Update(FrameMsg{})
		m.draw.now()
		out := ansi.Strip(m.View().Content)
		at := 0
		for _, w := range step.want {
			i := strings.Index(out[at:], w)
			if i < 0 {
				t.Fatalf("%s: no %q (in order) on screen:\n%s", step.name, w, out)
			}
			at += i + len(w)
		}
	}
}

// TestTUIStartupLine: while the start-up goes on behind the screen, the
// status line says what is still starting; once it is over, nothing; a
// failure stays there, with the way out.
func TestTUIStartupLine(t *testing.T) {
	step := func(p trace.Startup) trace.Event {
		return trace.Event{Time: now40, Source: trace.SourceRlab, Kind: trace.StartupStep, Payload: p}
	}
	tests := []struct {
		name string
		evs  []trace.Event
		want []string
		not  []string
	}{
		{"starting", []trace.Event{step(trace.Startup{Done: "the apiserver serves", Next: "the Nodes untainted, the controllers healthy"})},
			[]string{"starting: the Nodes untainted, the controllers healthy"}, []string{"failed"}},
		{"started", []trace.Event{
			step(trace.Startup{Done: "the apiserver serves", Next: "the Nodes untainted, the controllers healthy"}),
			step(trace.Startup{Done: "started"}),
		}, nil, []string{"starting:", "failed"}},
		{"failed", []trace.Event{step(trace.Startup{Error: "kube-controller-manager exited: exit status 1"})},
			[]string{"✗ start-up failed: kube-controller-manager exited: exit status 1 · q quits"}, []string{"starting:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newModel(t, nil)
			m.Ingest(tt.evs)
			m.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
			m.Update(FrameMsg{})
			out := ansi.Strip(m.View().Content)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q on the screen:\n%s", w, out)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(out, w) {
					t.Errorf("%q on the screen:\n%s", w, out)
				}
			}
		})
	}
}
