package tui

import (
	"fmt"
	"strconv"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/pane"
)

// panes are the operator panes: three side by side on a wide screen, or
// the focused one under a strip naming the others. They own the keys that
// choose what is shown: focus, full width, API requests by verb.
type panes struct {
	order     []style.Style
	focus     int
	full      bool
	showVerbs bool
}

// focused is the style of the focused pane.
func (p *panes) focused() style.Style { return p.order[p.focus] }

// onKey handles the pane keys; ok is false for any other key.
func (p *panes) onKey(msg tea.KeyPressMsg, k *common.KeyMap) (ok bool) {
	n := len(p.order)
	switch {
	case key.Matches(msg, k.Next):
		p.focus = (p.focus + 1) % n
	case key.Matches(msg, k.Prev):
		p.focus = (p.focus + n - 1) % n
	case key.Matches(msg, k.Focus):
		if i, err := strconv.Atoi(msg.String()); err == nil && i >= 1 && i <= n {
			p.focus = i - 1
		}
	case key.Matches(msg, k.Full):
		p.full = !p.full
	case key.Matches(msg, k.Verbs):
		p.showVerbs = !p.showVerbs
	default:
		return false
	}
	return true
}

// minPaneW is the least width of a pane beside others: narrower, its
// lines are cut too much. Three panes stand side by side from 120 columns,
// four from 160.
const minPaneW = threeFrom / 3

// gridRowH is the height a row of a grid needs (a pane's usual body and
// its frame): panes in two rows are chosen only if both rows fit.
const gridRowH = 18

// columns is how many panes stand in a row at width w with h rows for the
// panes: all of them in one row if each gets minPaneW; else equal rows of
// fewer (four panes in two rows of two) if those rows fit in h; else 0,
// the focused pane alone under the strip.
func (p *panes) columns(w, h int) int {
	n := len(p.order)
	if p.full || n < 2 {
		return 0
	}
	for cols := min(n, w/minPaneW); cols >= 2; cols-- {
		rows := n / cols
		if n%cols != 0 {
			continue // a row with a gap reads as a missing pane
		}
		if rows == 1 || rows*gridRowH <= h {
			return cols
		}
	}
	return 0
}

// shown are the styles whose panes are drawn with cols panes a row.
func (p *panes) shown(cols int) []style.Style {
	if cols > 0 {
		return p.order
	}
	return []style.Style{p.focused()}
}

// data is what the pane of style st shows now, in ws's words (nil:
// English).
func (p *panes) data(f *feed, echo string, st style.Style, now time.Time, single bool, ws lessonview.Words) pane.Data {
	return pane.Data{
		Style:   st,
		Stats:   f.stats.Styles[st],
		NS:      f.namespace(st),
		Echo:    echo,
		Now:     now,
		Fresh:   f.fresh(st, now),
		Verbs:   p.showVerbs || (p.full && single),
		Focused: st == p.focused(),
		Summary: f.shown[st].sum,
		Words:   ws,
		// Before the operators start, their panes say so.
		Starting: f.stats.Startup.Starting(),
	}
}

// render draws the panes w wide, cols a row (0: the focused one alone),
// each row as tall as its tallest body but leaving at least room of the
// avail rows under them; ws are the panes' words (nil: English).
func (p *panes) render(f *feed, echo string, now time.Time, w, cols, avail, room int, s *common.Theme, ws lessonview.Words) []string {
	shown := p.shown(cols)
	per := max(cols, 1)
	rows := (len(shown) + per - 1) / per
	widths := make([]int, per)
	for i := range widths {
		widths[i] = w / per
		if i < w%per {
			widths[i]++
		}
	}
	var out []string
	left := avail - room
	for r := range rows {
		row := shown[r*per : min(len(shown), (r+1)*per)]
		bodies := make([][]string, len(row))
		tallest := 0
		for i, st := range row {
			bodies[i] = pane.Body(p.data(f, echo, st, now, len(shown) == 1, ws), common.BoxInner(widths[i]), s)
			tallest = max(tallest, len(bodies[i]))
		}
		// The rows share what is left: the last takes the rest.
		h := min(tallest+2, left/(rows-r))
		left -= h
		blocks := make([][]string, len(row))
		for i, st := range row {
			title := st.Traits().Title
			border := s.Border
			if st == p.focused() && len(shown) > 1 {
				title = "▶ " + title
				border = s.OpPaint(st)
			}
			blocks[i] = common.BoxFitted(s.OpTitle(st).S(title), common.Width(title), bodies[i], widths[i], h, border)
		}
		joined := common.JoinColumns(blocks, widths[:len(row)])
		if rows == 1 {
			return joined
		}
		out = append(out, joined...)
	}
	return out
}

// strip names the panes not shown on a narrow screen, with their status;
// ws are its words (nil: English).
func (p *panes) strip(f *feed, echo string, w int, s *common.Theme, ws lessonview.Words) string {
	l := &common.Line{}
	for i, st := range p.order {
		label := fmt.Sprintf(" %d %s ", i+1, st.Traits().Title)
		if ns := f.namespace(st); ns != nil {
			if e := ns.Echoes[echo]; e != nil && e.Ready != "" {
				label += e.Ready + " "
			}
		}
		if i == p.focus {
			l.Add(s.Reverse, label)
		} else {
			l.Add(s.OpPaint(st), label)
		}
		l.Plain(" ")
	}
	l.Add(s.Dim, ws.F("tab/1-%d switch · f full width", len(p.order)))
	return l.Fit(w)
}
