// Package lessonpanel draws the lesson followed on the screen: the step's
// prose, what to do (the kubectl command, the key, a note), and its check as
// it stands, fitted to the rows the screen can spare; the lesson line of the
// footer; and the lesson list.
package lessonpanel

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/tui/common"
)

// Heading is "lesson 3/10 · Drift repair · step 2 of 4: delete …", the
// panel's title and the start of the lesson line.
func Heading(d lessonview.State) string {
	w := d.Words
	h := w.F("lesson %d/%d · %s", d.Lesson, d.Count, d.Title)
	switch {
	case d.Done:
		return h + " · " + w.T("done")
	case d.Steps > 0:
		h += " · " + w.F("step %d of %d", d.Step+1, d.Steps)
		if d.StepTitle != "" {
			h += ": " + d.StepTitle
		}
	}
	return h
}

// MinHeight is the fewest rows the panel is given (borders included): the
// check and the first line of what to do.
const MinHeight = 8

// Panel is the panel laid out for one width; its height is chosen after
// (Want says what it would take).
type Panel struct {
	d      lessonview.State
	w      int
	s      *common.Theme
	blocks []block // in display order: prose, the question, what to do, the check
}

// block is one section of the panel; when rows are short it keeps its
// first lines, at least min, and says how many more it has.
type block struct {
	lines []string // fitted to the inner width, painted
	min   int
	prio  int // lower first
}

// New lays the panel out for a box w wide.
func New(d lessonview.State, w int, s *common.Theme) *Panel {
	iw := common.BoxInner(w)
	p := &Panel{d: d, w: w, s: s}
	if iw < 10 {
		return p
	}
	check, playing := checkLines(d, iw, s)
	if d.Done {
		// The last step's prose and action are behind the student now.
		p.blocks = []block{{lines: check, min: len(check), prio: 0}}
		return p
	}
	var text []string
	for _, par := range reflow(d.Text) {
		text = append(text, wrap(s.Text, par, iw)...)
	}
	do := doLines(d, iw, s)
	ask := askLines(d, iw, s)
	// The question and its choices: nothing to answer without them. Once
	// passed, the outcome comes first: the question and the command are
	// behind the student.
	askMin, doMin := min(len(ask), 4), 3
	if d.Passed {
		askMin, doMin = 0, 1
	}
	p.blocks = []block{
		{lines: text, min: 0, prio: 2},
		{lines: ask, min: askMin, prio: 1},
		{lines: do, min: doMin, prio: 1},          // the first command line, at least
		{lines: check, min: playing + 1, prio: 0}, // the play's outcome and the check's first line
	}
	return p
}

// Want is the rows the panel takes to show everything, borders included.
func (p *Panel) Want() int {
	n, used := 0, 0
	for _, b := range p.blocks {
		if len(b.lines) > 0 {
			n += len(b.lines)
			used++
		}
	}
	return n + max(0, used-1) + 2 // a blank line between blocks
}

// Render draws the panel, frame included, exactly w×h. Rows short, the
// check is kept whole first, then what to do, then the prose; a block cut
// ends with how many lines it has more (a line cut mid-sentence would read
// as the whole).
func (p *Panel) Render(h int) []string {
	s := p.s
	title := Heading(p.d)
	iw := common.BoxInner(p.w)
	if common.Width(title) > iw-2 {
		title = ansi.Truncate(title, max(0, iw-2), "…")
	}
	titleW := common.Width(title)
	body := p.fit(max(0, h-2), iw)
	return common.BoxFitted(s.Bold.S(title), titleW, body, p.w, h, s.Accent)
}

