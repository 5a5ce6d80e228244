// Package timeline is the timeline pane: one line per event (Event.Line),
// coloured by operator style, filtered by style and kind, paused and
// scrolled. It keeps the newest events in a ring and formats only the lines
// on screen.
package timeline

import (
	"fmt"
	"strings"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/stats"
)

// DefaultSize is how many events the timeline keeps.
const DefaultSize = 4096

// Kind filters, cycled by `T`. The first one hides API requests, which
// outnumber everything else (lease renewals, the shell loop's kubectl), and
// the watch events of the built-in operators, whose informer events say the
// same; a student's operator's watch events stay, as it traces nothing else.
var Kinds = []struct {
	Name  string
	Match func(trace.Kind, style.Style) bool
}{
	{"no api", func(k trace.Kind, st style.Style) bool {
		// st is "" only for the student's own requests (trace.SourceYou):
		// they stay, as the student's acts do.
		return k != trace.APIRequest && (k != trace.APIWatchEvent || !st.Traits().Traces) || st == ""
	}},
	{"all kinds", func(trace.Kind, style.Style) bool { return true }},
	{"informer", prefix("informer.")},
	{"queue", prefix("queue.")},
	{"reconcile", prefix("reconcile.")},
	{"api", func(k trace.Kind, _ style.Style) bool {
		return k == trace.APIRequest || k == trace.APIWatchEvent || k == trace.Kubectl
	}},
	{"leader", prefix("leader.")},
	{"gc+drift", func(k trace.Kind, _ style.Style) bool {
		return k == trace.GCCollected || k == trace.DriftDetected || k == trace.DriftRepaired || k == trace.Converged
	}},
	{"process", prefix("process.")},
	{"rlab acts", prefix("rlab.")},
}

func prefix(p string) func(trace.Kind, style.Style) bool {
	return func(k trace.Kind, _ style.Style) bool { return strings.HasPrefix(string(k), p) }
}

type entry struct {
	ev    trace.Event
	style style.Style
	line  string // formatted and painted on first display, for width w
	w     int
	dark  bool
}

// Model is the timeline's state.
type Model struct {
	ring []entry
	head int    // index of the oldest entry
	n    int    // entries held
	seq  uint64 // events added in all; entry i (0 = oldest) has seq-n+i+1

	// Styles cycled by `t` ("" = all).
	Styles []style.Style
	style  int // index into "" + Styles
	kind   int // index into Kinds

	paused bool
	anchor uint64 // with paused: the newest seq shown
	scroll int    // lines scrolled up from the newest
}

// New returns an empty timeline keeping size events.
func New(size int, styles []style.Style) *Model {
	if size < 1 {
		size = DefaultSize
	}
	return &Model{ring: make([]entry, size), Styles: styles}
}

// Add appends one event.
func (m *Model) Add(e trace.Event) {
	i := (m.head + m.n) % len(m.ring)
	if m.n == len(m.ring) {
		m.head = (m.head + 1) % len(m.ring)
	} else {
		m.n++
	}
	m.ring[i] = entry{ev: e, style: stats.StyleOf(e)}
	m.seq++
}

// Clear forgets every event, keeping the filters.
func (m *Model) Clear() {
	clear(m.ring)
	m.head, m.n, m.seq, m.anchor, m.scroll = 0, 0, 0, 0, 0
}

// Len is how many events are held.
func (m *Model) Len() int { return m.n }

// StyleFilter is the style shown ("" for all).
func (m *Model) StyleFilter() style.Style {
	if m.style == 0 {
		return ""
	}
	return m.Styles[m.style-1]
}

// KindFilter is the name of the kind filter.
func (m *Model) KindFilter() string { return Kinds[m.kind].Name }

// CycleStyle shows the next style (all → shell → clientgo → runtime → all).
func (m *Model) CycleStyle() { m.style = (m.style + 1) % (len(m.Styles) + 1) }

// CycleKind shows the next kind filter.
func (m *Model) CycleKind() { m.kind = (m.kind + 1) % len(Kinds) }

// Paused says whether the timeline is frozen.
func (m *Model) Paused() bool { return m.paused }

