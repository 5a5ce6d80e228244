package tui

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
)

// term is as much of a terminal as Screen uses: cursor moves, erasing a
// line, text (styles dropped), and the cursor's visibility.
type term struct {
	w, h    int
	cells   [][]string
	x, y    int
	visible bool
}

func newTerm(w, h int) *term {
	t := &term{w: w, h: h, visible: true}
	for range h {
		t.cells = append(t.cells, blank(w))
	}
	return t
}

func blank(w int) []string { return strings.Split(strings.Repeat(" ", w), "") }

var seq = regexp.MustCompile(`^\x1b\[(\??)([0-9;]*)([A-Za-z])`)

func (t *term) write(p string) {
	for len(p) > 0 {
		if m := seq.FindStringSubmatch(p); m != nil {
			p = p[len(m[0]):]
			args := strings.Split(m[2], ";")
			switch m[1] + m[3] {
			case "H":
				t.x, t.y = 0, 0
				if len(args) == 2 {
					t.y, _ = strconv.Atoi(args[0])
					t.x, _ = strconv.Atoi(args[1])
					t.y, t.x = t.y-1, t.x-1
				}
			case "J":
				for y := range t.cells {
					t.cells[y] = blank(t.w)
				}
			case "K":
				from := min(t.x, t.w-1) // past the last cell the cursor waits on it: EL erases it
				if m[2] == "2" {
					from = 0
				}
				for x := from; x < t.w; x++ {
					t.cells[t.y][x] = " "
				}
			case "?h", "?l":
				if m[2] == "25" {
					t.visible = m[3] == "h"
				}
			}
			continue
		}
		g, w := ansi.FirstGraphemeCluster(p, ansi.GraphemeWidth)
		p = p[len(g):]
		if t.x+w > t.w { // autowrap, as a terminal does: onto the next line, scrolling at the bottom
			t.x, t.y = 0, t.y+1
			if t.y == t.h {
				t.cells, t.y = append(t.cells[1:], blank(t.w)), t.h-1
			}
		}
		t.cells[t.y][t.x] = g
		for i := 1; i < w; i++ {
			t.cells[t.y][t.x+i] = ""
		}
		t.x += w
	}
}

func (t *term) String() string {
	var lines []string
	for _, l := range t.cells {
		lines = append(lines, strings.Join(l, ""))
	}
	return strings.Join(lines, "\n")
}

