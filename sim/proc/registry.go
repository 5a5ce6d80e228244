package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Entry is one recorded child: enough to find it again and to be sure that a
// live pid is still the same process (pids are reused).
type Entry struct {
	PID   int
	PGID  int
	Start uint64 // start time, in the platform's own unit (see startTime)
	Name  string
}

// Record writes an entry for pid into dir.
func Record(dir string, pid int, name string) error {
	start, err := startTime(pid)
	if err != nil {
		return fmt.Errorf("record %s (pid %d): %w", name, pid, err)
	}
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		return fmt.Errorf("record %s (pid %d): getpgid: %w", name, pid, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("record %s: %w", name, err)
	}
	line := fmt.Sprintf("%d %d %d %s\n", pid, pgid, start, name)
	tmp := filepath.Join(dir, "."+strconv.Itoa(pid))
	if err := os.WriteFile(tmp, []byte(line), 0o600); err != nil {
		return fmt.Errorf("record %s: %w", name, err)
	}
	return os.Rename(tmp, filepath.Join(dir, strconv.Itoa(pid)))
}

// Forget removes pid's entry; a missing entry is not an error.
func Forget(dir string, pid int) {
	_ = os.Remove(filepath.Join(dir, strconv.Itoa(pid)))
}

// Entries reads every entry in dir; unreadable entries are skipped.
func Entries(dir string) ([]Entry, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pid dir: %w", err)
	}
	var out []Entry
	for _, de := range des {
		if strings.HasPrefix(de.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			continue
		}
		var e Entry
		if _, err := fmt.Sscanf(string(b), "%d %d %d %s", &e.PID, &e.PGID, &e.Start, &e.Name); err != nil {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// Alive reports whether e's process still runs (same pid and start time).
func (e Entry) Alive() bool {
	st, err := startTime(e.PID)
	return err == nil && st == e.Start && !zombie(e.PID)
}

// Reap kills every recorded process that is still alive, waits for it to go
// (up to wait), and empties dir. It returns the entries it had to kill.
func Reap(dir string, wait time.Duration) ([]Entry, error) {
	entries, err := Entries(dir)
	if err != nil {
		return nil, err
	}
	var killed []Entry
	for _, e := range entries {
		if !e.Alive() {
			continue
		}
		killed = append(killed, e)
		// The same process, still in the group it was recorded in: that
		// group is its own (it or its watcher leads it), kill all of it.
		if pgid, err := syscall.Getpgid(e.PID); err == nil && pgid == e.PGID {
			_ = syscall.Kill(-e.PGID, syscall.SIGKILL)
		}
		_ = syscall.Kill(e.PID, syscall.SIGKILL)
	}
	deadline := time.Now().Add(wait)
	for _, e := range killed {
		for e.Alive() {
			if time.Now().After(deadline) {
				return killed, fmt.Errorf("stale %s (pid %d) did not die after SIGKILL", e.Name, e.PID)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return killed, fmt.Errorf("clear pid dir: %w", err)
	}
	return killed, nil
}
