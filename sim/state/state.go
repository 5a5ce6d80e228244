// Package state owns rlab's state directory ($XDG_STATE_HOME/rlab): the lock
// that allows one sandbox per directory, the pid of the running sandbox, its
// kubeconfig, logs, recorded child pids, run-time scratch files and the
// control socket of rlab do.
package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Dir is one state directory.
type Dir struct{ Root string }

// Default is $XDG_STATE_HOME/rlab, or ~/.local/state/rlab.
func Default(getenv func(string) string) (Dir, error) {
	if x := getenv("XDG_STATE_HOME"); x != "" {
		return Dir{Root: filepath.Join(x, "rlab")}, nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return Dir{}, fmt.Errorf("no state dir: set XDG_STATE_HOME or HOME: %w", err)
		}
		home = h
	}
	return Dir{Root: filepath.Join(home, ".local", "state", "rlab")}, nil
}

// Kubeconfig is the admin kubeconfig of the running sandbox (0600).
func (d Dir) Kubeconfig() string { return filepath.Join(d.Root, "kubeconfig") }

// Logs holds one log file per component.
func (d Dir) Logs() string { return filepath.Join(d.Root, "logs") }

// Run holds the running sandbox's scratch files (certs, etcd data); removed at stop.
func (d Dir) Run() string { return filepath.Join(d.Root, "run") }

// PIDs holds one entry per live child, for reaping after a crash.
func (d Dir) PIDs() string { return filepath.Join(d.Root, "pids") }

// Control is the Unix socket on which the running sandbox takes rlab do's
// requests (0600); removed at stop.
func (d Dir) Control() string { return filepath.Join(d.Root, "control.sock") }

func (d Dir) lockPath() string { return filepath.Join(d.Root, "rlab.lock") }
func (d Dir) pidPath() string  { return filepath.Join(d.Root, "rlab.pid") }

// BusyError says another sandbox holds this state dir.
type BusyError struct {
	Root string
	PID  int // 0 if unknown
}

func (e *BusyError) Error() string {
	who := "another rlab"
	if e.PID > 0 {
		who = fmt.Sprintf("rlab (pid %d)", e.PID)
	}
	return fmt.Sprintf("a sandbox is already running: %s holds %s; stop it first (Ctrl-C in its terminal, or kill %d)",
		who, e.Root, e.PID)
}

// Lock is the held lock of a state dir; it dies with the process.
type Lock struct {
	d Dir
	f *os.File
}

// Acquire takes the state dir for this process, or returns *BusyError.
func (d Dir) Acquire() (*Lock, error) {
	if err := os.MkdirAll(d.Root, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	// Kubeconfigs and keys live here: keep it private even if it existed.
	if err := os.Chmod(d.Root, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	f, err := os.OpenFile(d.lockPath(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &BusyError{Root: d.Root, PID: d.readPID()}
		}
		return nil, fmt.Errorf("lock %s: %w", d.lockPath(), err)
	}
	if err := os.WriteFile(d.pidPath(), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("pid file: %w", err)
	}
	return &Lock{d: d, f: f}, nil
}

// Release removes the pid file and the kubeconfig and drops the lock.
func (l *Lock) Release() {
	_ = os.Remove(l.d.pidPath())
	_ = os.Remove(l.d.Kubeconfig())
	_ = l.f.Close()
}

// Running reports the pid of the sandbox holding d, or 0 if none does.
func (d Dir) Running() int {
	f, err := os.Open(d.lockPath())
	if err != nil {
		return 0
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return 0 // nobody holds it
	}
	if pid := d.readPID(); pid > 0 {
		return pid
	}
	return -1 // held, pid not written yet
}

func (d Dir) readPID() int {
	b, err := os.ReadFile(d.pidPath())
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
