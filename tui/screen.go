package tui

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
)

// Screen draws the frames on the terminal itself, writing only the lines
// that changed since the last frame. Bubble Tea's renderer parses every
// cell of a frame and diffs the whole screen whenever the frame's string
// changes; at rest the clocks change a handful of lines once a second, and
// that whole-screen work was most of what `rlab up` spent (#26).
//
// Bubble Tea still owns the terminal's modes: it is given a view of one
// blank cell, so it enters and leaves the alternate screen, hides and shows
// the cursor, sets the window title and reads the keys, and its renderer
// finds nothing to draw. Everything it writes goes through Output, and
// the frame is drawn again whole after it (it may have erased the screen,
// as it does on a resize). Nothing is drawn before Bubble Tea has switched
// to the alternate screen, or after it left it, so the shell's screen is
// never written on.
type Screen struct {
	mu      sync.Mutex
	out     io.Writer
	on      bool     // in the alternate screen: frames are drawn
	lines   []string // on the terminal now (nil: unknown, drawn again whole)
	content string   // the last frame
	cursor  *tea.Cursor
	w, h    int
	profile colorprofile.Profile // the terminal's colours: the frame's are fitted to them
	buf     bytes.Buffer

	// Lines counts the lines written, Frames the writes (tests read
	// Lines).
	Lines, Frames int
}

var (
	enterAlt = []byte(ansi.SetModeAltScreenSaveCursor)
	exitAlt  = []byte(ansi.ResetModeAltScreenSaveCursor)
)

// NewScreen draws on out, the terminal Bubble Tea writes to as well, its
// colours fitted to what the environment says the terminal shows (as
// Bubble Tea's renderer does; SetProfile when Bubble Tea knows better).
func NewScreen(out io.Writer) *Screen {
	return &Screen{out: out, profile: colorprofile.Detect(out, os.Environ())}
}

// SetProfile fits the frame's colours to p (tea.ColorProfileMsg) from
// now on, drawing it again whole.
func (s *Screen) SetProfile(p colorprofile.Profile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p == s.profile {
		return
	}
	s.profile, s.lines = p, nil
	if s.on {
		s.flush(nil)
	}
}

// Output is the writer to give Bubble Tea (tea.WithOutput): it writes
// through to the terminal, which it still is to Bubble Tea (its size, its
// modes), then draws the frame again whole.
func (s *Screen) Output() io.Writer {
	if f, ok := s.out.(*os.File); ok {
		return ttyOutput{s, f}
	}
	return output{s}
}

type output struct{ s *Screen }

func (o output) Write(p []byte) (int, error) { return o.s.passThrough(p) }

// ttyOutput is output that Bubble Tea recognises as a terminal (it asks
// its size through Fd).
type ttyOutput struct {
	s *Screen
	f *os.File
}

func (o ttyOutput) Write(p []byte) (int, error) { return o.s.passThrough(p) }
func (o ttyOutput) Read(p []byte) (int, error)  { return o.f.Read(p) }
func (o ttyOutput) Close() error                { return nil } // rlab's stdout, not Bubble Tea's to close
func (o ttyOutput) Fd() uintptr                 { return o.f.Fd() }

func (s *Screen) passThrough(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case bytes.Contains(p, exitAlt):
		s.on = false
	case bytes.Contains(p, enterAlt):
		s.on = true
		fallthrough
	case s.on:
		// Whatever it wrote, the frame goes over it, in the same write (no
		// blank screen between its erase and the frame).
		s.lines = nil
		s.flush(p)
		return len(p), nil
	}
	return s.out.Write(p) //nolint:wrapcheck // Bubble Tea's own write, as it would have seen it
}

// Draw makes the terminal show content, a frame of h lines w wide, with
// the cursor shown at cur (nil: hidden). Only the lines that differ from
// what the terminal shows are written.
func (s *Screen) Draw(content string, cur *tea.Cursor, w, h int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w != s.w || h != s.h {
		s.w, s.h, s.lines = w, h, nil // a resize: Bubble Tea erases the screen too
	} else if content == s.content && sameCursor(cur, s.cursor) {
		return
	}
	s.content = content
	s.cursor = nil
	if cur != nil {
		c := *cur
		s.cursor = &c
	}
	if s.on {
		s.flush(nil)
	}
}

// Showing says whether the frames are drawn (Bubble Tea is in the
// alternate screen): the last one given to Draw is then on the terminal.
func (s *Screen) Showing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.on
}

// flush writes before (Bubble Tea's own bytes), then the lines of the
// frame that differ from the terminal's, then places the cursor: one
// write. s.mu is held.
func (s *Screen) flush(before []byte) {
	lines := strings.Split(s.content, "\n")
	if len(lines) > s.h {
		lines = lines[:s.h]
	}
	b := &s.buf
	b.Reset()
	b.WriteString(ansi.HideCursor) // no cursor flying over the lines as they are written
	wrote := 0
	for y, l := range lines {
		if y < len(s.lines) && s.lines[y] == l {
			continue
		}
		if ansi.StringWidth(l) > s.w {
			// Past the edge the terminal would wrap it onto the next line
			// (and scroll, on the last).
			l = ansi.Truncate(l, s.w, "")
		}
		moveTo(b, 0, y)
		b.WriteString(ansi.ResetStyle)
		b.WriteString(l)
		b.WriteString(ansi.ResetStyle)
		if ansi.StringWidth(l) < s.w {
			b.WriteString(ansi.EraseLineRight) // not after a full line: it would erase its last cell
		}
		wrote++
	}
	for y := len(lines); y < len(s.lines) || s.lines == nil && y < s.h; y++ {
		moveTo(b, 0, y)
		b.WriteString(ansi.ResetStyle + ansi.EraseEntireLine)
		wrote++
	}
	if c := s.cursor; c != nil {
		moveTo(b, c.X, c.Y)
		b.WriteString(ansi.ShowCursor)
	}
	s.lines = lines
	if wrote == 0 && s.cursor == nil && before == nil {
		return
	}
	s.Lines += wrote
	s.Frames++
	var out io.Writer = s.out
	if p := s.profile; p < colorprofile.TrueColor {
		out = &colorprofile.Writer{Forward: s.out, Profile: max(p, colorprofile.ASCII)} // ASCII: styles kept, colours dropped
	}
	// An error is a terminal gone: the keys' end stops the program.
	frame := make([]byte, 0, len(before)+b.Len()) // before is Bubble Tea's buffer: not appended to
	frame = append(append(frame, before...), b.Bytes()...)
	_, _ = out.Write(frame)
}

func moveTo(b *bytes.Buffer, x, y int) {
	b.WriteString("\x1b[")
	b.WriteString(strconv.Itoa(y + 1))
	b.WriteByte(';')
	b.WriteString(strconv.Itoa(x + 1))
	b.WriteByte('H')
}

func sameCursor(a, b *tea.Cursor) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Position == b.Position
}
