package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/tui/internal/fixture"
)

// newCustomScreen is the main screen with a student's operator, mine,
// beside the three built-in ones: its events (from its proxy, the
// supervisor and the world only) folded in time order with the fixture's.
func newCustomScreen(t testing.TB, w, h int) (*Model, *fixture.Source) {
	t.Helper()
	src := fixture.NewSource(fixture.CustomSnapshot(fixture.Mine, "", ""))
	m := New(Options{
		Source: src, Info: Info{Backend: "envtest", Version: "v1.36.3"},
		Styles: append(style.All(), fixture.Mine),
		Now:    func() time.Time { return now40 }, Start: fixture.T0, Frame: 10 * time.Millisecond, Dark: true,
	})
	evs := append(fixture.Events(), fixture.CustomEvents(fixture.Mine)...)
	slices.SortStableFunc(evs, func(a, b trace.Event) int { return a.Time.Compare(b.Time) })
	m.Ingest(evs)
	m.SetSnapshot(src.Snapshot())
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m, src
}

// paneColumns cuts the panes' row whose top edge is line i into columns,
// by the "┌" corners on it.
func paneColumns(lines []string, i int) [][]string {
	r := []rune(lines[i])
	var starts []int
	for j, c := range r {
		if c == '┌' {
			starts = append(starts, j)
		}
	}
	starts = append(starts, len(r))
	out := make([][]string, len(starts)-1)
	for _, l := range lines[i:] {
		lr := []rune(l)
		if !strings.HasPrefix(strings.TrimSpace(string(lr[min(starts[0], len(lr)):])), "│") &&
			!strings.HasPrefix(l, "┌") && !strings.HasPrefix(l, "└") {
			break
		}
		for p := range out {
			out[p] = append(out[p], string(lr[min(starts[p], len(lr)):min(starts[p+1], len(lr))]))
		}
		if strings.HasPrefix(l, "└") {
			break
		}
	}
	return out
}

// TestTUIFourPanes: with a student's operator the screen has four panes:
// side by side from 160 columns, two rows of two below that if the
// terminal is tall enough, else the focused one under the strip; every
// line exactly as wide as the terminal. Refresh with
// `go test ./tui -run TestTUIFourPanes -update`.
func TestTUIFourPanes(t *testing.T) {
	tests := []struct {
		name  string
		w, h  int
		keys  []string
		cols  int // panes on the row of the top edge; 0: a strip
		title string
	}{
		{name: "200x60", w: 200, h: 60, cols: 4},
		{name: "160x48", w: 160, h: 48, cols: 4},
		{name: "120x48-grid", w: 120, h: 48, cols: 2},
		{name: "120x40-single", w: 120, h: 40, cols: 0},
		{name: "160x48-focus-mine", w: 160, h: 48, keys: []string{"4"}, cols: 4, title: "▶ mine"},
		{name: "120x40-focus-mine", w: 120, h: 40, keys: []string{"4"}, title: "┌─ mine ─"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newCustomScreen(t, tt.w, tt.h)
			press(m, tt.keys...)
			out := ansi.Strip(m.View().Content)
			lines := strings.Split(out, "\n")
			if len(lines) != tt.h {
				t.Errorf("%d lines, want %d", len(lines), tt.h)
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w != tt.w {
					t.Errorf("line %d is %d wide, want %d: %q", i, w, tt.w, l)
				}
			}
			top := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "┌") })
			if got := strings.Count(lines[top], "┌"); tt.cols > 0 && got != tt.cols {
				t.Errorf("%d panes on the first row, want %d:\n%s", got, tt.cols, out)
			}
			if tt.cols == 0 && !strings.Contains(out, "tab/1-4 switch") {
				t.Errorf("no strip naming the four panes:\n%s", out)
			}
			if tt.title != "" && !strings.Contains(out, tt.title) {
				t.Errorf("no %q:\n%s", tt.title, out)
			}
			if !strings.Contains(out, "mine") || !strings.Contains(out, "controller-runtime") && tt.cols > 0 {
				t.Errorf("panes missing:\n%s", out)
			}
			golden.RequireEqual(t, out+"\n")
		})
	}
}

