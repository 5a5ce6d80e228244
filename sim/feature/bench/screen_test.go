package bench_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kkloud/rlab/sim/feature/bench"
	"github.com/kkloud/rlab/sim/marks"
	"github.com/kkloud/rlab/sim/poll"
)

// fakeRlabEnv makes the test binary a fake rlab (TestMain): its value says
// how it behaves.
const fakeRlabEnv = "RLAB_BENCH_FAKE_RLAB"

// fakeRlab is rlab as ScreenStartStop sees it: it says its arguments and
// environment on the terminal, writes its pid next to the marks, and then,
// by mode:
//   - ok: marks, reads lines until "q", exits 0;
//   - early: exits 3 without marking;
//   - silent: never marks (waits for q);
//   - stuck: marks and never exits;
//   - fails: marks, and exits 4 at q.
func fakeRlab(mode string) int {
	file := os.Getenv(marks.Env)
	fmt.Printf("fake rlab %s: %s state %s\n", mode, strings.Join(os.Args[1:], " "), os.Getenv("XDG_STATE_HOME"))
	if err := os.WriteFile(filepath.Join(filepath.Dir(file), "pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		fmt.Println(err)
		return 1
	}
	switch mode {
	case "early":
		fmt.Println("fake rlab: giving up")
		return 3
	case "ok", "fails":
		marks.Write(marks.ScreenMain)
	case "stuck":
		marks.Write(marks.ScreenMain)
		select {}
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() == "q" {
			break
		}
	}
	fmt.Println("fake rlab: bye")
	if mode == "fails" {
		return 4
	}
	return 0
}

// TestScreenStartStop runs a fake rlab in tmux: timed to its mark and to
// its exit after q; an rlab that exits early, never marks, does not exit
// or exits badly is an error quoting the terminal; nothing is left
// running either way.
func TestScreenStartStop(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mode    string
		wantErr []string // "": none; else in the error
	}{
		{mode: "ok"},
		{mode: "early", wantErr: []string{"exited (status 3) before marking screen.main", "fake rlab: giving up"}},
		{mode: "silent", wantErr: []string{"to mark screen.main", "deadline exceeded", "fake rlab silent: lesson start 1"}},
		{mode: "stuck", wantErr: []string{"to exit after q Enter", "fake rlab stuck"}},
		{mode: "fails", wantErr: []string{"exited with status 4", "fake rlab: bye"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Setenv(fakeRlabEnv, tt.mode)
			dir := t.TempDir()
			s := bench.Screened{Args: []string{"lesson", "start", "1"}, Mark: marks.ScreenMain, Quit: []string{"q", "Enter"}, Timeout: 2 * time.Second}
			t0 := time.Now()
			start, stop, err := bench.ScreenStartStop(t.Context(), self, dir, s)
			took := time.Since(t0)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				// Both are times within the call, one after the other: the
				// launch to the mark, then q to the exit.
				if start <= 0 || stop <= 0 || start+stop > took {
					t.Errorf("start %v, stop %v in a call of %v: want both positive and within it", start, stop, took)
				}
				if left, _ := os.ReadDir(dir); len(left) != 0 {
					t.Errorf("left in %s: %v", dir, left)
				}
			} else {
				if err == nil {
					t.Fatalf("no error (start %v, stop %v), want %q", start, stop, tt.wantErr)
				}
				t.Log(err)
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				if !strings.Contains(err.Error(), "logs in "+dir) {
					t.Errorf("error %q does not say where the logs are", err)
				}
				// What rlab printed first: its state dir was one of its own.
				if !strings.Contains(err.Error(), "lesson start 1 state "+dir+"/") {
					t.Errorf("error %q: the fake's state dir not under %s", err, dir)
				}
			}
			// The fake ran, and is gone with its terminal.
			pids, _ := filepath.Glob(filepath.Join(dir, "*", "pid"))
			if tt.wantErr == nil {
				return // its dir was removed: gone with it, checked above
			}
			if len(pids) != 1 {
				t.Fatalf("pid files %v, want the fake's", pids)
			}
			b, err := os.ReadFile(pids[0])
			pid, _ := strconv.Atoi(string(b))
			if err != nil || pid <= 0 {
				t.Fatalf("pid %q: %v", b, err)
			}
			if err := poll.Until(t.Context(), 10*time.Millisecond, 5*time.Second, "the fake rlab gone", poll.True(func() bool {
				return gone(pid)
			})); err != nil {
				t.Error(err)
			}
		})
	}
}

// gone says pid is no process, or one that has exited (a zombie: its
// parent, the tmux server, is gone too).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(after, "Z")
}

// TestScreenStartStopNoTmux: without tmux on PATH the measurement is
// skipped, by name.
func TestScreenStartStopNoTmux(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, _, err := bench.ScreenStartStop(context.Background(), "/bin/true", t.TempDir(), bench.UpMain)
	if !errors.Is(err, bench.ErrNoTmux) {
		t.Fatalf("err = %v, want ErrNoTmux", err)
	}
}
