package tui

import (
	"bytes"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/stats"
)

// The log view reads only while it is open: then every logPoll, a chunk at
// most at a time; closed, nothing ticks for it.
const (
	logPoll  = 500 * time.Millisecond
	logChunk = 64 << 10
	logKeep  = 1000 // lines kept; the view shows the newest that fit
)

// logView shows the log of one replica of the focused pane's operator, in
// place of the timeline, following what it appends.
type logView struct {
	src     Logs // nil: the Source has no logs (a replay)
	open    bool
	st      style.Style
	replica string
	// gen numbers each opening: a read or tick of an earlier one is
	// dropped, so that one chain of reads runs at a time.
	gen     int
	next    int64 // where the next read starts; -1: the tail
	lines   []string
	partial []byte // the last line, not ended yet
	err     error
}

type (
	// logReadMsg is a chunk read for the log view's opening gen.
	logReadMsg struct {
		gen   int
		chunk LogChunk
		err   error
	}
	// logTickMsg: time to look for new lines (opening gen).
	logTickMsg struct{ gen int }
)

func newLogView(src Source) *logView {
	l, _ := src.(Logs)
	return &logView{src: l}
}

// show opens the log of replica of st, from its tail, and starts reading.
func (v *logView) show(st style.Style, replica string) tea.Cmd {
	v.open, v.st, v.replica = true, st, replica
	v.gen++
	v.next, v.lines, v.partial, v.err = -1, nil, nil, nil
	return v.read()
}

// close stops reading: the chain of reads ends with the next message.
func (v *logView) close() {
	v.open = false
	v.gen++
	v.lines, v.partial = nil, nil
}

// read reads the next chunk off the event loop.
func (v *logView) read() tea.Cmd {
	if v.src == nil {
		return nil
	}
	src, gen, st, r, from := v.src, v.gen, v.st, v.replica, v.next
	return func() tea.Msg {
		c, err := src.ReadLog(st, r, from, logChunk)
		return logReadMsg{gen: gen, chunk: c, err: err}
	}
}

// onRead takes a chunk and says what comes next: another read at once if
// more is waiting, else one after logPoll. changed says whether the view
// shows something new.
func (v *logView) onRead(msg logReadMsg) (cmd tea.Cmd, changed bool) {
	if !v.open || msg.gen != v.gen {
		return nil, false // an earlier opening's: its chain ends here
	}
	gen := v.gen
	tick := tea.Tick(logPoll, func(time.Time) tea.Msg { return logTickMsg{gen: gen} })
	if msg.err != nil {
		changed = v.err == nil || v.err.Error() != msg.err.Error()
		v.err = msg.err
		return tick, changed
	}
	changed = v.err != nil
	v.err = nil
	c := msg.chunk
	if c.Next < v.next || v.next >= 0 && c.From != v.next {
		// The log began anew (a new run): start over.
		v.lines, v.partial = nil, nil
		changed = true
	}
	data := c.Data
	if v.next < 0 && c.From > 0 {
		// The tail begins mid-line: that line is cut, leave it out.
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		} else {
			data = nil
		}
	}
	v.next = c.Next
	if len(data) > 0 {
		v.add(data)
		changed = true
	}
	if len(c.Data) == logChunk {
		return v.read(), changed // more is waiting
	}
	return tick, changed
}

// onTick reads again if the opening is still the same.
func (v *logView) onTick(msg logTickMsg) tea.Cmd {
	if !v.open || msg.gen != v.gen {
		return nil
	}
	return v.read()
}

// add splits data into lines, keeping an unfinished last line apart.
func (v *logView) add(data []byte) {
	buf := append(v.partial, data...)
	v.partial = nil
	for len(buf) > 0 {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			v.partial = slices.Clone(buf)
			break
		}
		v.lines = append(v.lines, clean(string(buf[:i])))
		buf = buf[i+1:]
	}
	if n := len(v.lines); n > logKeep {
		v.lines = append(v.lines[:0], v.lines[n-logKeep:]...)
	}
}

// clean makes a log line safe to draw: no escape codes or control
// characters (a student's program may print anything), tabs as spaces.
func clean(s string) string {
	s = ansi.Strip(s)
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteString("    ")
		case r < 0x20 || r == 0x7f:
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// defaultReplica is the replica whose log opens first: the leader if one
// is known, else the first replica seen.
func defaultReplica(st *stats.Operator, holder string) string {
	names := st.ReplicaNames()
	for _, n := range names {
		if n == st.Leader || holder != "" && n == stats.ReplicaOfIdentity(holder) {
			return n
		}
	}
	if len(names) > 0 {
		return names[0]
	}
	return "a"
}

// nextReplica is the replica after the one shown, in name order.
func nextReplica(st *stats.Operator, cur string) string {
	names := st.ReplicaNames()
	if len(names) == 0 {
		return cur
	}
	i := slices.Index(names, cur)
	return names[(i+1)%len(names)]
}

// render draws the log view in a frame of exactly w×h: the newest lines
// that fit, the last one even if not ended yet.
func (v *logView) render(w, h int, closeKey, nextKey string, s *common.Theme) []string {
	title := "log · " + v.st.Traits().Title + " replica " + v.replica + " · " + closeKey + " or esc closes · " + nextKey + " next replica"
	inner := common.BoxInner(w)
	lines := v.lines
	if len(v.partial) > 0 {
		lines = append(slices.Clip(lines), clean(string(v.partial)))
	}
	var body []string
	switch {
	case errors.Is(v.err, fs.ErrNotExist):
		body = []string{s.Dim.S("no log yet: replica " + v.replica + " has written nothing")}
	case v.err != nil:
		body = []string{s.Err.S("cannot read the log: " + v.err.Error())}
	case len(lines) == 0:
		body = []string{s.Dim.S("empty so far; new lines show as they come")}
	default:
		if n := h - 2; len(lines) > n {
			lines = lines[len(lines)-max(n, 0):]
		}
		body = make([]string, len(lines))
		for i, l := range lines {
			body[i] = common.Fit(l, inner)
		}
	}
	tp := s.OpTitle(v.st)
	return common.Box(tp.S(title), common.Width(title), body, w, h, s.OpPaint(v.st))
}