// TestTUICustomPaneOnScreen: on the real screen, mine's pane counts its
// requests by verb, its watch events and its denied request, from its
// proxy's events alone, and shows no pipeline, queue or reconcile rows,
// while the built-in panes still do.
func TestTUICustomPaneOnScreen(t *testing.T) {
	m, _ := newCustomScreen(t, 200, 60)
	lines := strings.Split(ansi.Strip(m.View().Content), "\n")
	top := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "┌") })
	cols := paneColumns(lines, top)
	if len(cols) != 4 {
		t.Fatalf("%d panes, want 4:\n%s", len(cols), strings.Join(lines, "\n"))
	}
	mine, clientgo := strings.Join(cols[3], "\n"), strings.Join(cols[1], "\n")
	for _, want := range []string{"─ mine ─", "no trace of its own", "API 33 req", "get 14 list 3 watch 2 patch 14",
		"watch events 7: deployments 6 · echoes 1", "denied 1 (403)", "✗ list pods", "replica a pid 4200",
		"Echo/hello 2/2 converged in 4.20s", "drift repaired in 420ms"} {
		if !strings.Contains(mine, want) {
			t.Errorf("mine's pane has no %q:\n%s", want, mine)
		}
	}
	for _, not := range []string{"informer", "queue", "reconciles", "cause:"} {
		if strings.Contains(mine, not) {
			t.Errorf("mine's pane shows %q, which only its own trace could tell:\n%s", not, mine)
		}
	}
	for _, want := range []string{"informer", "queue", "reconciles"} {
		if !strings.Contains(clientgo, want) {
			t.Errorf("client-go's pane lost %q:\n%s", want, clientgo)
		}
	}
}

// TestTUIKillOwnOperator: k on a student's operator's pane does not guess
// its leader: rlab did not name its Lease nor its identities.
func TestTUIKillOwnOperator(t *testing.T) {
	a := &fixture.Actions{}
	m, _ := newCustomScreen(t, 160, 48)
	m.opts.Actions, m.ctl.actions = a, a
	press(m, "4", "k")
	if s := ansi.Strip(m.View().Content); !strings.Contains(s, "mine is your own operator: rlab cannot tell its leader") {
		t.Fatalf("no word on k:\n%s", s)
	}
	if c := a.Calls(); len(c) != 0 {
		t.Fatalf("k acted: %v", c)
	}
}

// logScreen is the four-pane screen with mine focused and its log open,
// the first read done.
func logScreen(t *testing.T) (*Model, *fixture.Source) {
	t.Helper()
	m, src := newCustomScreen(t, 160, 48)
	src.SetLog(fixture.Mine, "a", "deployment.apps/echo-hello serverside-applied\n\x1b[31mecho.kkloud.io/hello patched\x1b[0m\n")
	press(m, "4")
	run(t, m, keyMsg("o"))
	return m, src
}

// run feeds msg (a key or a tick that makes the log view read) to m, then
// the read's result, as the program would; it returns what comes next (a
// tick, not waited for), nil if msg made no read.
func run(t *testing.T, m *Model, msg tea.Msg) tea.Cmd {
	t.Helper()
	_, cmd := m.Update(msg)
	if cmd == nil {
		return nil
	}
	read, ok := cmd().(logReadMsg) // a read returns at once
	if !ok {
		t.Fatalf("%v made no read of the log", msg)
	}
	_, next := m.Update(read)
	return next
}

