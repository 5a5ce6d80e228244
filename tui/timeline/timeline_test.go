package timeline

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/internal/fixture"
)

var styles = style.All()

func filled(size int) *Model {
	m := New(size, styles)
	for _, e := range fixture.Events() {
		m.Add(e)
	}
	return m
}

// TestTUITimelineGolden renders the timeline in a few states, ANSI stripped.
func TestTUITimelineGolden(t *testing.T) {
	tests := []struct {
		name string
		do   func(m *Model)
	}{
		{"newest", func(*Model) {}},
		{"clientgo-only", func(m *Model) { m.CycleStyle(); m.CycleStyle() }},
		{"leader-kind", func(m *Model) {
			for range 6 {
				m.CycleKind()
			}
		}},
		{"paused-then-more", func(m *Model) {
			m.TogglePause()
			for i := range 5 {
				m.Add(trace.Event{Time: fixture.At(time.Minute + time.Duration(i)*time.Millisecond), Source: style.Shell.Source("a"), Kind: trace.PollTick,
					Namespace: style.Shell.Namespace(), Payload: trace.Poll{IntervalS: 5}})
			}
		}},
		{"scrolled-to-top", func(m *Model) { m.Top() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := filled(0)
			tt.do(m)
			out := m.Render(120, 12, common.NewTheme(false))
			for i, l := range out {
				if w := ansi.StringWidth(l); w != 120 {
					t.Errorf("line %d is %d wide", i, w)
				}
			}
			golden.RequireEqual(t, ansi.Strip(strings.Join(out, "\n"))+"\n")
		})
	}
}

func TestTUITimelineRing(t *testing.T) {
	m := New(4, styles)
	for i := range 10 {
		m.Add(trace.Event{Time: fixture.At(time.Duration(i) * time.Second), Source: style.ClientGo.Source("a"), Kind: trace.Log,
			Payload: trace.Message{Msg: fmt.Sprintf("event %d", i)}})
	}
	if m.Len() != 4 {
		t.Fatalf("Len = %d, want 4", m.Len())
	}
	lines := m.Lines(60, 10, common.NewTheme(true))
	if len(lines) != 4 || !strings.Contains(lines[0], "event 6") || !strings.Contains(lines[3], "event 9") {
		t.Fatalf("lines = %q", lines)
	}
	m.Scroll(100) // past the oldest: clamped
	lines = m.Lines(60, 2, common.NewTheme(true))
	if len(lines) != 2 || !strings.Contains(lines[0], "event 6") {
		t.Fatalf("scrolled past the top: %q", lines)
	}
	m.Follow()
	if m.Paused() || !strings.Contains(m.Lines(60, 1, common.NewTheme(true))[0], "event 9") {
		t.Fatal("Follow did not show the newest")
	}
	m.Clear()
	if m.Len() != 0 || len(m.Lines(60, 3, common.NewTheme(true))) != 0 {
		t.Fatal("Clear left events")
	}
}

// TestTUITimelineWatchEvents: by default the timeline hides API requests
// and the built-in operators' watch events (their informer events say the
// same), but lists a student's operator's, which traces nothing else; the
// api filter lists them all.
func TestTUITimelineWatchEvents(t *testing.T) {
	mine := style.Style("mine")
	watched := func(st style.Style) trace.Event {
		return trace.Event{Source: "proxy/" + st.Source("a"), Kind: trace.APIWatchEvent, Namespace: st.Namespace(),
			Object: "Deployment/echo-hello", Payload: trace.WatchEvent{Resource: "deployments", Type: "MODIFIED"}}
	}
	req := trace.Event{Source: "proxy/" + mine.Source("a"), Kind: trace.APIRequest, Namespace: mine.Namespace(),
		Payload: trace.Request{Verb: "get", Resource: "echoes"}}
	tests := []struct {
		name  string
		kinds int // CycleKind presses
		e     trace.Event
		want  bool
	}{
		{"own operator's watch event", 0, watched(mine), true},
		{"built-in's watch event", 0, watched(style.ClientGo), false},
		{"own operator's request", 0, req, false},
		{"api: built-in's watch event", 5, watched(style.ClientGo), true},
		{"api: own request", 5, req, true},
		{"informer: not a watch event", 2, watched(mine), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(16, append(style.All(), mine))
			for range tt.kinds {
				m.CycleKind()
			}
			if got := m.Shows(tt.e); got != tt.want {
				t.Errorf("Shows under %q = %v, want %v", m.KindFilter(), got, tt.want)
			}
		})
	}
}

