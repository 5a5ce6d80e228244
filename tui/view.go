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
)

const freshFor = 2 * time.Second // as pane.freshFor

// Redraws that events and the clock cause are spaced by minRedraw while
// the marker moves, by idleRedraw otherwise (lease renewals tick the API
// counters all the time); keys are drawn at once.
const (
	minRedraw  = 100 * time.Millisecond
	idleRedraw = time.Second
)

// View is the screen. It is drawn again only when something changed (an
// event, the world, a key, the size, or the clock while something moves),
// at most ten times a second unless a key asks; otherwise the last frame is
// returned as is, and the renderer finds nothing to do.
func (m *Model) View() tea.View {
	gap := idleRedraw
	if m.moving {
		gap = minRedraw
	}
	if m.cache == "" || m.dirty && (m.urgent || time.Since(m.drawn) >= gap) {
		m.cache = m.Render()
		m.dirty, m.urgent = false, false
		m.drawn = time.Now()
	}
	v := tea.NewView(m.cache)
	v.AltScreen = true
	v.WindowTitle = "rlab · " + m.opts.Echo
	if m.mode != modeNormal {
		if c := m.input.Cursor(); c != nil {
			// The input is the last status line, above the help line (and
			// the lesson line).
			c.Position.X++
			c.Position.Y += m.h - 2
			if m.opts.Guide != nil {
				c.Position.Y--
			}
			v.Cursor = c
		}
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
	three := !m.full && w >= threeFrom && len(m.opts.Styles) > 1
	avail := h - 1 - len(footer)
	if !three {
		lines = append(lines, m.strip(w))
		avail--
	}

	// Panes: as tall as the tallest body, leaving the timeline at least 5
	// rows, or the lesson panel its least.
	var shown []string
	if three {
		shown = m.opts.Styles
	} else {
		shown = []string{m.focused()}
	}
	widths := make([]int, len(shown))
	for i := range shown {
		widths[i] = w / len(shown)
		if i < w%len(shown) {
			widths[i]++
		}
	}
	bodies := make([][]string, len(shown))
	tallest := 0
	for i, st := range shown {
		bodies[i] = pane.Body(m.paneData(st, now, len(shown) == 1), common.BoxInner(widths[i]), s)
		tallest = max(tallest, len(bodies[i]))
	}
	lowMin := 5
	if m.opts.Guide != nil {
		lowMin = lessonpanel.MinHeight
	}
	paneH := min(tallest+2, avail-lowMin)
	blocks := make([][]string, len(shown))
	for i, st := range shown {
		title := common.Title(st)
		border := s.Border
		if st == m.focused() && len(shown) > 1 {
			title = "▶ " + title
			border = s.OpPaint(st)
		}
		blocks[i] = common.BoxFitted(s.OpBold[st].S(title), common.Width(title), bodies[i], widths[i], paneH, border)
	}
	lines = append(lines, common.JoinColumns(blocks, widths)...)

	lowH := avail - paneH
	switch {
	case m.showHelp:
		lines = append(lines, m.helpBox(w, lowH)...)
	case m.opts.Guide != nil:
		lines = append(lines, m.lessonArea(w, lowH)...)
	default:
		lines = append(lines, m.tl.Render(w, lowH, s)...)
	}
	lines = append(lines, footer...)
	return strings.Join(lines, "\n")
}

func (m *Model) paneData(style string, now time.Time, single bool) pane.Data {
	d := pane.Data{
		Style:   style,
		Stats:   m.stats.Styles[style],
		NS:      m.snap.Namespaces["echo-"+style],
		Echo:    m.opts.Echo,
		Now:     now,
		Verbs:   m.showVerbs || (m.full && single),
		Focused: style == m.focused(),
	}
	ns := "echo-" + style + "/"
	d.Fresh = func(pod string) bool {
		t, ok := m.podSeen[ns+pod]
		return ok && !t.IsZero() && now.Sub(t) < freshFor
	}
	return d
}

func (m *Model) enlarge() string {
	msg := fmt.Sprintf("rlab needs a terminal of at least %dx%d; this one is %dx%d.\nEnlarge the terminal (or make the font smaller).\n\nq quits.",
		MinWidth, MinHeight, m.w, m.h)
	var out []string
	pad := max(0, (m.h-4)/2)
	for range pad {
		out = append(out, "")
	}
	for _, l := range strings.Split(msg, "\n") {
		out = append(out, strings.Repeat(" ", max(0, (m.w-common.Width(l))/2))+l)
	}
	return strings.Join(out, "\n")
}

// header: backend and version, the Echo shown with its spec, elapsed, help.
func (m *Model) header(now time.Time, w int) string {
	s := m.styles
	l := &common.Line{}
	l.Plain(" ").Add(s.Accent, "rlab")
	if m.opts.Info.Backend != "" {
		l.Add(s.Dim, " · ").Plain(strings.TrimSpace(m.opts.Info.Backend + " " + m.opts.Info.Version))
	}
	l.Add(s.Dim, " · ").Add(s.Bold, "Echo/"+m.opts.Echo)
	if ev := m.echoView(); ev != nil {
		l.Plain(fmt.Sprintf("  message=%q  replicas=%d", ev.Message, ev.Replicas))
		if ev.Deleting {
			l.Add(s.Warn, "  deleting")
		}
	} else if m.hasSnap {
		l.Add(s.Warn, "  not found ("+m.keys.CreateEcho.Help().Key+" creates it)")
	}
	right := &common.Line{}
	if m.opts.Extra != nil {
		right.Add(s.Accent, m.opts.Extra()).Plain("  ")
	}
	right.Plain(common.Clock(now.Sub(m.opts.Start))).Plain("  ").Add(s.Key, "?").Add(s.Desc, " help ")
	gap := w - l.Width() - right.Width()
	if gap < 1 {
		return common.FitStyled(l.String(), l.Width(), w-right.Width()) + right.String()
	}
	return l.String() + strings.Repeat(" ", gap) + right.String()
}

// strip names the panes not shown on a narrow screen, with their status.
func (m *Model) strip(w int) string {
	s := m.styles
	l := &common.Line{}
	for i, st := range m.opts.Styles {
		label := fmt.Sprintf(" %d %s ", i+1, common.Title(st))
		if ns := m.snap.Namespaces["echo-"+st]; ns != nil {
			if e := ns.Echoes[m.opts.Echo]; e != nil && e.Ready != "" {
				label += e.Ready + " "
			}
		}
		if i == m.focus {
			l.Add(s.Reverse, label)
		} else {
			l.Add(s.OpPaint(st), label)
		}
		l.Plain(" ")
	}
	l.Add(s.Dim, "tab/1-3 switch · f full width")
	return l.Fit(w)
}

// statusLines: the input (with its error), an action in flight, or the
// last action's result, wrapped to at most 3 lines; none if nothing to say.
func (m *Model) statusLines(w int) []string {
	s := m.styles
	wrap := func(p common.Paint, text string) []string {
		var out []string
		for _, l := range strings.Split(ansi.Hardwrap(text, w-1, true), "\n") {
			out = append(out, p.S(common.Fit(" "+l, w)))
			if len(out) == 3 {
				break
			}
		}
		return out
	}
	if m.mode != modeNormal {
		out := []string{common.Fit(" "+m.input.View(), w)}
		hint := "enter applies · esc cancels"
		if m.busy != "" {
			hint = m.busy
		}
		if m.inputEr != "" {
			out = append(wrap(s.Err, "✗ "+m.inputEr), out...)
			return out
		}
		return append([]string{s.Dim.S(common.Fit(" "+hint, w))}, out...)
	}
	switch {
	case m.busy != "":
		return wrap(s.Accent, m.busy)
	case m.status.err:
		return wrap(s.Err, "✗ "+m.status.text)
	case m.status.text != "":
		return wrap(s.OK, m.status.text)
	case m.opts.Hint != "":
		return wrap(s.Dim, m.opts.Hint)
	}
	return nil
}

// footer is the status line(s), the lesson line in a lesson, and the
// short help.
func (m *Model) footer(w int) []string {
	out := m.statusLines(w)
	switch {
	case m.opts.Guide != nil:
		// The lesson line takes the place of an empty status line.
		out = append(out, m.lessonLine(w))
	case len(out) == 0:
		out = []string{strings.Repeat(" ", w)}
	}
	if m.helpLine == "" || m.helpW != w || m.helpDark != m.styles.Dark {
		// The help line changes only with the width and the colours.
		m.help.SetWidth(w - 1)
		m.helpLine = common.Fit(" "+m.help.ShortHelpView(m.keys.ShortHelp()), w)
		m.helpW, m.helpDark = w, m.styles.Dark
	}
	return append(out, m.helpLine)
}

func (m *Model) helpBox(w, h int) []string {
	m.help.SetWidth(w - 4)
	body := strings.Split(m.help.FullHelpView(m.keys.FullHelp()), "\n")
	body = append([]string{""}, body...)
	body = append(body, "", m.styles.Dim.S("Edits apply to the Echo of the same name in all three namespaces at once, so the styles race fairly."),
		m.styles.Dim.S("? or esc closes this help."))
	return common.Box(m.styles.Bold.S("help"), 4, body, w, h, m.styles.Border)
}