// TestTUILogView: o opens the focused pane's operator log in place of the
// timeline, through the Source's Logs; it shows the newest lines, with no
// escape codes, and follows what is appended; a log begun anew starts
// over; tab moves it to the next pane's log; o and esc close it.
func TestTUILogView(t *testing.T) {
	m, src := logScreen(t)
	screen := func() string { return ansi.Strip(m.View().Content) }
	s := screen()
	for _, want := range []string{"log · mine replica a · o or esc closes", "deployment.apps/echo-hello serverside-applied", "echo.kkloud.io/hello patched"} {
		if !strings.Contains(s, want) {
			t.Fatalf("no %q on:\n%s", want, s)
		}
	}
	if strings.Contains(s, "timeline ·") || strings.Contains(m.View().Content, "\x1b[31mecho") {
		t.Fatalf("the timeline, or the log's own escape codes, still on screen:\n%s", s)
	}

	gen := m.logs.gen
	src.AppendLog(fixture.Mine, "a", "reconciled hello\n")
	run(t, m, logTickMsg{gen: gen})
	if s := screen(); !strings.Contains(s, "reconciled hello") {
		t.Fatalf("an appended line did not show:\n%s", s)
	}
	src.AppendLog(fixture.Mine, "a", "half a li")
	run(t, m, logTickMsg{gen: gen})
	src.AppendLog(fixture.Mine, "a", "ne\n")
	run(t, m, logTickMsg{gen: gen})
	if s := screen(); !strings.Contains(s, "half a line") {
		t.Fatalf("a line written in two pieces did not show whole:\n%s", s)
	}
	src.SetLog(fixture.Mine, "a", "a new run\n")
	run(t, m, logTickMsg{gen: gen})
	if s := screen(); !strings.Contains(s, "a new run") || strings.Contains(s, "reconciled hello") {
		t.Fatalf("a log begun anew did not start over:\n%s", s)
	}

	// tab moves the focus to the shell loop: its log, which it has not
	// written yet.
	run(t, m, keyMsg("tab"))
	if s := screen(); !strings.Contains(s, "log · shell loop replica a") || !strings.Contains(s, "no log yet") {
		t.Fatalf("the log did not follow the focus:\n%s", s)
	}
	press(m, "o")
	if s := screen(); strings.Contains(s, "log ·") || !strings.Contains(s, "timeline ·") {
		t.Fatalf("o did not close the log:\n%s", s)
	}
	run(t, m, keyMsg("o"))
	press(m, "esc")
	if s := screen(); strings.Contains(s, "log ·") {
		t.Fatalf("esc did not close the log:\n%s", s)
	}
}

// TestTUILogViewIdle: the log view reads only while open; a closed one's
// pending tick or read ends its chain, so no ticker is left behind.
func TestTUILogViewIdle(t *testing.T) {
	m, src := logScreen(t)
	gen := m.logs.gen
	press(m, "o") // closed
	if _, cmd := m.Update(logTickMsg{gen: gen}); cmd != nil {
		t.Fatal("a closed log view still reads")
	}
	if _, cmd := m.Update(logReadMsg{gen: gen}); cmd != nil {
		t.Fatal("a closed log view's read re-arms a tick")
	}
	// Opened again: the earlier opening's messages are dropped.
	run(t, m, keyMsg("o"))
	if _, cmd := m.Update(logTickMsg{gen: gen}); cmd != nil {
		t.Fatal("a tick of an earlier opening reads")
	}
	// While open, it reads once per logPoll, not faster than the screen at rest.
	src.AppendLog(fixture.Mine, "a", "x\n")
	if cmd := run(t, m, logTickMsg{gen: m.logs.gen}); cmd == nil {
		t.Fatal("an open log view stopped following")
	}
	if logPoll < idleWake/2 || logPoll > idleWake {
		t.Fatalf("logPoll %v: want between %v and %v", logPoll, idleWake/2, idleWake)
	}
}

// TestTUILogViewNoLogs: a Source with no logs (a replay) says so.
func TestTUILogViewNoLogs(t *testing.T) {
	m, _ := newScreen(t, func(o *Options) { o.Source = noLogs{o.Source} })
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
	if _, cmd := m.Update(keyMsg("o")); cmd != nil {
		t.Fatal("a Source with no logs is read")
	}
	if s := ansi.Strip(m.View().Content); !strings.Contains(s, "no operator logs here") || strings.Contains(s, "log ·") {
		t.Fatalf("no word that there are no logs:\n%s", s)
	}
}

// noLogs hides the fixture source's logs.
type noLogs struct{ Source }
