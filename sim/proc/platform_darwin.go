package proc

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ChildAttr is the SysProcAttr for every process rlab starts: its own process
// group (so a signal reaches its helpers too, and a terminal's Ctrl-C does
// not). macOS has no parent-death signal: the lifeline (see lifeline.go) is
// what kills a child whose rlab died.
func ChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// kinfo is pid's kernel process record.
func kinfo(pid int) (*unix.KinfoProc, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return nil, fmt.Errorf("sysctl kern.proc.pid %d: %w", pid, err)
	}
	if int(k.Proc.P_pid) != pid {
		// The kernel answers an unknown pid with an empty record.
		return nil, fmt.Errorf("pid %d: %w", pid, syscall.ESRCH)
	}
	return k, nil
}

// startTime is pid's start time in microseconds since the epoch.
func startTime(pid int) (uint64, error) {
	k, err := kinfo(pid)
	if err != nil {
		return 0, err
	}
	t := k.Proc.P_starttime
	return uint64(t.Sec)*1_000_000 + uint64(t.Usec), nil
}

// sZomb is p_stat of a process that has exited but not been waited for
// (SZOMB in <sys/proc.h>).
const sZomb = 5

// zombie reports whether pid has exited but not yet been waited for.
func zombie(pid int) bool {
	k, err := kinfo(pid)
	return err == nil && k.Proc.P_stat == sZomb
}

// ErrNotMeasured: the figure is read from /proc, which macOS lacks.
var ErrNotMeasured = errors.New("not measured on macOS")

// CPUTime is not measured on macOS.
func CPUTime(int) (time.Duration, error) { return 0, ErrNotMeasured }

// RSS is not measured on macOS.
func RSS() (now, peak uint64, err error) { return 0, 0, ErrNotMeasured }
