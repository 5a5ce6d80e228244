package proc

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// NoPdeathsigEnv, set to anything, turns the Linux parent-death signal off in
// this process and its children, leaving the lifeline alone to kill what
// outlives rlab: the tests set it to prove the lifeline works on Linux too.
const NoPdeathsigEnv = "RLAB_TEST_NO_PDEATHSIG"

// The lifeline is a pipe whose write end only this process holds: it never
// writes, and the kernel closes it when the process dies, however it dies.
// A watcher, a tiny shell in a child's process group that reads the other
// end, then sees EOF and kills its whole group.
var lifeline struct {
	once sync.Once
	// Both ends are close-on-exec: a child that held w would keep the pipe
	// open, and a watcher gets r as its fd 3 (ExtraFiles).
	r, w *os.File
	err  error
}

// lifelineReader returns the read end of this process's lifeline, creating
// the pipe on first use. It stays open for the life of the process.
func lifelineReader() (*os.File, error) {
	lifeline.once.Do(func() {
		r, w, err := os.Pipe()
		if err != nil {
			lifeline.err = fmt.Errorf("lifeline: %w", err)
			return
		}
		lifeline.r, lifeline.w = r, w
	})
	return lifeline.r, lifeline.err
}

// watchScript waits for EOF (or anything) on fd 3 and then SIGKILLs its own
// process group. It ignores the signals a group gets when it is asked to stop:
// it must outlive the child's graceful exit, and a process group that is
// orphaned while stopped gets SIGHUP then SIGCONT.
const watchScript = `trap '' HUP INT QUIT TERM USR1 USR2; read -r line <&3; kill -KILL 0`

// startWatcher starts a watcher as the leader of a new process group (which
// the child then joins). The caller kills and waits for it once the child is
// gone, so that nothing is left in the group.
func startWatcher() (*exec.Cmd, error) {
	r, err := lifelineReader()
	if err != nil {
		return nil, err
	}
	w := exec.Command("/bin/sh", "-c", watchScript)
	w.ExtraFiles = []*os.File{r}
	w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start watcher: %w", err)
	}
	return w, nil
}