func (p *Panel) fit(rows, iw int) []string {
	give := make([]int, len(p.blocks))
	left := rows
	order := make([]int, 0, len(p.blocks))
	for prio := 0; prio <= 2; prio++ {
		for i, b := range p.blocks {
			if b.prio == prio {
				order = append(order, i)
			}
		}
	}
	for _, i := range order { // first the least each needs
		g := min(p.blocks[i].min, len(p.blocks[i].lines), left)
		give[i], left = g, left-g
	}
	for _, i := range order { // then the rest, by priority
		g := min(len(p.blocks[i].lines)-give[i], left)
		give[i], left = give[i]+g, left-g
	}
	blank := strings.Repeat(" ", iw)
	var out []string
	for i, b := range p.blocks {
		if give[i] == 0 {
			continue
		}
		if len(out) > 0 && left > 0 {
			out = append(out, blank)
			left--
		}
		g := give[i]
		switch {
		case g == len(b.lines), b.prio == 0:
			// Whole, or the check's first lines: better than a count.
			out = append(out, b.lines[:g]...)
		default:
			out = append(out, b.lines[:g-1]...)
			more := p.d.Words.F("… %d more lines (a taller terminal shows them)", len(b.lines)-g+1)
			out = append(out, fitted(p.s.Dim, more, iw))
		}
	}
	return out
}

// fitted is text fitted to w columns and painted.
func fitted(p common.Paint, text string, w int) string {
	return p.S(common.Fit(text, w))
}

// doLines: what the student is asked to do. The kubectl command is shown
// as written, line for line.
func doLines(d lessonview.State, iw int, st *common.Theme) []string {
	var out []string
	w := d.Words
	env := w.T(`in another terminal (after eval "$(rlab env)")`)
	switch {
	case d.Key != "" && d.Kubectl != "":
		out = append(out, marked("▸ ", st.Accent, st.Text, w.F("press %s on this screen, or %s:", d.Key, env), iw)...)
	case d.Key != "":
		out = append(out, marked("▸ ", st.Accent, st.Text, w.F("press %s on this screen", d.Key), iw)...)
	case d.Kubectl != "":
		out = append(out, marked("▸ ", st.Accent, st.Text, env+":", iw)...)
	}
	if d.Kubectl != "" {
		for _, l := range strings.Split(strings.TrimRight(d.Kubectl, "\n"), "\n") {
			for _, part := range shellWrap(strings.TrimRight(l, " "), iw-4) {
				out = append(out, fitted(st.Bold, "    "+part, iw))
			}
		}
	}
	if d.Note != "" {
		for _, par := range reflow(d.Note) {
			if len(out) == 0 {
				out = append(out, marked("▸ ", st.Accent, st.Dim, par, iw)...)
				continue
			}
			out = append(out, marked("  ", st.Dim, st.Dim, par, iw)...)
		}
	}
	return out
}

// askLines: the step's question, before the check passes, with how to
// answer (or the answer given) and its choices numbered; once it passed,
// the question alone if answered (the check's lines say the rest), else
// nothing.
func askLines(d lessonview.State, iw int, st *common.Theme) []string {
	q := d.Predict
	answered := q != nil && d.Predicted.Choice > 0 && d.Predicted.Choice <= len(q.Choices)
	switch {
	case q == nil || d.Done || d.Passed && !answered:
		return nil
	case d.Passed:
		return marked("? ", st.Accent, st.Text, q.Question, iw)
	}
	how := "  " + d.Words.T("(y: your prediction, before you act)")
	if answered {
		how = "  " + d.Words.F("you said: %s (y changes it)", q.Choices[d.Predicted.Choice-1])
	}
	out := marked("? ", st.Accent, st.Bold, q.Question+how, iw)
	// As many choices a line as fit, none broken inside.
	line := ""
	for i, c := range q.Choices {
		c = fmt.Sprintf("%d %s", i+1, c)
		if line != "" && common.Width(line+"   "+c) > iw-2 {
			out = append(out, marked("  ", st.Text, st.Text, line, iw)...)
			line = ""
		}
		if line != "" {
			line += "   "
		}
		line += c
	}
	return append(out, marked("  ", st.Text, st.Text, line, iw)...)
}

