package tui

import (
	"errors"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/lessonpanel"
	"github.com/kkloud/rlab/tui/timeline"
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

// lesson is the lesson followed on the screen (`rlab lesson start`): the
// Session's state, read once per frame, the lesson panel laid out from it,
// and the lesson list. It owns the lesson keys and, while open, every key
// of the list. With no Session it does nothing.
type lesson struct {
	session  Session
	st       lessonview.State
	panels   map[int]*lessonpanel.Panel // by width, laid out for panelKey
	panelKey panelKey
	listOpen bool
	list     lessonpanel.List
}

// panelKey is the state and colours the lesson panels were laid out for.
type panelKey struct {
	version uint64
	dark    bool
}

func newLesson(g Session) *lesson {
	l := &lesson{session: g}
	if g != nil {
		l.st = g.State()
	}
	return l
}

// on says whether a lesson is followed.
func (l *lesson) on() bool { return l.session != nil }

// poll reads the lesson's state; it says whether a new version came (a
// check passing is what the student waits for: draw it at once).
func (l *lesson) poll() bool {
	if l.session == nil {
		return false
	}
	st := l.session.State()
	if st.Version == l.st.Version {
		return false
	}
	l.st = st
	return true
}

// onStepKey: the key the current step names does what the step says, on
// every style it names, whatever pane has the focus (k in the leader
// lesson stops both Go leaders, not the focused pane's). It goes before
// the screen's own keys.
func (l *lesson) onStepKey(msg tea.KeyPressMsg) bool {
	if l.session == nil || l.listOpen || l.st.Key == "" || l.st.Done || l.st.Passed || msg.String() != l.st.Key {
		return false
	}
	if !l.session.Key() {
		return false
	}
	l.poll()
	return true
}

// ask opens the prompt that answers the step's question, with the answer
// given so far in it, or says why there is nothing to answer.
func (l *lesson) ask(c *controls) tea.Cmd {
	q := l.st.Predict
	w := l.st.Words // the prompts in the lesson's language
	switch {
	case q == nil || l.st.Done:
		c.say(w.T("this step asks no question"), true)
		return nil
	case l.st.Passed:
		c.say(w.T("the step passed already: a prediction comes before the act"), true)
		return nil
	}
	c.predict = func(n int) (string, error) {
		if n < 1 || n > len(q.Choices) {
			return "", errors.New(w.F("answer with a number from 1 to %d", len(q.Choices)))
		}
		if err := l.session.Predict(n); err != nil {
			return "", err
		}
		l.poll()
		return w.F("✓ you said: %s — now act, and see what the check measures", q.Choices[n-1]), nil
	}
	value := ""
	if n := l.st.Predicted.Choice; n > 0 {
		value = strconv.Itoa(n)
	}
	return c.open(modePredict, w.F("your prediction, 1 to %d: ", len(q.Choices)), value)
}

// onKey handles the lesson keys; ok is false for any other key. The Session
// returns at once: what it changed already is drawn now, the rest on a
// later frame.
func (l *lesson) onKey(msg tea.KeyPressMsg, k *common.KeyMap, s *common.Theme) (ok bool) {
	switch {
	case l.session == nil:
		return false // the lesson keys are off too
	case key.Matches(msg, k.LessonNext):
		l.session.Next()
	case key.Matches(msg, k.LessonBack):
		l.session.Back()
	case key.Matches(msg, k.LessonPlay):
		l.session.Play()
	case key.Matches(msg, k.Lessons):
		l.openList(k, s)
		return true
	default:
		return false
	}
	l.poll()
	return true
}

// openList opens the lesson list on the lesson followed.
func (l *lesson) openList(k *common.KeyMap, s *common.Theme) {
	v := lessonpanel.List{Current: l.st.Lesson, Words: l.st.Words}
	for i, e := range l.session.Lessons() {
		v.Entries = append(v.Entries, e)
		if e.Number == l.st.Lesson {
			v.Cursor = i
		}
	}
	h := &common.Line{}
	h.Add(s.Key, "↑/↓").Add(s.Desc, " "+l.st.Words.T("choose")).Add(s.Dim, " · ").
		Add(s.Key, "0-9").Add(s.Desc, " "+l.st.Words.T("number")).Add(s.Dim, " · ").
		Add(s.Key, k.Open.Help().Key).Add(s.Desc, " "+k.Open.Help().Desc).Add(s.Dim, " · ").
		Add(s.Key, k.Close.Help().Key).Add(s.Desc, " "+k.Close.Help().Desc)
	v.Keys, v.KeysW = h.String(), h.Width()
	l.list, l.listOpen = v, true
}

// onListKey: ↑/↓ or a number choose a lesson, enter opens it, esc (or l,
// or q) closes the list. Other keys do nothing while the list is open.
func (l *lesson) onListKey(msg tea.KeyPressMsg, k *common.KeyMap) {
	v := &l.list
	switch {
	case key.Matches(msg, k.Close):
		l.listOpen = false
	case key.Matches(msg, k.Up):
		v.Cursor, v.Typed = max(0, v.Cursor-1), ""
	case key.Matches(msg, k.Down):
		v.Cursor, v.Typed = max(0, min(len(v.Entries)-1, v.Cursor+1)), ""
	case key.Matches(msg, k.Open):
		l.openChosen()
	case msg.String() == "backspace":
		if v.Typed != "" {
			v.Typed = v.Typed[:len(v.Typed)-1]
		}
	default:
		if d := msg.String(); len(d) == 1 && d[0] >= '0' && d[0] <= '9' && len(v.Typed) < 3 {
			v.Typed = strings.TrimLeft(v.Typed+d, "0")
			n, _ := strconv.Atoi(v.Typed)
			for i, e := range v.Entries {
				if e.Number == n {
					v.Cursor = i
				}
			}
		}
	}
}

// openChosen opens the lesson typed, or else the one under the cursor.
func (l *lesson) openChosen() {
	v := &l.list
	n := 0
	switch {
	case v.Typed != "":
		n, _ = strconv.Atoi(v.Typed) // digits only
	case v.Cursor < len(v.Entries):
		n = v.Entries[v.Cursor].Number
	default:
		return
	}
	if err := l.session.Open(n); err != nil {
		// Shown as the Session worded it, the number typed kept above it.
		v.Err = err.Error()
		return
	}
	l.listOpen = false
	l.poll()
}

// panel is the panel laid out for width w, kept until the state or the
// colours change (a frame may ask for two widths: see area).
func (l *lesson) panel(w int, s *common.Theme) *lessonpanel.Panel {
	if k := (panelKey{version: l.st.Version, dark: s.Dark}); l.panels == nil || l.panelKey != k || len(l.panels) > 4 {
		l.panels, l.panelKey = map[int]*lessonpanel.Panel{}, k
	}
	p := l.panels[w]
	if p == nil {
		p = lessonpanel.New(l.st, w, s)
		l.panels[w] = p
	}
	return p
}

// area is the room under the panes in a lesson, exactly w×h: the lesson
// list if open, else the lesson panel and the timeline.
func (l *lesson) area(w, h int, s *common.Theme, tl *timeline.Model) []string {
	if l.listOpen {
		return l.list.Render(w, h, s)
	}
	p := l.panel(w, s)
	if w >= besideFrom && p.Want() > h*2/3 {
		pw := w / 2
		tw := w - pw
		return common.JoinColumns([][]string{tl.Render(tw, h, s), l.panel(pw, s).Render(h)}, []int{tw, pw})
	}
	// The panel takes what it needs up to two thirds, the timeline the rest;
	// rows short, the panel has its least and the timeline what is left.
	ph := min(p.Want(), max(lessonpanel.MinHeight, h*2/3), h-tlMin)
	ph = max(ph, min(lessonpanel.MinHeight, h, p.Want()))
	if h-ph < tlMin {
		ph = h
	}
	out := tl.Render(w, h-ph, s)
	return append(out, p.Render(ph)...)
}

// line is the footer's lesson line: where the student is, and the lesson
// keys.
func (l *lesson) line(w int, s *common.Theme, k *common.KeyMap) string {
	keys := &common.Line{}
	bindings := k.LessonKeys()
	if l.st.Predict != nil && !l.st.Passed && !l.st.Done {
		bindings = append(bindings, k.LessonPredict) // a question to answer
	}
	for i, b := range bindings {
		if i > 0 {
			keys.Add(s.Dim, " · ")
		}
		keys.Add(s.Key, b.Help().Key).Add(s.Desc, " "+b.Help().Desc)
	}
	keys.Plain(" ")
	return lessonpanel.Line(l.st, keys.String(), keys.Width(), w, s)
}