// TogglePause freezes or follows the timeline.
func (m *Model) TogglePause() {
	if m.paused {
		m.Follow()
		return
	}
	m.paused, m.anchor = true, m.seq
}

// Scroll moves the view by n lines (positive: older). Scrolling pauses.
func (m *Model) Scroll(n int) {
	if !m.paused {
		m.paused, m.anchor = true, m.seq
	}
	m.scroll = max(0, m.scroll+n)
}

// Top scrolls to the oldest event held.
func (m *Model) Top() { m.Scroll(m.n) }

// Follow unpauses and shows the newest events.
func (m *Model) Follow() { m.paused, m.scroll = false, 0 }

// Shows says whether e would be listed under the current filters (while
// following: a paused timeline shows nothing new).
func (m *Model) Shows(e trace.Event) bool {
	return !m.paused && m.match(&entry{ev: e, style: stats.StyleOf(e)})
}

func (m *Model) match(e *entry) bool {
	// What rlab did (autoplay, rlab do) and what the student asked the
	// apiserver explain what follows in every style: never filtered out by
	// style.
	if f := m.StyleFilter(); f != "" && e.style != f && e.ev.Kind != trace.Act && e.ev.Source != trace.SourceYou {
		return false
	}
	return Kinds[m.kind].Match(e.ev.Kind, e.style)
}

// Title is the pane title: filters and the pause state.
func (m *Model) Title() string {
	t := "timeline · "
	if f := m.StyleFilter(); f != "" {
		t += f.Traits().Title
	} else {
		t += "all styles"
	}
	t += " · " + m.KindFilter()
	if m.paused {
		t += fmt.Sprintf(" · paused (+%d new)", m.seq-m.anchor)
		if m.scroll > 0 {
			t += fmt.Sprintf(" · ↑%d", m.scroll)
		}
	}
	return t
}

// Lines are the h newest matching lines (oldest first) up to the anchor,
// each fitted to w columns and painted by style.
func (m *Model) Lines(w, h int, s *common.Styles) []string {
	if h <= 0 {
		return nil
	}
	newest := m.seq
	if m.paused {
		newest = m.anchor
	}
	oldestSeq := m.seq - uint64(m.n) + 1
	index := func(q uint64) int { return (m.head + int(q-oldestSeq)) % len(m.ring) }
	if m.scroll > 0 {
		// Scrolled past the oldest: clamp so that the oldest page shows.
		matches := 0
		for q := newest; q >= oldestSeq && newest >= oldestSeq; q-- {
			if m.match(&m.ring[index(q)]) {
				matches++
			}
		}
		m.scroll = min(m.scroll, max(0, matches-h))
	}
	// Walk back from the anchor, skipping the scrolled lines, collecting h.
	picked := make([]int, 0, h)
	skip := m.scroll
	for q := newest; q >= oldestSeq && newest >= oldestSeq && len(picked) < h; q-- {
		i := index(q)
		if !m.match(&m.ring[i]) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		picked = append(picked, i)
	}
	out := make([]string, 0, h)
	for j := len(picked) - 1; j >= 0; j-- {
		e := &m.ring[picked[j]]
		if e.line == "" || e.w != w || e.dark != s.Dark {
			p := s.OpPaint(e.style)
			if isError(e.ev) {
				p = s.Err
			}
			l := e.ev.Line()
			e.line, e.w, e.dark = p.S(common.FitStyled(l, common.Width(l), w)), w, s.Dark
		}
		out = append(out, e.line)
	}
	return out
}

func isError(e trace.Event) bool {
	switch e.Kind {
	case trace.ReconcileEnd:
		return e.Str(trace.FieldResult) == trace.ResultError
	case trace.APIRequest:
		c, _ := e.Num(trace.FieldCode)
		return c >= 400 && c != 404 && c != 409
	case trace.ProcessExit, trace.Dropped, trace.Malformed:
		return true
	}
	return false
}

// Render draws the timeline in a frame of exactly w×h.
func (m *Model) Render(w, h int, s *common.Styles) []string {
	lines := m.Lines(common.BoxInner(w), h-2, s) // first: it clamps the scroll
	title := m.Title()
	return common.BoxFitted(s.Bold.S(title), common.Width(title), lines, w, h, s.Border)
}
