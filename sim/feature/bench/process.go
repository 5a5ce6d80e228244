package bench

// Start-up as a user meets it: the rlab binary launched as a process and
// timed to the line that says the cluster is ready, as kwokctl is timed to
// its exit. Nothing here depends on testing.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ReadyLine starts the line `rlab run` prints once the cluster is ready
// (launch.Print).
const ReadyLine = "cluster ready in "

// timingsEnd starts the last line of `rlab run --timings`' timeline.
const timingsEnd = "CPU used by the end of the control plane's start-up"

// ProcessStartStop launches `rlab run --operators none --timings` from the
// binary rlab, with its state in a new directory under dir, and times it
// from the launch to its ReadyLine on stderr; then, once it has printed its
// start-up timeline (returned), it interrupts it as Ctrl-C would and times
// the stop, to the process's exit. The directory is removed unless
// something failed; then it keeps the logs.
func ProcessStartStop(ctx context.Context, rlab, dir string) (start, stop time.Duration, timeline string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, 0, "", fmt.Errorf("process dir: %w", err)
	}
	root, err := os.MkdirTemp(dir, "p")
	if err != nil {
		return 0, 0, "", fmt.Errorf("process dir: %w", err)
	}
	cmd := exec.Command(rlab, "run", "--operators", "none", "--for", "10m", "--timings")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(root, "state"), "RLAB_BACKEND=envtest")
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return 0, 0, "", err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, "", fmt.Errorf("start %s: %w", rlab, err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var (
		seen  []string
		ready bool
		tl    []string // the timeline, from its heading to its CPU line
		late  <-chan time.Time
	)
	for done := false; !done; {
		select {
		case <-late:
			done = true // a timeline cut short is still worth keeping
		case l, ok := <-lines:
			if !ok {
				werr := cmd.Wait()
				return time.Since(t0), 0, "", fmt.Errorf("rlab run exited before %q and its timeline (%v; logs in %s): %s",
					strings.TrimSpace(ReadyLine), werr, root, strings.Join(lastN(seen, 5), " | "))
			}
			seen = append(seen, l)
			switch {
			case !ready && strings.HasPrefix(l, ReadyLine):
				start, ready = time.Since(t0), true
				// The timeline follows at once; never wait long for it.
				t := time.NewTimer(10 * time.Second)
				defer t.Stop()
				late = t.C
			case strings.HasPrefix(l, "start-up timeline") || len(tl) > 0:
				tl = append(tl, l)
				done = ready && strings.HasPrefix(l, timingsEnd)
			}
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGINT)
			_ = cmd.Wait()
			return time.Since(t0), 0, "", ctx.Err()
		}
	}
	timeline = strings.Join(tl, "\n") + "\n"
	t1 := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		return start, 0, timeline, fmt.Errorf("interrupt rlab run: %w", err)
	}
	go func() { // the stop's lines are not needed, but must be read
		for range lines {
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		err = errors.Join(errors.New("rlab run did not stop within a minute of SIGINT"), <-done)
	}
	stop = time.Since(t1)
	if err != nil {
		return start, stop, timeline, fmt.Errorf("rlab run after SIGINT: %w (logs in %s)", err, root)
	}
	return start, stop, timeline, os.RemoveAll(root)
}

func lastN(xs []string, n int) []string {
	if len(xs) > n {
		return xs[len(xs)-n:]
	}
	return xs
}