// TestScreen: the terminal shows each frame, only the lines that changed
// are written, nothing is drawn before Bubble Tea entered the alternate
// screen or after it left, and whatever Bubble Tea writes (an erase on a
// resize) is followed by the whole frame.
func TestScreen(t *testing.T) {
	const w, h = 20, 4
	style := func(s string) string { return "\x1b[1;31m" + s + "\x1b[m" }
	frame := func(lines ...string) string {
		for i, l := range lines {
			lines[i] = l + strings.Repeat(" ", w-ansi.StringWidth(l))
		}
		return strings.Join(lines, "\n")
	}
	var out bytes.Buffer
	s := NewScreen(&out)
	s.SetProfile(colorprofile.TrueColor)
	tm := newTerm(w, h)
	apply := func() {
		tm.write(out.String())
		out.Reset()
	}
	want := func(what string, lines ...string) {
		t.Helper()
		apply()
		if got := tm.String(); got != strings.Join(lines, "\n") {
			t.Errorf("%s: the terminal shows\n%s\nwant\n%s", what, got, strings.Join(lines, "\n"))
		}
	}
	pad := func(l string) string { return l + strings.Repeat(" ", w-ansi.StringWidth(l)) }
	full := "help" + strings.Repeat(" ", w-5) + "?" // its last cell is not blank
	empty := pad("")

	first := frame("rlab "+style("00:01"), "pane 1", "pane 2", full)
	s.Draw(first, nil, w, h)
	if out.Len() != 0 {
		t.Fatalf("drawn before Bubble Tea entered the alternate screen: %q", out.String())
	}
	// Bubble Tea's first output: the alternate screen, its one blank cell.
	if _, err := s.Output().Write([]byte(ansi.SetModeAltScreenSaveCursor + ansi.EraseEntireScreen + " ")); err != nil {
		t.Fatal(err)
	}
	want("the first frame, once in the alternate screen", pad("rlab 00:01"), pad("pane 1"), pad("pane 2"), full)

	tests := []struct {
		what  string
		frame string
		lines int // written
		want  []string
	}{
		{"the clock ticks", frame("rlab "+style("00:02"), "pane 1", "pane 2", full), 1,
			[]string{pad("rlab 00:02"), pad("pane 1"), pad("pane 2"), full}},
		{"nothing changed", frame("rlab "+style("00:02"), "pane 1", "pane 2", full), 0,
			[]string{pad("rlab 00:02"), pad("pane 1"), pad("pane 2"), full}},
		{"a shorter line, a wide one", "rlab 00:03\npane 一二\n" + pad("pane 2") + "\nhelp", 3,
			[]string{pad("rlab 00:03"), pad("pane 一二"), pad("pane 2"), pad("help")}},
		{"fewer lines", "rlab 00:04\n" + pad("x"), 4, []string{pad("rlab 00:04"), pad("x"), empty, empty}},
	}
	for _, tt := range tests {
		before := s.Lines
		s.Draw(tt.frame, nil, w, h)
		if got := s.Lines - before; got != tt.lines {
			t.Errorf("%s: %d lines written, want %d", tt.what, got, tt.lines)
		}
		want(tt.what, tt.want...)
	}

	// A resize: Bubble Tea erases the screen after the new frame is drawn;
	// the frame is drawn again over it.
	s.Draw(frame("rlab 00:05", "a", "b", "c"), nil, w, h)
	if _, err := s.Output().Write([]byte(ansi.CursorHomePosition + ansi.EraseEntireScreen)); err != nil {
		t.Fatal(err)
	}
	want("after Bubble Tea's erase", pad("rlab 00:05"), pad("a"), pad("b"), pad("c"))

	// A line wider than the terminal is cut at its edge, not wrapped over
	// the next (which did not change, so is not written again).
	s.Draw(frame("rlab 00:05")+"\n"+strings.Repeat("x", w+5)+"\n"+frame("b", "c"), nil, w, h)
	want("a line too wide", pad("rlab 00:05"), strings.Repeat("x", w), pad("b"), pad("c"))

	// The cursor, when a view asks for it.
	s.Draw(frame("rlab 00:05", "a", "b", "c"), tea.NewCursor(3, 2), w, h)
	apply()
	if !tm.visible || tm.x != 3 || tm.y != 2 {
		t.Errorf("cursor at %d,%d visible %v, want 3,2 visible", tm.x, tm.y, tm.visible)
	}
	s.Draw(frame("rlab 00:06", "a", "b", "c"), nil, w, h)
	apply()
	if tm.visible {
		t.Error("the cursor is still shown after the view stopped asking for it")
	}

	// Bubble Tea leaves the alternate screen: nothing more is drawn.
	if _, err := s.Output().Write([]byte(ansi.ResetModeAltScreenSaveCursor)); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	s.Draw(frame("rlab 00:07", "a", "b", "c"), nil, w, h)
	if out.Len() != 0 {
		t.Errorf("drawn after Bubble Tea left the alternate screen: %q", out.String())
	}
}

// TestScreenColours: the frame's colours are fitted to the terminal's
// profile, as Bubble Tea's renderer fitted them (NO_COLOR, 256 colours).
func TestScreenColours(t *testing.T) {
	red := "\x1b[1;38;2;255;0;0mred\x1b[m"
	tests := []struct {
		profile   colorprofile.Profile
		want, not []string
	}{
		{colorprofile.TrueColor, []string{"38;2;255;0;0"}, nil},
		{colorprofile.ANSI256, []string{"38;5;196"}, []string{"38;2;"}},
		{colorprofile.ASCII, []string{"red"}, []string{"38;2;", "38;5;"}},
		{colorprofile.NoTTY, []string{"red", "\x1b[1;1H"}, []string{"38;2;", "38;5;"}}, // moves kept: it is still drawn
	}
	for _, tt := range tests {
		t.Run(tt.profile.String(), func(t *testing.T) {
			var out bytes.Buffer
			s := NewScreen(&out)
			s.SetProfile(tt.profile)
			if _, err := s.Output().Write([]byte(ansi.SetModeAltScreenSaveCursor)); err != nil {
				t.Fatal(err)
			}
			s.Draw(red, nil, 10, 1)
			got := out.String()
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("%q has %q", got, n)
				}
			}
		})
	}
}
