package common

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Width is the display width of plain text (no escape codes).
func Width(s string) int {
	// Fast path: most of the screen is ASCII.
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] < 0x20 {
			return ansi.StringWidth(s)
		}
	}
	return len(s)
}

// Line builds one screen line from painted segments, keeping its width.
type Line struct {
	b strings.Builder
	w int
}

// Add appends s painted with p.
func (l *Line) Add(p Paint, s string) *Line {
	l.b.WriteString(p.S(s))
	l.w += Width(s)
	return l
}

// Plain appends unpainted s.
func (l *Line) Plain(s string) *Line {
	l.b.WriteString(s)
	l.w += Width(s)
	return l
}

// Pad appends n spaces.
func (l *Line) Pad(n int) *Line {
	if n > 0 {
		l.b.WriteString(strings.Repeat(" ", n))
		l.w += n
	}
	return l
}

// Width is the display width so far.
func (l *Line) Width() int { return l.w }

// String is the line as built.
func (l *Line) String() string { return l.b.String() }

// Fit is the line cut or padded to exactly w columns.
func (l *Line) Fit(w int) string { return FitStyled(l.b.String(), l.w, w) }

// FitStyled cuts or pads s, whose display width is sw, to exactly w columns.
func FitStyled(s string, sw, w int) string {
	switch {
	case sw == w:
		return s
	case sw < w:
		return s + strings.Repeat(" ", w-sw)
	case w <= 0:
		return ""
	}
	t := ansi.Truncate(s, w, "…")
	if tw := ansi.StringWidth(t); tw < w {
		t += strings.Repeat(" ", w-tw)
	}
	return t
}

// Fit cuts or pads plain or styled s to exactly w columns.
func Fit(s string, w int) string { return FitStyled(s, ansi.StringWidth(s), w) }

// Box draws a frame of exactly w×h around body lines, with a title in the
// top edge and one column of padding on each side: body lines should be
// BoxInner(w) wide (they are cut or padded here if not). The frame is
// painted with border; titleW is the title's display width.
func Box(title string, titleW int, body []string, w, h int, border Paint) []string {
	return box(title, titleW, body, w, h, border, false)
}

// BoxFitted is Box for body lines already exactly BoxInner(w) wide (built
// with Line.Fit): they are not measured again, which is most of a frame's
// cost otherwise.
func BoxFitted(title string, titleW int, body []string, w, h int, border Paint) []string {
	return box(title, titleW, body, w, h, border, true)
}

func box(title string, titleW int, body []string, w, h int, border Paint, fitted bool) []string {
	if w < 4 || h < 2 {
		return nil
	}
	inner := w - 2
	out := make([]string, 0, h)
	top := "┌"
	if title != "" && titleW+3 <= inner {
		top += "─ "
		fill := inner - titleW - 3
		out = append(out, border.S(top)+title+border.S(" "+strings.Repeat("─", fill)+"┐"))
	} else {
		out = append(out, border.S(top+strings.Repeat("─", inner)+"┐"))
	}
	left, right := border.S("│")+" ", " "+border.S("│")
	blank := strings.Repeat(" ", inner-2)
	for i := 0; i < h-2; i++ {
		line := blank
		if i < len(body) {
			line = body[i]
			if !fitted {
				line = Fit(line, inner-2)
			}
		}
		out = append(out, left+line+right)
	}
	out = append(out, border.S("└"+strings.Repeat("─", inner)+"┘"))
	return out
}

// BoxInner is the width of the body lines of a Box w wide.
func BoxInner(w int) int { return w - 4 }

// JoinColumns places blocks of lines side by side. Each block's lines must
// already have that block's width; missing lines are padded with widths[i].
func JoinColumns(blocks [][]string, widths []int) []string {
	h := 0
	for _, b := range blocks {
		h = max(h, len(b))
	}
	out := make([]string, h)
	var sb strings.Builder
	for i := 0; i < h; i++ {
		sb.Reset()
		for j, b := range blocks {
			if i < len(b) {
				sb.WriteString(b[i])
			} else {
				sb.WriteString(strings.Repeat(" ", widths[j]))
			}
		}
		out[i] = sb.String()
	}
	return out
}
