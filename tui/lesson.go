package tui

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/lessonpanel"
)

// Layout of the lesson panel.
const (
	// besideFrom: from this width, when the panel under the timeline would
	// be cut or leave it less than a third of the room, the panel stands
	// beside the timeline, both as tall as the room under the panes.
	// Otherwise it sits under the timeline, which shrinks to make room
	// (long command lines wrap less at full width).
	besideFrom = 180
	// tlMin: the timeline keeps at least this many rows (two events) above
	// the panel, or gives them all to it: one event line is not worth the
	// command lines it would hide (100x30).
	tlMin = 4
)

// panelKey is the state and colours the lesson panels were laid out for.
type panelKey struct {
	version uint64
	dark    bool
}

// pollGuide reads the lesson's state; a new version is drawn at once
// (a check passing is what the student waits for).
func (m *Model) pollGuide() {
	if m.opts.Guide == nil {
		return
	}
	if st := m.opts.Guide.State(); st.Version != m.guide.Version {
		m.guide = st
		m.dirty, m.urgent = true, true
	}
}

// lessonPanel is the panel laid out for width w, kept until the state or
// the colours change (a frame may ask for two widths: see lessonArea).
func (m *Model) lessonPanel(w int) *lessonpanel.Panel {
	if k := (panelKey{version: m.guide.Version, dark: m.styles.Dark}); m.panels == nil || m.panelKey != k || len(m.panels) > 4 {
		m.panels, m.panelKey = map[int]*lessonpanel.Panel{}, k
	}
	p := m.panels[w]
	if p == nil {
		p = lessonpanel.New(m.guide, w, m.styles)
		m.panels[w] = p
	}
	return p
}

// lessonArea is the room under the panes in a lesson, exactly w×h: the
// lesson list if open, else the lesson panel and the timeline.
func (m *Model) lessonArea(w, h int) []string {
	s := m.styles
	if m.listOpen {
		return m.list.Render(w, h, s)
	}
	p := m.lessonPanel(w)
	if w >= besideFrom && p.Want() > h*2/3 {
		pw := w / 2
		tw := w - pw
		return common.JoinColumns([][]string{m.tl.Render(tw, h, s), m.lessonPanel(pw).Render(h)}, []int{tw, pw})
	}
	// The panel takes what it needs up to two thirds, the timeline the rest;
	// rows short, the panel has its least and the timeline what is left.
	ph := min(p.Want(), max(lessonpanel.MinHeight, h*2/3), h-tlMin)
	ph = max(ph, min(lessonpanel.MinHeight, h, p.Want()))
	if h-ph < tlMin {
		ph = h
	}
	out := m.tl.Render(w, h-ph, s)
	return append(out, p.Render(ph)...)
}

// lessonLine is the footer's lesson line: where the student is, and the
// lesson keys.
func (m *Model) lessonLine(w int) string {
	s := m.styles
	l := &common.Line{}
	for i, b := range m.keys.LessonKeys() {
		if i > 0 {
			l.Add(s.Dim, " · ")
		}
		l.Add(s.Key, b.Help().Key).Add(s.Desc, " "+b.Help().Desc)
	}
	l.Plain(" ")
	return lessonpanel.Line(m.guide, l.String(), l.Width(), w, s)
}

// openList opens the lesson list on the lesson followed.
func (m *Model) openList() {
	l := lessonpanel.List{Current: m.guide.Lesson}
	for i, e := range m.opts.Guide.Lessons() {
		l.Entries = append(l.Entries, e)
		if e.Number == m.guide.Lesson {
			l.Cursor = i
		}
	}
	k := m.keys
	h := &common.Line{}
	h.Add(m.styles.Key, "↑/↓").Add(m.styles.Desc, " choose").Add(m.styles.Dim, " · ").
		Add(m.styles.Key, "0-9").Add(m.styles.Desc, " number").Add(m.styles.Dim, " · ").
		Add(m.styles.Key, k.Open.Help().Key).Add(m.styles.Desc, " "+k.Open.Help().Desc).Add(m.styles.Dim, " · ").
		Add(m.styles.Key, k.Close.Help().Key).Add(m.styles.Desc, " "+k.Close.Help().Desc)
	l.Keys, l.KeysW = h.String(), h.Width()
	m.list, m.listOpen = l, true
}

// onListKey: ↑/↓ or a number choose a lesson, enter opens it, esc (or l,
// or q) closes the list; ctrl+c still quits. Other keys do nothing while
// the list is open.
func (m *Model) onListKey(msg tea.KeyPressMsg) tea.Cmd {
	k, l := m.keys, &m.list
	switch {
	case msg.String() == "ctrl+c":
		return m.opts.Quit()
	case key.Matches(msg, k.Close):
		m.listOpen = false
	case key.Matches(msg, k.Up):
		l.Cursor, l.Typed = max(0, l.Cursor-1), ""
	case key.Matches(msg, k.Down):
		l.Cursor, l.Typed = max(0, min(len(l.Entries)-1, l.Cursor+1)), ""
	case key.Matches(msg, k.Open):
		n := 0
		switch {
		case l.Typed != "":
			n, _ = strconv.Atoi(l.Typed) // digits only
		case l.Cursor < len(l.Entries):
			n = l.Entries[l.Cursor].Number
		default:
			return nil
		}
		if err := m.opts.Guide.Open(n); err != nil {
			// Shown as the Guide worded it, the number typed kept above it.
			l.Err = err.Error()
			return nil
		}
		m.listOpen = false
		m.pollGuide()
	case msg.String() == "backspace":
		if l.Typed != "" {
			l.Typed = l.Typed[:len(l.Typed)-1]
		}
	default:
		if d := msg.String(); len(d) == 1 && d[0] >= '0' && d[0] <= '9' && len(l.Typed) < 3 {
			l.Typed = strings.TrimLeft(l.Typed+d, "0")
			n, _ := strconv.Atoi(l.Typed)
			for i, e := range l.Entries {
				if e.Number == n {
					l.Cursor = i
				}
			}
		}
	}
	return nil
}
