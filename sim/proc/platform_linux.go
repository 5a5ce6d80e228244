package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ChildAttr is the SysProcAttr for every process rlab starts: its own process
// group (so a signal reaches its helpers too, and a terminal's Ctrl-C does
// not), and on Linux a parent-death signal. The lifeline (see lifeline.go)
// covers the same ground on every platform; on Linux both run.
func ChildAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if os.Getenv(NoPdeathsigEnv) == "" {
		a.Pdeathsig = syscall.SIGKILL
	}
	return a
}

// setDeathSignal makes the calling thread's process get SIGKILL when its
// parent dies. The signal belongs to the thread and survives exec, so the
// caller must hold the thread locked through its exec.
func setDeathSignal() error {
	if os.Getenv(NoPdeathsigEnv) != "" {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("set parent-death signal: %w", err)
	}
	return nil
}

// statFields returns the fields of /proc/<pid>/stat after the command name,
// which may itself contain spaces and parentheses.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return strings.Fields(s[i+1:]), nil
}

// startTime is field 22 of /proc/<pid>/stat (index 19 after the command
// name): clock ticks since boot.
func startTime(pid int) (uint64, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	if len(f) < 20 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// zombie reports whether pid has exited but not yet been waited for.
func zombie(pid int) bool {
	f, err := statFields(pid)
	return err == nil && len(f) > 0 && f[0] == "Z"
}
