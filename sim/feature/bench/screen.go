package bench

// Start-up as a user meets it on a terminal: `rlab up` to its main screen,
// `rlab lesson start 1 --text` to step 1. Neither says so on a line to wait
// for (the screen draws frames; a step is text among text), so rlab marks
// those moments in the file $RLAB_MARKS names (sim/marks), and rlab runs in
// a terminal of its own: a tmux server of ours, on a socket of its own
// (so that no one else's tmux is touched, and the panes get this process's
// environment, not a running server's). Nothing here depends on testing.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kkloud/rlab/sim/marks"
	"github.com/kkloud/rlab/sim/poll"
)

// ErrNoTmux is ScreenStartStop's error when tmux is not on PATH: the
// caller says the measurement was skipped.
var ErrNoTmux = errors.New("no tmux on PATH")

// Screened is a command of rlab's timed on a terminal, to a mark it writes.
type Screened struct {
	Name string   // how the report names it
	Args []string // rlab's arguments
	Mark string   // the mark (sim/marks) the start is timed to
	// Quit are the keys (tmux send-keys) that make it exit: a key on the
	// screen, a line in text mode.
	Quit []string
	// Timeout bounds each wait: for the mark, and for the exit after Quit
	// (0: 3 minutes).
	Timeout time.Duration
}

var (
	// UpMain is `rlab up` to the first frame of its main screen (the
	// panes), q to its exit.
	UpMain = Screened{Name: "rlab up: main screen drawn", Args: []string{"up"},
		Mark: marks.ScreenMain, Quit: []string{"q"}}
	// LessonStep is `rlab lesson start 1 --text --from-start` to lesson 1's
	// step 1 printed, q and Enter to its exit.
	LessonStep = Screened{Name: "rlab lesson start 1 --text: step 1 shown", Args: []string{"lesson", "start", "1", "--text", "--from-start"},
		Mark: marks.LessonStep, Quit: []string{"q", "Enter"}}
)

// screenWidth and screenHeight are the terminal's size: the panes' at
// their widest.
const screenWidth, screenHeight = 200, 60

var tmuxSeq atomic.Int64

// ScreenStartStop runs rlab (the binary) with s.Args in a terminal of
// 200x60 (tmux), with its state in a new directory under dir, and times
// it from just before the launch to the moment it wrote s.Mark (the
// launch includes tmux's own start of a server, about 10 ms); then it
// types s.Quit and times the stop, to rlab's exit. rlab must exit 0. The
// directory is removed unless something failed; then it keeps the logs,
// and the error quotes the last lines on the terminal. Whatever happens,
// the tmux server is killed, and rlab with it, before it returns.
func ScreenStartStop(ctx context.Context, rlab, dir string, s Screened) (start, stop time.Duration, err error) {
	if _, err := exec.LookPath("tmux"); err != nil {
		return 0, 0, ErrNoTmux
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Minute
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, 0, fmt.Errorf("screen dir: %w", err)
	}
	root, err := os.MkdirTemp(dir, "s")
	if err != nil {
		return 0, 0, fmt.Errorf("screen dir: %w", err)
	}
	markFile, exitFile := filepath.Join(root, "marks"), filepath.Join(root, "exit")
	t := &tmux{socket: fmt.Sprintf("rlab-bench-%d-%d", os.Getpid(), tmuxSeq.Add(1))}
	defer t.kill()
	// The shell writes rlab's exit status once it exited (the file whole,
	// by a rename) and keeps the pane, with what rlab printed last, until
	// the server is killed.
	script := `f=$1; shift; "$@"; echo $? > "$f.tmp" && mv "$f.tmp" "$f"; exec sleep 600`
	argv := append([]string{"-f", "/dev/null", "new-session", "-d", "-s", t.socket,
		"-x", strconv.Itoa(screenWidth), "-y", strconv.Itoa(screenHeight),
		"/bin/sh", "-c", script, "sh", exitFile,
		"env", marks.Env + "=" + markFile, "XDG_STATE_HOME=" + filepath.Join(root, "state"), "RLAB_BACKEND=envtest",
		rlab}, s.Args...)
	fail := func(err error) (time.Duration, time.Duration, error) {
		return start, stop, fmt.Errorf("%w (logs in %s); the terminal's last lines: %s", err, root, t.lastLines(6))
	}
	t.started = true // whatever new-session says, kill the server
	t0 := time.Now()
	if err := t.run(argv...); err != nil {
		return 0, 0, fmt.Errorf("start %s in tmux: %w", rlab, err)
	}
	var at time.Time
	err = poll.Until(ctx, 10*time.Millisecond, timeout, "rlab "+strings.Join(s.Args, " ")+" to mark "+s.Mark, func(context.Context) (bool, error) {
		m, err := marks.Read(markFile)
		if err != nil {
			return false, poll.Final(err)
		}
		if at = m[s.Mark]; !at.IsZero() {
			return true, nil
		}
		if status, exited := exitStatus(exitFile); exited {
			return false, poll.Final(fmt.Errorf("rlab exited (status %s) before marking %s", status, s.Mark))
		}
		return false, nil
	})
	if err != nil {
		return fail(err)
	}
	start = at.Sub(t0)
	t1 := time.Now()
	if err := t.run(append([]string{"send-keys", "-t", t.socket}, s.Quit...)...); err != nil {
		return fail(err)
	}
	var status string
	err = poll.Until(ctx, 10*time.Millisecond, timeout, "rlab "+strings.Join(s.Args, " ")+" to exit after "+strings.Join(s.Quit, " "), func(context.Context) (bool, error) {
		var exited bool
		status, exited = exitStatus(exitFile)
		return exited, nil
	})
	stop = time.Since(t1)
	if err != nil {
		return fail(err)
	}
	if status != "0" {
		return fail(fmt.Errorf("rlab %s exited with status %s after %s", strings.Join(s.Args, " "), status, strings.Join(s.Quit, " ")))
	}
	t.kill()
	return start, stop, os.RemoveAll(root)
}

// exitStatus is the status the pane's shell wrote, once rlab exited.
func exitStatus(file string) (string, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// tmux is a tmux server of ours, on a socket of its own, with one session
// of the same name.
type tmux struct {
	socket  string
	started bool // a server may be running: kill it
}

func (t *tmux) run(args ...string) error {
	_, err := t.output(args...)
	return err
}

func (t *tmux) output(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-L", t.socket}, args...)...)
	// Not a client of the tmux this may run in: a server of its own.
	cmd.Env = append(os.Environ(), "TMUX=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// lastLines are the last n lines on the terminal that are not blank,
// joined by " | ".
func (t *tmux) lastLines(n int) string {
	out, err := t.output("capture-pane", "-p", "-t", t.socket)
	if err != nil {
		return err.Error()
	}
	var lines []string
	for l := range strings.SplitSeq(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "(none)"
	}
	return strings.Join(lastN(lines, n), " | ")
}

// kill ends the server, and whatever runs in its pane (SIGHUP), once, and
// removes its socket (tmux leaves it).
func (t *tmux) kill() {
	if !t.started {
		return
	}
	t.started = false
	path, err := t.output("display-message", "-p", "-t", t.socket, "#{socket_path}")
	_ = t.run("kill-server")
	if path = strings.TrimSpace(path); err == nil && path != "" {
		_ = os.Remove(path)
	}
}
