// Package supervisor runs the operator replicas as child processes, the way a
// Deployment runs pods: a replica that exits, crashed or stopped, is started
// again after a backoff. It reads each replica's trace (JSON lines on its
// stdout) onto the bus and sends its logs (stderr) to a file.
package supervisor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/proc"
)

// Source is the trace source of the supervisor's own events.
const Source = trace.SourceSupervisor

// Spec is one replica to run.
type Spec struct {
	Style   style.Style
	Replica string // "a", "b"
	Path    string
	Args    []string
	Env     []string // added to rlab's environment
	LogFile string
	// Untraced replicas write no trace: their stdout goes to the log file
	// with their stderr (a student's operator prints what it likes).
	Untraced bool
}

// Name is "<style>/<replica>", the replica's trace source.
func (s Spec) Name() string { return s.Style.Source(s.Replica) }

// Options configures a supervisor.
type Options struct {
	PIDDir  string
	Publish func(trace.Event)
	Log     *slog.Logger
	// Backoff before the first restart, doubled after each quick exit up to
	// MaxBackoff; a replica that ran for StableAfter starts over.
	Backoff, MaxBackoff, StableAfter time.Duration
}

// Status is a replica's state for the screen and the lessons.
type Status struct {
	Name, Replica   string
	Style           style.Style
	PID             int // 0 while not running
	Running, Paused bool
	Restarts        int
	// Failed counts exits with a non-zero code or by a signal, rlab's own
	// kills included: a replica that exits 0 to be run again is not failing.
	Failed    int
	Malformed int // trace lines that were not events
}

// Supervisor runs replicas until Close.
type Supervisor struct {
	opts Options

	mu       sync.Mutex
	replicas map[string]*replica
	closed   bool
	wg       sync.WaitGroup
}

type replica struct {
	spec      Spec
	child     *proc.Child
	paused    bool
	restarts  int
	failed    int
	malformed int
	wake      chan struct{} // restart now, skipping the backoff
	removed   bool          // Remove: no restart; forget it once it exits
	gone      chan struct{} // closed when a removed replica has exited
}

// New returns a supervisor with no replicas.
func New(opts Options) *Supervisor {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Publish == nil {
		opts.Publish = func(trace.Event) {}
	}
	if opts.Backoff == 0 {
		opts.Backoff = 500 * time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 15 * time.Second
	}
	if opts.StableAfter == 0 {
		opts.StableAfter = 30 * time.Second
	}
	return &Supervisor{opts: opts, replicas: map[string]*replica{}}
}

// Add starts a replica and keeps it running.
func (s *Supervisor) Add(spec Spec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("supervisor closed")
	}
	if _, ok := s.replicas[spec.Name()]; ok {
		return fmt.Errorf("replica %s exists", spec.Name())
	}
	r := &replica{spec: spec, wake: make(chan struct{}, 1), gone: make(chan struct{})}
	// A log holds one sandbox's life of its replica: what `rlab check`
	// quotes from it must be this run's.
	if err := os.Truncate(spec.LogFile, 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("log file: %w", err)
	}
	if err := s.start(r); err != nil {
		return err
	}
	s.replicas[spec.Name()] = r
	s.wg.Add(1)
	go s.watch(r)
	return nil
}

