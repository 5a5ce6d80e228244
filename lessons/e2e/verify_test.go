package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/proc"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/state"
)

// One sandbox with all three styles and the sample Echo plays the whole
// course; the shell loop polls every second to keep it short.
var sb *sandbox.Sandbox

func TestMain(m *testing.M) {
	proc.MaybeRunWrapper()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := assets.Find(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lesson tests need the control plane:", err)
		return 1
	}
	root, err := os.MkdirTemp("", "rlab-lessons-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// rlab runs the Go operators and the exec wrapper; RLAB_SELF names a
	// prebuilt one (while working on a lesson).
	self := os.Getenv("RLAB_SELF")
	if self == "" {
		self = filepath.Join(root, "rlab")
		if out, err := exec.Command("go", "build", "-o", self, "../../cmd/rlab").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build rlab: %v\n%s", err, out)
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sb, err = sandbox.Start(ctx, sandbox.Options{
		State: state.Dir{Root: filepath.Join(root, "state")}, Assets: dir, Self: self,
		Styles: sandbox.Styles, ShellInterval: time.Second, Sample: true,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start sandbox:", err, "logs in", filepath.Join(root, "state", "logs"))
		return 1
	}
	code := m.Run()
	if err := sb.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop sandbox:", err)
		code = 1
	}
	if code != 0 {
		fmt.Fprintln(os.Stderr, "logs kept in", filepath.Join(root, "state", "logs"))
	} else {
		_ = os.RemoveAll(root)
	}
	return code
}

// testWriter sends Verify's lines to the test log as they come.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// TestVerifyAll autoplays every lesson in order: every check must pass and
// every lesson must leave the sandbox at its baseline (the sample Echo 2/2
// in every style, every replica running).
func TestVerifyAll(t *testing.T) {
	all, err := lessons.Load()
	if err != nil {
		t.Fatal(err)
	}
	// RLAB_LESSONS=6,7 verifies only those, to work on one lesson.
	if only := os.Getenv("RLAB_LESSONS"); only != "" {
		var some []*lessons.Lesson
		for _, f := range strings.Split(only, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("RLAB_LESSONS=%q: %v", only, err)
			}
			l, err := lessons.Find(all, n)
			if err != nil {
				t.Fatal(err)
			}
			some = append(some, l)
		}
		all = some
	}
	p := lessons.NewPlayer(sb)
	defer p.Close()
	t0 := time.Now()
	results := p.Verify(t.Context(), all, testWriter{t})
	for _, r := range results {
		if r.Err != nil {
			t.Errorf("lesson %d %s: %v", r.Lesson.Number, r.Lesson.Slug, r.Err)
			if os.Getenv("RLAB_DUMP") != "" { // goroutine dumps of the Go operators, in their logs
				for _, st := range sb.Supervisor().Statuses() {
					if st.Style != sandbox.Shell && st.PID > 0 {
						_ = syscall.Kill(st.PID, syscall.SIGQUIT)
					}
				}
			}
		}
	}
	t.Logf("verified %d lessons in %.1fs", len(results), time.Since(t0).Seconds())
}