// TestTUITimelineActs: what rlab did shows as a readable line under every
// style filter, in the default kind filter and in its own.
func TestTUITimelineActs(t *testing.T) {
	act := trace.Event{Time: fixture.At(time.Second), Source: trace.SourceRlab, Kind: trace.Act,
		Payload: trace.Action{Action: "partition_leader", Style: "go", Via: trace.ViaCommand}}
	tests := []struct {
		name          string
		styles, kinds int // CycleStyle and CycleKind presses
		want          bool
	}{
		{"default", 0, 0, true},
		{"shell only", 1, 0, true},
		{"clientgo only", 2, 0, true},
		{"acts", 0, len(Kinds) - 1, true},
		{"leader kind", 0, 6, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := filtered(styles, tt.styles, tt.kinds)
			if got := m.Shows(act); got != tt.want {
				t.Errorf("Shows under %s · %s = %v, want %v", m.StyleFilter(), m.KindFilter(), got, tt.want)
			}
		})
	}
	m := New(16, styles)
	m.Add(act)
	if l := m.Lines(120, 1, common.NewTheme(true)); len(l) != 1 || !strings.Contains(ansi.Strip(l[0]), "rlab.act          rlab do: partition_leader (go)") {
		t.Errorf("act line = %q", l)
	}
}

// The student's own requests (their proxy) are acts too: shown under
// "no api" and whatever style is chosen, unlike an operator's requests.
func TestTUITimelineYourRequests(t *testing.T) {
	yours := trace.Event{Time: fixture.At(time.Second), Source: trace.SourceYou, Kind: trace.APIRequest,
		Namespace: "echo-clientgo", Object: "Echo/world",
		Payload: trace.Request{Verb: "patch", Resource: "echoes", Code: 422, LatencyMS: 3.0}}
	operators := yours
	operators.Source = "proxy/clientgo/a"
	tests := []struct {
		name          string
		styles, kinds int // CycleStyle and CycleKind presses
		ev            trace.Event
		want          bool
	}{
		{"yours by default", 0, 0, yours, true},
		{"yours, shell only", 1, 0, yours, true},
		{"yours under api", 0, 5, yours, true},
		{"yours not under leader", 0, 6, yours, false},
		{"an operator's hidden by default", 0, 0, operators, false},
		{"an operator's under api", 0, 5, operators, true},
		{"an operator's, shell only", 1, 5, operators, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := filtered(styles, tt.styles, tt.kinds)
			if got := m.Shows(tt.ev); got != tt.want {
				t.Errorf("Shows under %s · %s = %v, want %v", m.StyleFilter(), m.KindFilter(), got, tt.want)
			}
		})
	}
	m := New(16, styles)
	m.Add(yours)
	if l := m.Lines(120, 1, common.NewTheme(true)); len(l) != 1 || !strings.Contains(ansi.Strip(l[0]), "proxy/you") ||
		!strings.Contains(ansi.Strip(l[0]), "echo-clientgo/Echo/world patch echoes → 422") {
		t.Errorf("your request's line = %q", l)
	}
}