// checkLines: the play under way or failed, the check (waiting, passed),
// what it saw, and the hint; playing is how many lines the play takes.
func checkLines(d lessonview.State, iw int, st *common.Theme) (out []string, playing int) {
	w := d.Words
	switch {
	case d.PlayErr != "":
		out = append(out, marked("✗ ", st.Err, st.Err, d.PlayErr, iw)...) // worded by the Session
	case d.Playing:
		out = append(out, marked("▶ ", st.Accent, st.Accent, w.T("playing… autoplay performs this step's action"), iw)...)
	}
	playing = len(out)
	switch {
	case d.Done:
		out = append(out, marked("✓ ", st.OK, st.OK, w.T("lesson done — l for the next lesson"), iw)...)
	case d.Waiting == "":
		out = append(out, marked("· ", st.Dim, st.Dim, w.T("nothing to check in this step: n goes on"), iw)...)
	case d.Passed:
		// The step stays until the student moves on.
		lead := w.T("passed — n for the next step: ")
		out = append(out, marked("✓ ", st.OK, st.OK, lead+hang(lead, d.Waiting), iw)...)
	default:
		lead := w.T("waiting for: ")
		out = append(out, marked("… ", st.Warn, st.Text, lead+hang(lead, d.Waiting), iw)...)
	}
	// Once passed, a question answered puts the answer beside the detail;
	// the verdict first, which rows cut last.
	if said := d.Predict.SaidIn(w, d.Predicted); said != "" {
		switch v := d.Predict.VerdictIn(w, d.Predicted); {
		case v == "":
		case *d.Predicted.Right:
			out = append(out, marked("✓ ", st.OK, st.OK, v, iw)...)
		default:
			out = append(out, marked("✗ ", st.Warn, st.Warn, v, iw)...)
		}
		out = append(out, marked("  ", st.Dim, st.Text, said, iw)...)
	} else if d.Detail != "" {
		out = append(out, marked("  ", st.Dim, st.Dim, d.Detail, iw)...)
	}
	if d.Hint != "" && !d.Passed && !d.Done {
		for i, par := range reflow(d.Hint) {
			if i == 0 {
				par = w.T("hint: ") + par
			}
			out = append(out, marked("  ", st.Accent, st.Accent, par, iw)...)
		}
	}
	return out, playing
}

// hang indents the lines of text after the first by the width of lead,
// so that each condition starts under the first.
func hang(lead, text string) string {
	return strings.ReplaceAll(text, "\n", "\n"+strings.Repeat(" ", ansi.StringWidth(lead)))
}

// marked wraps text behind a two-column marker; the lines after the first
// are indented as far.
func marked(mark string, mp, tp common.Paint, text string, iw int) []string {
	lines := wrap(tp, text, iw-2)
	for i, l := range lines {
		m := "  "
		if i == 0 {
			m = mp.S(mark)
		}
		lines[i] = m + l
	}
	return lines
}

// wrap word-wraps plain text to w columns, each line painted and padded to
// exactly w.
func wrap(p common.Paint, text string, w int) []string {
	if w <= 0 {
		return nil
	}
	var out []string
	for _, l := range strings.Split(ansi.Wrap(text, w, ""), "\n") {
		out = append(out, fitted(p, strings.TrimRight(l, " "), w))
	}
	return out
}

// reflow joins the lines of each paragraph (lesson files wrap their prose
// near 72 columns) so that it wraps at the panel's width. A blank line ends
// a paragraph; a line that starts indented or with a list marker keeps its
// break.
func reflow(text string) []string {
	var out []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, " "))
			cur = nil
		}
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case t == "":
			flush()
			if i > 0 && len(out) > 0 {
				out = append(out, "")
			}
			continue
		case strings.HasPrefix(l, " "), strings.HasPrefix(t, "- "), strings.HasPrefix(t, "* "), strings.HasPrefix(t, "• "):
			flush()
			cur = append(cur, strings.TrimRight(l, " "))
			continue
		}
		cur = append(cur, t)
	}
	flush()
	return out
}

// shellWrap breaks a command line wider than w at a space, ending each
// broken part with " \" so that the pieces, copied, still make one shell
// command (outside quotes); the continuation is indented by two. A line
// with no space to break at is cut hard.
func shellWrap(l string, w int) []string {
	if w < 8 || common.Width(l) <= w {
		return []string{l}
	}
	var out []string
	indent := ""
	for common.Width(indent+l) > w {
		room := w - 2 - len(indent) // for " \"
		head := ansi.Truncate(l, room, "")
		cut := strings.LastIndex(head, " ")
		if cut <= leading(head) {
			cut = len(head)
		}
		out = append(out, indent+strings.TrimRight(l[:cut], " ")+" \\")
		l = strings.TrimLeft(l[cut:], " ")
		indent = strings.Repeat(" ", min(leading(out[0])+2, w/2))
	}
	return append(out, indent+l)
}

func leading(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
