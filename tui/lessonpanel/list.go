package lessonpanel

import (
	"fmt"
	"strings"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/tui/common"
)

// Line is the lesson line of the footer: the heading at the left, cut if
// need be so that the keys (painted, keysW wide) keep their place at the
// right.
func Line(d lessonview.State, keys string, keysW, w int, s *common.Theme) string {
	l := &common.Line{}
	ws := d.Words
	l.Plain(" ").Add(s.Accent, ws.F("lesson %d/%d", d.Lesson, d.Count)).Add(s.Dim, " · ").Add(s.Bold, d.Title)
	switch {
	case d.Done:
		l.Add(s.Dim, " · ").Add(s.OK, ws.T("done"))
	case d.Steps > 0:
		l.Add(s.Dim, " · ").Plain(ws.F("step %d of %d", d.Step+1, d.Steps))
		if d.StepTitle != "" {
			l.Plain(": " + d.StepTitle)
		}
	}
	left := w - keysW - 3
	if left < 20 {
		return l.Fit(w)
	}
	return common.FitStyled(l.String(), l.Width(), left) + "   " + keys
}

// List is the lesson list, opened over the lower part of the screen.
type List struct {
	Entries []lessonview.Entry
	Cursor  int    // index into Entries
	Current int    // the number of the lesson followed now
	Typed   string // the lesson number typed so far
	Err     string // why the last lesson chosen did not open
	// Keys is the keys' help line, painted, KeysW wide.
	Keys  string
	KeysW int
	// Words are the screen's words in the course's language.
	Words lessonview.Words
}

// Render draws the list in a frame of exactly w×h, scrolled so that the
// cursor shows.
func (v *List) Render(w, h int, s *common.Theme) []string {
	iw := common.BoxInner(w)
	if iw < 10 || h < 3 {
		return common.Box("", 0, nil, w, h, s.Accent)
	}
	var foot []string
	prompt := &common.Line{}
	prompt.Add(s.Bold, v.Words.T("open lesson: ")).Plain(v.Typed).Add(s.Reverse, " ")
	prompt.Pad(max(2, iw-prompt.Width()-v.KeysW))
	foot = append(foot, common.FitStyled(prompt.String()+v.Keys, prompt.Width()+v.KeysW, iw))
	if v.Err != "" {
		for _, l := range marked("✗ ", s.Err, s.Err, v.Err, iw) {
			foot = append(foot, l)
			if len(foot) == 3 {
				break
			}
		}
	}
	rows := max(1, h-2-len(foot)-1) // a blank line above the prompt
	start := 0
	if v.Cursor >= rows {
		start = v.Cursor - rows + 1
	}
	titleW := 0
	for _, e := range v.Entries {
		titleW = max(titleW, common.Width(e.Title))
	}
	titleW = min(titleW, max(10, iw-40))
	var body []string
	for i := start; i < len(v.Entries) && len(body) < rows; i++ {
		e := v.Entries[i]
		mark := "  "
		if i == v.Cursor {
			mark = "▶ "
		}
		steps := v.Words.F("%d steps", e.Steps)
		if e.Steps == 1 {
			steps = v.Words.T("1 step")
		}
		row := fmt.Sprintf("%s%2d  %s  %s", mark, e.Number, common.Fit(e.Title, titleW), common.Fit(steps, max(8, common.Width(steps))))
		if e.Where != "" {
			row += "  " + e.Where
		}
		if e.Number == v.Current {
			row += "  " + v.Words.T("← now")
		}
		p := s.Text
		switch {
		case i == v.Cursor:
			p = s.Reverse
		case e.Done:
			p = s.OK
		}
		body = append(body, fitted(p, row, iw))
	}
	for len(body) < h-2-len(foot) {
		body = append(body, strings.Repeat(" ", iw))
	}
	body = append(body, foot...)
	title := v.Words.F("lessons · %d", len(v.Entries))
	if start > 0 || start+rows < len(v.Entries) {
		title += v.Words.F(" · %d-%d shown", start+1, min(len(v.Entries), start+rows))
	}
	return common.BoxFitted(s.Bold.S(title), common.Width(title), body, w, h, s.Accent)
}