// TestTUITimelineTimeOrder: events that arrive after later ones (the
// world's drift.detected, stamped when the drift began; the shell loop's
// lines, read from its output) are listed in time order, equal times in
// arrival order; a paused timeline keeps to what it had; a full ring lets
// the oldest in time go.
func TestTUITimelineTimeOrder(t *testing.T) {
	ev := func(ms int, msg string) trace.Event {
		return trace.Event{Time: fixture.At(time.Duration(ms) * time.Millisecond), Source: style.Shell.Source("a"), Kind: trace.Log,
			Payload: trace.Message{Msg: msg}}
	}
	s := common.NewTheme(false)
	rows := func(m *Model, h int) []string {
		var out []string
		for _, l := range m.Render(80, h+2, s)[1 : h+1] {
			if f := strings.Fields(ansi.Strip(l)); len(f) > 1 && f[1] != "│" {
				out = append(out, f[len(f)-2]) // the message, the frame's │ after it
			}
		}
		return out
	}
	m := New(5, styles)
	for _, e := range []trace.Event{ev(17635, "b"), ev(17452, "a"), ev(17700, "d"), ev(17635, "c")} {
		m.Add(e)
	}
	if got, want := rows(m, 6), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("rows = %q, want %q", got, want)
	}
	m.TogglePause()
	m.Add(ev(17500, "late"))
	if got, want := rows(m, 6), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("paused, a late event came: rows = %q, want %q", got, want)
	}
	m.Follow()
	if got, want := rows(m, 6), []string{"a", "late", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("following: rows = %q, want %q", got, want)
	}
	m.Add(ev(17400, "older")) // older than all held in a full ring: not kept
	m.Add(ev(17600, "mid"))   // the oldest in time goes
	if got, want := rows(m, 6), []string{"late", "mid", "b", "c", "d"}; !slices.Equal(got, want) || m.Len() != 5 {
		t.Errorf("full ring: rows = %q (%d held), want %q", got, m.Len(), want)
	}
}

// TestTUITimelineInsertRing: whatever the lateness, the ring holds what a
// stable sort by time of the events kept would (the oldest in time dropped
// past its size), across its wrap and both sides of an insertion.
func TestTUITimelineInsertRing(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 2, 7, 64} {
		m := New(size, styles)
		var want []trace.Event // the reference: sorted, stable, bounded
		for i := range 500 {
			late := time.Duration(rnd.IntN(40)) * time.Millisecond
			if rnd.IntN(4) == 0 {
				late = 0
			}
			e := trace.Event{Time: fixture.At(time.Duration(i)*time.Millisecond - late), Kind: trace.Log,
				Payload: trace.Message{Msg: strconv.Itoa(i)}}
			m.Add(e)
			p := len(want)
			for p > 0 && want[p-1].Time.After(e.Time) {
				p--
			}
			if len(want) == size && p == 0 {
				continue
			}
			want = slices.Insert(want, p, e)
			if len(want) > size {
				want = want[1:]
			}
		}
		if m.Len() != len(want) {
			t.Fatalf("size %d: Len = %d, want %d", size, m.Len(), len(want))
		}
		for p := range want {
			if got := m.entry(p).ev; got.Payload != want[p].Payload {
				t.Fatalf("size %d: position %d holds event %v, want %v", size, p, got.Payload, want[p].Payload)
			}
		}
	}
}

// filtered is a timeline of styles with its style filter cycled n times and
// its kind filter k times, as the keys do.
func filtered(styles []style.Style, n, k int) *Model {
	m := New(16, styles)
	for range n {
		m.CycleStyle()
	}
	for range k {
		m.CycleKind()
	}
	return m
}

// TestTitleInLanguage: the title in a lesson's language; the filters named
// after trace kinds stay as the lines name them.
func TestTitleInLanguage(t *testing.T) {
	m := New(16, style.All())
	m.Words = lessonview.WordsFor("vi")
	if got, want := m.Title(), "dòng thời gian · mọi kiểu · ẩn api"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	m.Words = nil
	if got, want := m.Title(), "timeline · all styles · no api"; got != want {
		t.Errorf("English title %q, want %q", got, want)
	}
}
