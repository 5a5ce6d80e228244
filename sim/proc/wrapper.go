package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// WrapperArg is the hidden first argument that turns the rlab binary (or a
// test binary that calls MaybeRunWrapper) into the exec wrapper.
const WrapperArg = "__exec"

// WriteWrapper writes an executable script at dir/name that runs the real
// binary through the exec wrapper of self (the running rlab binary). envtest
// takes a binary path, not a command line; this script is that path. The
// wrapped process dies with rlab itself: by the parent-death signal on Linux,
// and everywhere by a watcher on this process's lifeline, whose fd number the
// script names (it is inherited, so the script is only good in this process's
// descendants).
func WriteWrapper(dir, name, self, real, pidDir string) (string, error) {
	fd, err := lifelineArg()
	if err != nil {
		return "", err
	}
	return writeWrapper(dir, name, self, real, pidDir, strconv.Itoa(os.Getpid()), fd)
}

func writeWrapper(dir, name, self, real, pidDir, parent, lifelineFD string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("wrapper dir: %w", err)
	}
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	script := fmt.Sprintf("#!/bin/sh\n# Runs %s so that it dies with its parent (written by rlab).\nexec %s %s %s %s %s %s %s \"$@\"\n",
		name, q(self), WrapperArg, q(pidDir), q(name), parent, lifelineFD, q(real))
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(script), 0o700); err != nil {
		return "", fmt.Errorf("write wrapper: %w", err)
	}
	return p, nil
}

// MaybeRunWrapper execs the wrapped binary if os.Args asks for the wrapper and
// never returns in that case. Call it first thing in main and in TestMain.
//
// Arguments: __exec <pid dir> <name> <parent pid> <lifeline fd> <real binary> [args...]
// ("-" for no pid dir, no lifeline).
func MaybeRunWrapper() {
	if len(os.Args) < 2 || os.Args[1] != WrapperArg {
		return
	}
	if err := runWrapper(os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "rlab exec wrapper:", err)
		os.Exit(127)
	}
}

func runWrapper(args []string) error {
	if len(args) < 5 {
		return fmt.Errorf("usage: %s <pid dir> <name> <parent pid> <lifeline fd> <binary> [args...]", WrapperArg)
	}
	pidDir, name, real := args[0], args[1], args[4]
	parent, err := strconv.Atoi(args[2])
	if err != nil {
		return fmt.Errorf("parent pid %q: %w", args[2], err)
	}
	if args[3] != "-" {
		fd, err := strconv.Atoi(args[3])
		if err != nil {
			return fmt.Errorf("lifeline fd %q: %w", args[3], err)
		}
		// The watcher kills its whole group: that must be ours, not our
		// caller's (envtest runs `<binary> --help` in its own group, rlab's).
		if syscall.Getpgrp() != os.Getpid() {
			if err := syscall.Setpgid(0, 0); err != nil {
				return fmt.Errorf("own process group: %w", err)
			}
		}
		// Before anything else: if rlab is already gone, the watcher sees EOF
		// at once and kills us.
		if err := detachWatcher(fd); err != nil {
			return err
		}
	}
	// The death signal belongs to the thread; exec keeps the calling thread's,
	// so set it and exec on the same locked thread.
	runtime.LockOSThread()
	if err := setDeathSignal(); err != nil {
		return err
	}
	// The shell that ran this script exec'd into us, so our parent is rlab; if
	// rlab died before prctl, nobody would ever signal us.
	if os.Getppid() != parent {
		return fmt.Errorf("parent %d is gone", parent)
	}
	if pidDir != "-" {
		if err := Record(pidDir, os.Getpid(), name); err != nil {
			return err
		}
	}
	argv := append([]string{real}, args[5:]...)
	if err := syscall.Exec(real, argv, os.Environ()); err != nil {
		if pidDir != "-" {
			Forget(pidDir, os.Getpid())
		}
		return fmt.Errorf("exec %s: %w", real, err)
	}
	return nil
}
