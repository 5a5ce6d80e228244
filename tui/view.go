package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/lessonpanel"
	"github.com/kkloud/rlab/tui/pane"
	"github.com/kkloud/rlab/tui/stats"
)

const freshFor = 2 * time.Second // as pane.freshFor

// Redraws that events and the clock cause are spaced by minRedraw while
// the marker moves, by idleRedraw otherwise (lease renewals tick the API
// counters all the time); keys are drawn at once.
const (
	minRedraw  = 100 * time.Millisecond
	idleRedraw = time.Second
)

// redraw is when the screen is drawn again, and the last drawing.
type redraw struct {
	dirty   bool
	moving  bool // the marker moves: draw events as they come (see feed.animating)
	urgent  bool // a key, a resize or an action's result: draw at once
	cache   string
	timeKey int64
	step    time.Duration // of timeKey
	drawn   time.Time     // when the cache was drawn (wall clock)
	renders int           // how often the screen was drawn (tests count them)

	helpLine string // the short help, drawn for helpW and helpDark
	helpW    int
	helpDark bool
}

// now asks for a redraw at once.
func (r *redraw) now() { r.dirty, r.urgent = true, true }

// tick asks for a redraw when the clock crossed a step: the flash phase
// while something flashes, the marker's cooling while it moves, else a
// whole second (everything else on screen counts in seconds).
func (r *redraw) tick(now time.Time, flashing, moving bool) {
	r.moving = moving
	step := time.Second
	if flashing {
		step = pane.FlashEvery
	} else if moving {
		step = pane.MarkerHot
	}
	r.step = step
	if tk := now.UnixMilli() / step.Milliseconds(); tk != r.timeKey {
		r.timeKey = tk
		r.dirty = true
	}
}

// due is how long until the screen must be drawn again by itself: a redraw
// held back by the gap, or the clock's next step (now on the screen's
// clock, wall on the wall clock); at most idleWake.
func (r *redraw) due(now, wall time.Time) time.Duration {
	if held := r.gap() - wall.Sub(r.drawn); r.dirty && !r.urgent && held > 0 {
		return held // View will not draw it before then
	}
	step := r.step
	if step <= 0 {
		step = time.Second
	}
	next := time.UnixMilli((r.timeKey + 1) * step.Milliseconds())
	return min(next.Sub(now), idleWake)
}

// gap is the least time between two redraws that events and the clock
// cause.
func (r *redraw) gap() time.Duration {
	if r.moving {
		return minRedraw
	}
	return idleRedraw
}

// View is the screen. It is drawn again only when something changed (an
// event, the world, a key, the size, or the clock while something moves),
// at most ten times a second unless a key asks; otherwise the last frame is
// returned as is, and the renderer finds nothing to do.
func (m *Model) View() tea.View {
	r := &m.draw
	if r.cache == "" || r.dirty && (r.urgent || m.wall().Sub(r.drawn) >= r.gap()) {
		r.cache = m.Render()
		r.dirty, r.urgent = false, false
		r.drawn = m.wall()
		r.renders++
	}
	v := tea.NewView(r.cache)
	v.AltScreen = true
	v.WindowTitle = "rlab · " + m.opts.Echo
	if c := m.ctl.cursor(); c != nil {
		// The input is the last status line, above the help line (and the
		// lesson line).
		c.Position.X++
		c.Position.Y += m.h - 2
		if m.lesson.on() {
			c.Position.Y--
		}
		v.Cursor = c
	}
	return v
}

// Render draws the whole screen as a string, no caching.
func (m *Model) Render() string {
	w, h := m.w, m.h
	if w == 0 || h == 0 {
		return ""
	}
	if w < MinWidth || h < MinHeight {
		return m.enlarge()
	}
	s := m.styles
	now := m.opts.Now()
	lines := make([]string, 0, h)
	lines = append(lines, m.header(now, w))

	footer := m.footer(w)
	avail := h - 1 - len(footer)
	// Panes: as tall as the tallest body, leaving the timeline at least 5
	// rows, or the lesson panel its least.
	lowMin := 5
	if m.lesson.on() {
		lowMin = lessonpanel.MinHeight
	}
	cols := m.panes.columns(w, avail-lowMin)
	words := m.lesson.st.Words // the panes' words, as the help box's
	if cols == 0 {
		lines = append(lines, m.panes.strip(m.feed, m.opts.Echo, w, s, words))
		avail--
	}
	top := m.panes.render(m.feed, m.opts.Echo, now, w, cols, avail, lowMin, s, words)
	lines = append(lines, top...)

	lowH := avail - len(top)
	switch {
	case m.showHelp:
		lines = append(lines, m.helpBox(w, lowH)...)
	case m.logs.open:
		lines = append(lines, m.logs.render(w, lowH, m.keys.Log.Help().Key, m.keys.LogReplica.Help().Key, s)...)
	case m.lesson.on():
		lines = append(lines, m.lesson.area(w, lowH, s, m.feed.tl)...)
	default:
		lines = append(lines, m.feed.tl.Render(w, lowH, s)...)
	}
	lines = append(lines, footer...)
	return strings.Join(lines, "\n")
}