// start launches r's process; s.mu is held.
func (s *Supervisor) start(r *replica) error {
	logf, err := os.OpenFile(r.spec.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	pr, pw := io.Pipe()
	var stdout io.Writer = pw
	if r.spec.Untraced {
		stdout = logf
		pw.Close() // nothing to decode: the reader below ends at once
	}
	c, err := proc.StartCmd(s.opts.PIDDir, proc.Cmd{
		Name: r.spec.Name(), Path: r.spec.Path, Args: r.spec.Args,
		Env:    append(os.Environ(), r.spec.Env...),
		Stdout: stdout, Stderr: logf,
	})
	if err != nil {
		logf.Close()
		pw.Close()
		return err
	}
	r.child, r.paused = c, false
	name := r.spec.Name()
	go func() {
		_ = trace.Decode(pr, func(e trace.Event) {
			if e.Source == "" {
				e.Source = name
			}
			s.opts.Publish(e)
		}, func(line string) {
			s.mu.Lock()
			r.malformed++
			n := r.malformed
			s.mu.Unlock()
			s.opts.Publish(trace.Event{Source: name, Kind: trace.Malformed, Payload: trace.BadLine{Line: line, Count: n}})
		})
	}()
	go func() {
		<-c.Done()
		pw.Close()
		logf.Close()
	}()
	s.opts.Publish(trace.Event{Source: Source, Kind: trace.ProcessStart, Object: name,
		Payload: trace.Process{PID: c.PID(), Restarts: r.restarts}})
	s.opts.Log.Info("replica started", "replica", name, "pid", c.PID(), "restarts", r.restarts)
	return nil
}

// watch restarts r each time it exits, until Close.
func (s *Supervisor) watch(r *replica) {
	defer s.wg.Done()
	// The name never changes; r.spec's Args do (SetArgs, under s.mu), and
	// Name's value receiver copies the whole Spec.
	s.mu.Lock()
	name := r.spec.Name()
	s.mu.Unlock()
	backoff := s.opts.Backoff
	for {
		s.mu.Lock()
		c := r.child
		s.mu.Unlock()
		started := time.Now()
		<-c.Done()

		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		if time.Since(started) > s.opts.StableAfter {
			backoff = s.opts.Backoff
		}
		exit := trace.Process{PID: c.PID(), Restarts: r.restarts, BackoffMS: backoff.Milliseconds()}
		if ps := c.ProcessState(); ps != nil {
			code := ps.ExitCode()
			exit.Code = &code
			if ps.ExitCode() != 0 {
				r.failed++ // -1: by a signal
			}
			if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				exit.Signal = ws.Signal().String()
			}
		}
		removed := r.removed
		if removed {
			delete(s.replicas, name)
			exit.Removed = true
		}
		s.mu.Unlock()
		ev := trace.Event{Source: Source, Kind: trace.ProcessExit, Object: name, Payload: exit}
		s.opts.Publish(ev)
		s.opts.Log.Info("replica exited", "replica", name, "exit", ev.Summary())
		if removed {
			close(r.gone)
			return
		}

		select {
		case <-time.After(backoff):
		case <-r.wake:
		}
		backoff = min(2*backoff, s.opts.MaxBackoff)

		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		if r.removed { // removed while waiting to restart
			delete(s.replicas, name)
			s.mu.Unlock()
			// Its exit said it would restart: say it will not.
			s.opts.Publish(trace.Event{Source: Source, Kind: trace.ProcessExit, Object: name,
				Payload: trace.Process{PID: c.PID(), Restarts: r.restarts, Removed: true}})
			close(r.gone)
			return
		}
		r.restarts++
		err := s.start(r)
		s.mu.Unlock()
		if err != nil {
			s.opts.Log.Error("restart failed", "replica", name, "error", err)
			s.opts.Publish(trace.Event{Source: Source, Kind: trace.Log, Object: name,
				Payload: trace.Message{Msg: "restart failed: " + err.Error()}})
			return
		}
	}
}

func (s *Supervisor) get(name string) (*replica, error) {
	r, ok := s.replicas[name]
	if !ok {
		return nil, fmt.Errorf("no replica %q", name)
	}
	return r, nil
}

// Signal sends sig to a replica's process group: SIGKILL is a crash,
// SIGTERM a graceful stop; either way the replica is restarted.
func (s *Supervisor) Signal(name string, sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(name)
	if err != nil {
		return err
	}
	return s.signal(r, sig)
}

// signal sends sig to r's process; s.mu is held.
func (s *Supervisor) signal(r *replica, sig syscall.Signal) error {
	if r.paused && sig != syscall.SIGCONT {
		_ = r.child.Signal(syscall.SIGCONT) // a stopped process cannot handle SIGTERM
		s.setPaused(r, false)
	}
	return r.child.Signal(sig)
}

// setPaused records whether r is frozen and says so on the trace, so the
// screen and a replay know it from the events alone; s.mu is held.
func (s *Supervisor) setPaused(r *replica, paused bool) {
	if r.paused == paused {
		return
	}
	r.paused = paused
	kind := trace.ProcessResume
	if paused {
		kind = trace.ProcessPause
	}
	s.opts.Publish(trace.Event{Source: Source, Kind: kind, Object: r.spec.Name(),
		Payload: trace.Process{PID: r.child.PID()}})
}

