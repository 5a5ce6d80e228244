package tui

import (
	"fmt"
	"strconv"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

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

// three says whether the panes stand side by side at width w.
func (p *panes) three(w int) bool { return !p.full && w >= threeFrom && len(p.order) > 1 }

// shown are the styles whose panes are drawn at width w.
func (p *panes) shown(w int) []style.Style {
	if p.three(w) {
		return p.order
	}
	return []style.Style{p.focused()}
}

// data is what the pane of style st shows now.
func (p *panes) data(f *feed, echo string, st style.Style, now time.Time, single bool) pane.Data {
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
	}
}

// render draws the panes w wide, as tall as the tallest body but leaving
// at least room of the avail rows under them.
func (p *panes) render(f *feed, echo string, now time.Time, w, avail, room int, s *common.Styles) []string {
	shown := p.shown(w)
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
		bodies[i] = pane.Body(p.data(f, echo, st, now, len(shown) == 1), common.BoxInner(widths[i]), s)
		tallest = max(tallest, len(bodies[i]))
	}
	h := min(tallest+2, avail-room)
	blocks := make([][]string, len(shown))
	for i, st := range shown {
		title := st.Title()
		border := s.Border
		if st == p.focused() && len(shown) > 1 {
			title = "▶ " + title
			border = s.OpPaint(st)
		}
		blocks[i] = common.BoxFitted(s.OpTitle(st).S(title), common.Width(title), bodies[i], widths[i], h, border)
	}
	return common.JoinColumns(blocks, widths)
}

// strip names the panes not shown on a narrow screen, with their status.
func (p *panes) strip(f *feed, echo string, w int, s *common.Styles) string {
	l := &common.Line{}
	for i, st := range p.order {
		label := fmt.Sprintf(" %d %s ", i+1, st.Title())
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
	l.Add(s.Dim, "tab/1-3 switch · f full width")
	return l.Fit(w)
}