func (m *Model) enlarge() string {
	w := m.lesson.st.Words // the lesson's language, as the rest of the screen
	msg := []string{
		w.F("rlab needs a terminal of at least %dx%d; this one is %dx%d.", MinWidth, MinHeight, m.w, m.h),
		w.T("Enlarge the terminal (or make the font smaller)."),
		"",
		w.F("%s quits.", "q"),
	}
	var out []string
	pad := max(0, (m.h-4)/2)
	for range pad {
		out = append(out, "")
	}
	for _, l := range msg {
		out = append(out, strings.Repeat(" ", max(0, (m.w-common.Width(l))/2))+l)
	}
	return strings.Join(out, "\n")
}

// header: backend and version, the Echo shown with its spec, elapsed, help.
func (m *Model) header(now time.Time, w int) string {
	s := m.styles
	words := m.lesson.st.Words
	l := &common.Line{}
	l.Plain(" ").Add(s.Accent, "rlab")
	if m.opts.Info.Backend != "" {
		l.Add(s.Dim, " · ").Plain(strings.TrimSpace(m.opts.Info.Backend + " " + m.opts.Info.Version))
	}
	l.Add(s.Dim, " · ").Add(s.Bold, "Echo/"+m.opts.Echo)
	if ev := m.echoView(); ev != nil {
		l.Plain(fmt.Sprintf("  message=%q  replicas=%d", ev.Message, ev.Replicas))
		if ev.Deleting {
			l.Add(s.Warn, "  "+words.T("deleting"))
		}
	} else if m.feed.seenEcho {
		l.Add(s.Warn, "  "+words.F("not found (%s creates it)", m.keys.CreateEcho.Help().Key))
	} else if m.feed.hasSnap {
		// The sandbox creates it as the operators start: the world may not
		// show it yet.
		l.Add(s.Dim, "  "+words.T("not seen yet"))
	}
	right := &common.Line{}
	if m.opts.Extra != nil {
		right.Add(s.Accent, m.opts.Extra()).Plain("  ")
	}
	right.Plain(common.Clock(now.Sub(m.opts.Start))).Plain("  ").Add(s.Key, "?").Add(s.Desc, " "+words.T("help")+" ")
	gap := w - l.Width() - right.Width()
	if gap < 1 {
		return common.FitStyled(l.String(), l.Width(), w-right.Width()) + right.String()
	}
	return l.String() + strings.Repeat(" ", gap) + right.String()
}

// footer is the status line(s), the lesson line in a lesson, and the
// short help.
func (m *Model) footer(w int) []string {
	out := m.ctl.lines(w, m.styles, m.opts.Hint)
	if up := m.feed.stats.Startup; up.Error != "" || (up.Starting() && len(out) == 0) {
		out = m.startupLine(up, w)
	}
	switch {
	case m.lesson.on():
		// The lesson line takes the place of an empty status line.
		out = append(out, m.lesson.line(w, m.styles, &m.keys))
	case len(out) == 0:
		out = []string{strings.Repeat(" ", w)}
	}
	r := &m.draw
	if r.helpLine == "" || r.helpW != w || r.helpDark != m.styles.Dark {
		// The help line changes only with the width and the colours.
		m.help.SetWidth(w - 1)
		r.helpLine = common.Fit(" "+m.help.ShortHelpView(m.keys.ShortHelp()), w)
		r.helpW, r.helpDark = w, m.styles.Dark
	}
	return append(out, r.helpLine)
}

// startupLine says what of the start-up goes on behind the screen, or why
// it failed: the status line while nothing else is said there.
func (m *Model) startupLine(up stats.Startup, w int) []string {
	words := m.lesson.st.Words
	if up.Error != "" {
		text := "✗ " + words.T("start-up failed: ") + up.Error + " · " + words.F("%s quits", m.keys.Quit.Help().Key)
		var out []string
		for _, l := range strings.Split(ansi.Hardwrap(text, w-1, true), "\n") {
			if out = append(out, m.styles.Err.S(common.Fit(" "+l, w))); len(out) == 3 {
				break
			}
		}
		return out
	}
	return []string{m.styles.Dim.S(common.Fit(" "+words.T("starting: ")+words.T(up.Next), w))}
}

func (m *Model) helpBox(w, h int) []string {
	m.help.SetWidth(w - 4)
	body := strings.Split(m.help.FullHelpView(m.keys.FullHelp()), "\n")
	body = append([]string{""}, body...)
	words := m.lesson.st.Words
	edits := words.T("Edits apply to the Echo of the same name in all three namespaces at once, so the styles race fairly.")
	if n := len(m.panes.order); n != 3 {
		edits = words.F("Edits apply to the Echo of the same name in all %d namespaces at once, so the styles race fairly.", n)
	}
	body = append(body, "", m.styles.Dim.S(edits), m.styles.Dim.S(words.T("? or esc closes this help.")))
	title := words.T("help")
	return common.Box(m.styles.Bold.S(title), common.Width(title), body, w, h, m.styles.Border)
}
