package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Child is a process rlab started: its own process group, killed if rlab dies.
type Child struct {
	Name string
	cmd  *exec.Cmd
	pgid int // its lifeline watcher's pid
	dir  string
	done chan struct{}
	err  error // set before done is closed
}

// Cmd describes a child to start.
type Cmd struct {
	Name, Path     string
	Args           []string
	Env            []string // nil: rlab's own environment
	Stdout, Stderr io.Writer
}

// Start runs path with args as a child named name, output to out, recorded in
// the pid dir. The parent-death signal (Linux) fires when the thread that
// forked the child exits; Go keeps its threads alive, so in practice that is
// when rlab dies.
func Start(pidDir, name, path string, args []string, out io.Writer) (*Child, error) {
	return StartCmd(pidDir, Cmd{Name: name, Path: path, Args: args, Stdout: out, Stderr: out})
}

// StartCmd is Start with separate outputs and an environment.
//
// The child joins a process group that a lifeline watcher leads, started
// first: had rlab died in between, the watcher would kill the child as it
// joined. (It cannot miss it: until the child execs, it holds a copy of the
// lifeline's write end, and it joins the group before it execs.)
func StartCmd(pidDir string, c Cmd) (*Child, error) {
	name := c.Name
	w, err := startWatcher()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	stopWatch := func() {
		_ = w.Process.Kill()
		_ = w.Wait()
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Stdout, cmd.Stderr = c.Stdout, c.Stderr
	cmd.Env = c.Env
	cmd.SysProcAttr = ChildAttr()
	cmd.SysProcAttr.Pgid = w.Process.Pid
	if err := cmd.Start(); err != nil {
		stopWatch()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	ch := &Child{Name: name, cmd: cmd, pgid: w.Process.Pid, dir: pidDir, done: make(chan struct{})}
	if err := Record(pidDir, cmd.Process.Pid, name); err != nil {
		_ = syscall.Kill(-ch.pgid, syscall.SIGKILL)
		_ = cmd.Wait()
		stopWatch()
		return nil, err
	}
	go func() {
		ch.err = cmd.Wait()
		// Whatever the child left in its group (a kubectl the shell loop was
		// running when it died) goes with it, the watcher last: with it
		// gone, Signal finds the group empty.
		_ = syscall.Kill(-ch.pgid, syscall.SIGKILL)
		stopWatch()
		Forget(pidDir, cmd.Process.Pid)
		close(ch.done)
	}()
	return ch, nil
}

// PID is the child's process id. Its process group is its watcher's.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Done is closed when the child has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err is the child's exit error, valid after Done is closed.
func (c *Child) Err() error { return c.err }

// ProcessState is the exit state, valid after Done is closed.
func (c *Child) ProcessState() *os.ProcessState { return c.cmd.ProcessState }

// Signal sends sig to the child's whole process group.
func (c *Child) Signal(sig syscall.Signal) error {
	err := syscall.Kill(-c.pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		// No process is left in its group: the child has exited (and
		// been reaped; until then its id is not reused).
		return fmt.Errorf("%w: %w", ErrExited, err)
	}
	if err == nil && sig == syscall.SIGSTOP {
		// The watcher (the group's leader) must go on reading the
		// lifeline while the rest is frozen. Stopped, it relies on the
		// kernel's SIGCONT to an orphaned stopped group, which comes only
		// if the group counts as stopped when rlab dies (not if the
		// watcher has not yet stopped then, as on a loaded CI machine)
		// and only if rlab's reaper is in another session.
		err = syscall.Kill(c.pgid, syscall.SIGCONT)
	}
	return err
}

// ErrExited is Signal's answer for a child that has already exited, with
// nothing left in its process group: nothing was signalled.
var ErrExited = errors.New("process has already exited")

// Stop sends SIGTERM to the child's process group, then SIGKILL after grace.
// It returns once the child has been reaped.
func (c *Child) Stop(grace time.Duration) error {
	select {
	case <-c.done:
		return nil
	default:
	}
	_ = syscall.Kill(-c.pgid, syscall.SIGTERM)
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-c.pgid, syscall.SIGKILL)
	select {
	case <-c.done:
		return fmt.Errorf("%s (pid %d) ignored SIGTERM for %s and was killed", c.Name, c.PID(), grace)
	case <-time.After(10 * time.Second):
		return errors.New(c.Name + " did not exit after SIGKILL")
	}
}
