// Package marks lets rlab say when it reached a moment a user sees (the
// main screen drawn, a lesson's first step shown) to whoever launched it:
// `rlab bench` times rlab as a user meets it, from outside, and these
// moments leave no line on stdout to wait for (the screen draws on a
// terminal; a step's text is not the end of anything). With $RLAB_MARKS
// set, rlab appends one line per moment to that file; unset, nothing is
// written. It imports only the standard library, so that any layer may
// mark.
package marks

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Env names the file the marks are appended to.
const Env = "RLAB_MARKS"

// The moments rlab marks.
const (
	// ScreenMain: the first frame of `rlab up`'s main screen (the panes)
	// was written to the terminal.
	ScreenMain = "screen.main"
	// LessonStep: a lesson's step was first shown to the student (printed,
	// in text mode; made current on the screen).
	LessonStep = "lesson.step"
)

var (
	mu      sync.Mutex
	written = map[string]bool{} // file + "\x00" + name
)

// Write appends "<name> <unix nanoseconds>\n" to the file $RLAB_MARKS
// names, if it is set, at most once per name (and file) in a process:
// the first time the moment comes is the one measured. name has no
// spaces. It never fails its caller: a measurement hook must not change
// what it measures, so an error is ignored (the mark is then missing, and
// whoever waits for it says so).
func Write(name string) {
	file := os.Getenv(Env)
	if file == "" {
		return
	}
	now := time.Now()
	mu.Lock()
	defer mu.Unlock()
	key := file + "\x00" + name
	if written[key] {
		return
	}
	written[key] = true
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	_, _ = fmt.Fprintf(f, "%s %d\n", name, now.UnixNano())
	_ = f.Close()
}

// Read returns the marks written to file so far, the first of each name.
// A file not there yet has none; a line not ended yet (one being written)
// or that is not a mark is skipped.
func Read(file string) (map[string]time.Time, error) {
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	out := map[string]time.Time{}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break // not ended yet
		}
		line := string(b[:i])
		b = b[i+1:]
		name, ns, ok := strings.Cut(line, " ")
		n, err := strconv.ParseInt(ns, 10, 64)
		if _, seen := out[name]; !ok || err != nil || seen {
			continue
		}
		out[name] = time.Unix(0, n)
	}
	return out, nil
}
