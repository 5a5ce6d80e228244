// Package common holds what every screen component shares: the styles (one
// struct, rebuilt when the terminal reports its background), the keymap and
// small layout helpers that compose lines without re-measuring them.
package common

import (
	"image/color"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/kkloud/rlab/operators/style"
)

// Paint is a style reduced to the escape codes around its text. Rendering
// through lipgloss measures and wraps on every call; the screen paints
// hundreds of short segments per frame and knows their widths already.
type Paint struct{ pre, post string }

// NewPaint captures the escape codes s puts around a text.
func NewPaint(s lipgloss.Style) Paint {
	const mark = "\x00"
	out := s.Render(mark)
	i := strings.Index(out, mark)
	if i < 0 {
		return Paint{}
	}
	return Paint{pre: out[:i], post: out[i+len(mark):]}
}

// S paints s.
func (p Paint) S(s string) string {
	if p.pre == "" || s == "" {
		return s
	}
	return p.pre + s + p.post
}

// Theme is the one set of styles of the screen. Colours are picked with
// lipgloss.LightDark so they read on light and dark backgrounds alike.
type Theme struct {
	Dark bool

	// Op is the colour of each operator style.
	Op map[style.Style]Paint
	// OpBold is the same, bold (pane titles, the active pipeline stage).
	OpBold map[style.Style]Paint

	// Own and OwnBold paint every student's own operator (`--operator`).
	Own, OwnBold Paint

	Text, Dim, Bold, OK, Warn, Err, Accent, Crown, Flash, Fresh Paint
	Border, Key, Desc, Reverse                                  Paint
}

// NewStyles returns the styles for a dark or a light background.
func NewTheme(dark bool) *Theme {
	ld := lipgloss.LightDark(dark)
	c := func(light, darkc string) color.Color { return ld(lipgloss.Color(light), lipgloss.Color(darkc)) }
	fg := func(light, darkc string) lipgloss.Style { return lipgloss.NewStyle().Foreground(c(light, darkc)) }
	s := &Theme{
		Dark:    dark,
		Op:      map[style.Style]Paint{},
		OpBold:  map[style.Style]Paint{},
		Text:    Paint{},
		Dim:     NewPaint(fg("#6C6C6C", "#8A8A8A")),
		Bold:    NewPaint(lipgloss.NewStyle().Bold(true)),
		OK:      NewPaint(fg("#007A33", "#5FD75F")),
		Warn:    NewPaint(fg("#AF5F00", "#FFAF00")),
		Err:     NewPaint(fg("#C00000", "#FF5F5F").Bold(true)),
		Accent:  NewPaint(fg("#0050A0", "#87AFFF").Bold(true)),
		Crown:   NewPaint(fg("#A07800", "#FFD75F").Bold(true)),
		Flash:   NewPaint(lipgloss.NewStyle().Foreground(c("#FFFFFF", "#000000")).Background(c("#C00000", "#FF8787")).Bold(true)),
		Fresh:   NewPaint(fg("#007A33", "#AFFF87").Bold(true)),
		Border:  NewPaint(fg("#9E9E9E", "#5F5F5F")),
		Key:     NewPaint(fg("#0050A0", "#87AFFF").Bold(true)),
		Desc:    NewPaint(fg("#6C6C6C", "#9E9E9E")),
		Reverse: NewPaint(lipgloss.NewStyle().Reverse(true).Bold(true)),
	}
	own := fg(style.OwnColour.Light, style.OwnColour.Dark)
	s.Own, s.OwnBold = NewPaint(own), NewPaint(own.Bold(true))
	for _, op := range style.All() {
		c := op.Traits().Colour
		st := fg(c.Light, c.Dark)
		s.Op[op] = NewPaint(st)
		s.OpBold[op] = NewPaint(st.Bold(true))
	}
	return s
}

// OpPaint is the paint of an operator style (Own for a student's), or
// Text for anything else.
func (s *Theme) OpPaint(st style.Style) Paint { return s.opPaint(st, s.Op, s.Own) }

// OpTitle is the bold paint of an operator style, for its pane's title.
func (s *Theme) OpTitle(st style.Style) Paint { return s.opPaint(st, s.OpBold, s.OwnBold) }

// opPaint is st's paint in builtin, own for a student's style, or Text.
func (s *Theme) opPaint(st style.Style, builtin map[style.Style]Paint, own Paint) Paint {
	if p, ok := builtin[st]; ok {
		return p
	}
	if st != "" && !st.Traits().Builtin {
		return own
	}
	return s.Text
}

// PlainStyles paints nothing: for tests and golden files of plain text.
func PlainTheme() *Theme {
	s := &Theme{Op: map[style.Style]Paint{}, OpBold: map[style.Style]Paint{}}
	return s
}
