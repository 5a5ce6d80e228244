// Package timeline is the timeline pane: one line per event (Event.Line),
// coloured by operator style, filtered by style and kind, paused and
// scrolled. It keeps the latest events in a ring, in event time order
// whatever order they arrived in, and formats only the lines on screen.
package timeline

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kkloud/rlab/lessons/lessonview"
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
	at    time.Time // the event's time; an untimed event's is the newest held then
	added uint64    // arrival number (Model.seq when added): a paused view shows those up to its anchor
	line  string    // formatted and painted on first display, for width w
	w     int
	dark  bool
}

// Model is the timeline's state. Its rows are in event time order, not in
// arrival order: some events reach the screen after later ones (the world
// publishes a drift a settle time after it began, stamped when it began;
// the shell loop's lines are read from its output after it wrote them).
type Model struct {
	// Words, if set, say the title in a lesson's language.
	Words lessonview.Words
	// slots hold the entries where they arrived; ord is a ring of slot
	// numbers in time order, from head: a late event moves 4-byte slot
	// numbers aside, not entries.
	slots []entry
	ord   []int32
	head  int    // index in ord of the oldest entry
	n     int    // entries held
	seq   uint64 // events added in all

	// Styles cycled by `t` ("" = all).
	Styles []style.Style
	style  int // index into "" + Styles
	kind   int // index into Kinds

	paused bool
	anchor uint64 // with paused: the last arrival shown (entries added after it are not)
	scroll int    // lines scrolled up from the newest
}

// New returns an empty timeline keeping size events.
func New(size int, styles []style.Style) *Model {
	if size < 1 {
		size = DefaultSize
	}
	return &Model{slots: make([]entry, size), ord: make([]int32, size), Styles: styles}
}

// Add puts one event in time order: after every event held with an equal
// or earlier time. Events in order (nearly all) are appended; a late one
// is placed by binary search, and the shorter side of the ring moves aside.
// With the ring full, the oldest in time goes; an event older than all of
// them is not kept.
func (m *Model) Add(e trace.Event) {
	m.seq++
	at := e.Time
	if at.IsZero() && m.n > 0 { // untimed: shown as it comes
		at = m.entry(m.n - 1).at
	}
	var slot int32
	if m.n == len(m.ord) {
		if at.Before(m.entry(0).at) {
			return // older than every event held: the first to go
		}
		slot = m.ord[m.head] // the oldest goes; its slot takes e
		m.head = (m.head + 1) % len(m.ord)
		m.n--
	} else {
		slot = int32(m.n) // filled in turn until full, and never freed before
	}
	// p: the position (0: the oldest) of the first entry later than e.
	p := m.n
	if p > 0 && m.entry(p-1).at.After(at) {
		p = sort.Search(m.n, func(i int) bool { return m.entry(i).at.After(at) })
	}
	if p >= m.n-p {
		m.moveUp(p)
	} else {
		m.moveDown(p)
	}
	m.ord[m.index(p)] = slot
	m.n++
	m.slots[slot] = entry{ev: e, style: stats.StyleOf(e), at: at, added: m.seq}
}

// moveUp frees position p: the newer side, positions p to n-1, moves up
// one, in runs that do not cross the ring's end (a memmove each).
func (m *Model) moveUp(p int) {
	for j := m.n; j > p; { // j: the position a run ends at, moved to
		d, s := m.index(j), m.index(j-1)
		k := min(j-p, d+1, s+1)
		copy(m.ord[d-k+1:d+1], m.ord[s-k+1:s+1])
		j -= k
	}
}

// moveDown frees position p: the head moves back one, and the older side,
// positions 0 to p-1, with it.
func (m *Model) moveDown(p int) {
	m.head = (m.head - 1 + len(m.ord)) % len(m.ord)
	for j := 0; j < p; { // j: the position a run starts at, moved to
		d, s := m.index(j), m.index(j+1)
		k := min(p-j, len(m.ord)-d, len(m.ord)-s)
		copy(m.ord[d:d+k], m.ord[s:s+k])
		j += k
	}
}

// index is the index in ord of position p (0: the oldest held), p below
// the ring's size.
func (m *Model) index(p int) int {
	if i := m.head + p; i < len(m.ord) {
		return i
	}
	return m.head + p - len(m.ord)
}

// entry is the entry at position p (0: the oldest held).
func (m *Model) entry(p int) *entry { return &m.slots[m.ord[m.index(p)]] }

// Clear forgets every event, keeping the filters.
func (m *Model) Clear() {
	clear(m.slots)
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

// Title is the pane title: filters and the pause state, in Words'
// language. The filters named after trace kinds ("informer", "queue") stay
// as the lines they keep name them.
func (m *Model) Title() string {
	w := m.Words
	styles := w.T("all styles")
	if f := m.StyleFilter(); f != "" {
		styles = f.Traits().Title
	}
	t := w.F("timeline · %s · %s", styles, w.T(m.KindFilter()))
	if m.paused {
		t += w.F(" · paused (+%d new)", m.seq-m.anchor)
		if m.scroll > 0 {
			t += fmt.Sprintf(" · ↑%d", m.scroll)
		}
	}
	return t
}

// Lines are the h newest matching lines (oldest first) up to the anchor,
// each fitted to w columns and painted by style.
func (m *Model) Lines(w, h int, s *common.Theme) []string {
	if h <= 0 {
		return nil
	}
	// shown: a paused view keeps to the events it had, wherever in time
	// the later arrivals went.
	shown := func(e *entry) bool { return (!m.paused || e.added <= m.anchor) && m.match(e) }
	if m.scroll > 0 {
		// Scrolled past the oldest: clamp so that the oldest page shows.
		matches := 0
		for p := m.n - 1; p >= 0; p-- {
			if shown(m.entry(p)) {
				matches++
			}
		}
		m.scroll = min(m.scroll, max(0, matches-h))
	}
	// Walk back from the newest, skipping the scrolled lines, collecting h.
	picked := make([]*entry, 0, h)
	skip := m.scroll
	for p := m.n - 1; p >= 0 && len(picked) < h; p-- {
		e := m.entry(p)
		if !shown(e) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		picked = append(picked, e)
	}
	out := make([]string, 0, h)
	for j := len(picked) - 1; j >= 0; j-- {
		e := picked[j]
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
		r, _ := e.Reconcile()
		return r.Result == trace.ResultError
	case trace.APIRequest:
		c := e.Code()
		return c >= 400 && c != 404 && c != 409
	case trace.ProcessExit, trace.Dropped, trace.Malformed:
		return true
	}
	return false
}

// Render draws the timeline in a frame of exactly w×h.
func (m *Model) Render(w, h int, s *common.Theme) []string {
	lines := m.Lines(common.BoxInner(w), h-2, s) // first: it clamps the scroll
	title := m.Title()
	return common.BoxFitted(s.Bold.S(title), common.Width(title), lines, w, h, s.Border)
}