// Kill crashes a replica (SIGKILL): no chance to release its Lease.
func (s *Supervisor) Kill(name string) error { return s.Signal(name, syscall.SIGKILL) }

// Stop stops a replica gracefully (SIGTERM): it releases its Lease.
func (s *Supervisor) Stop(name string) error { return s.Signal(name, syscall.SIGTERM) }

// Pause freezes a replica (SIGSTOP): alive but silent, like a hung process.
func (s *Supervisor) Pause(name string) error { return s.freeze(name, true) }

// Resume continues a paused replica.
func (s *Supervisor) Resume(name string) error { return s.freeze(name, false) }

// freeze stops (SIGSTOP) or continues (SIGCONT) a replica's process.
func (s *Supervisor) freeze(name string, paused bool) error {
	sig := syscall.SIGCONT
	if paused {
		sig = syscall.SIGSTOP
	}
	// One hold of s.mu: a restart in between must not mark the new process.
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(name)
	if err != nil {
		return err
	}
	if err := s.signal(r, sig); err != nil {
		return err
	}
	s.setPaused(r, paused)
	return nil
}

// Remove stops a replica for good (SIGTERM, SIGKILL after grace) and
// forgets it once it has exited.
func (s *Supervisor) Remove(name string, grace time.Duration) error {
	s.mu.Lock()
	r, err := s.get(name)
	if err == nil {
		r.removed = true
		select { // if it is waiting to restart, end the wait
		case r.wake <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	_ = s.Stop(name) // fails only if it is between restarts: then it is gone already
	select {
	case <-r.gone:
		return nil
	case <-time.After(grace):
	}
	_ = s.Kill(name)
	select {
	case <-r.gone:
		return nil
	case <-time.After(grace):
		return fmt.Errorf("replica %s did not exit", name)
	}
}

// SetArgs changes a replica's arguments and restarts it gracefully now.
func (s *Supervisor) SetArgs(name string, args []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(name)
	if err != nil {
		return err
	}
	r.spec.Args = args
	// The wake makes the restart skip its backoff: at once if the replica
	// has exited and waits out its backoff, or as soon as the SIGTERM
	// below has stopped it. s.mu keeps the restart from happening before
	// the signal, so the new process is never the one stopped.
	select {
	case r.wake <- struct{}{}:
	default:
	}
	select {
	case <-r.child.Done():
		return nil
	default:
	}
	if err := s.signal(r, syscall.SIGTERM); err != nil && !errors.Is(err, proc.ErrExited) {
		return err
	}
	return nil
}

// Spec returns a replica's current spec.
func (s *Supervisor) Spec(name string) (Spec, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(name)
	if err != nil {
		return Spec{}, err
	}
	return r.spec, nil
}

// ByPID returns the name of the replica whose current process is pid.
func (s *Supervisor) ByPID(pid int) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, r := range s.replicas {
		if r.child.PID() == pid {
			select {
			case <-r.child.Done():
				return "", false
			default:
				return name, true
			}
		}
	}
	return "", false
}

// Statuses lists the replicas, sorted by name.
func (s *Supervisor) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Status, 0, len(s.replicas))
	for name, r := range s.replicas {
		st := Status{Name: name, Style: r.spec.Style, Replica: r.spec.Replica, Paused: r.paused,
			Restarts: r.restarts, Failed: r.failed, Malformed: r.malformed}
		select {
		case <-r.child.Done():
		default:
			st.Running, st.PID = true, r.child.PID()
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Close stops every replica gracefully (SIGTERM, then SIGKILL after grace)
// and stops restarting them.
func (s *Supervisor) Close(grace time.Duration) error {
	s.mu.Lock()
	s.closed = true
	var children []*proc.Child
	for _, r := range s.replicas {
		if r.paused {
			_ = r.child.Signal(syscall.SIGCONT)
		}
		children = append(children, r.child)
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
	var (
		wg   sync.WaitGroup
		emu  sync.Mutex
		errs []error
	)
	for _, c := range children {
		wg.Go(func() {
			if err := c.Stop(grace); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		})
	}
	wg.Wait()
	s.wg.Wait()
	return errors.Join(errs...)
}
