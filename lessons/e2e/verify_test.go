package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/state"
)

// The rlab binary under test and the control plane it runs.
var (
	rlabBin   string
	assetsDir string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := assets.Find(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lesson tests need the control plane:", err)
		return 1
	}
	assetsDir = dir
	root, err := os.MkdirTemp("", "rlab-lessons-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(root)
	// RLAB_SELF names a prebuilt rlab (while working on a lesson).
	rlabBin = os.Getenv("RLAB_SELF")
	if rlabBin == "" {
		rlabBin = filepath.Join(root, "rlab")
		if out, err := exec.Command("go", "build", "-o", rlabBin, "../../cmd/rlab").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build rlab: %v\n%s", err, out)
			return 1
		}
	}
	return m.Run()
}

// lineLogger sends each line written to it to the test log as it comes,
// and keeps them all for after close.
type lineLogger struct {
	buf  bytes.Buffer // written by the reader goroutine until done
	w    *io.PipeWriter
	done chan struct{}
}

func newLineLogger(t *testing.T) *lineLogger {
	r, w := io.Pipe()
	l := &lineLogger{w: w, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			t.Log(sc.Text())
			l.buf.WriteString(sc.Text() + "\n")
		}
	}()
	t.Cleanup(func() { l.close() })
	return l
}

// close ends the stream and returns everything logged.
func (l *lineLogger) close() string {
	l.w.Close()
	<-l.done
	return l.buf.String()
}

// TestVerifyAll runs `rlab lesson verify --all`, the command itself, on a
// fresh sandbox of its own (the shell loop polling every second to keep it
// short): every check of every lesson must pass, each lesson must leave the
// sandbox at its baseline, and each lesson's time is printed.
// RLAB_LESSONS=6,7 verifies only those, while writing a lesson.
func TestVerifyAll(t *testing.T) {
	verifyLessons(t)
}

// TestVerifyByHand runs `rlab lesson verify --all --by-hand`: every step
// is done as a student does it, the command it shows typed into bash after
// reading the step for longer than any time bound a check sets (5s: the
// longest, lesson 8's takeover after SIGTERM, is 4s), and during that
// reading a step that needs an act must not pass: the student who does
// nothing fails every such step. Its sandbox is its own. It runs after
// TestVerifyAll, not beside it: this package's tests together take less
// than cmd/rlab's, which go test runs at the same time.
func TestVerifyByHand(t *testing.T) {
	verifyLessons(t, "--by-hand", "--read", "5s")
}

// failures are the lines of verify's output that say what failed.
func failures(out string) string {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "FAIL ") || strings.Contains(l, "restore:") || strings.Contains(l, "not restored") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// verifyLessons runs rlab lesson verify with extra flags on the lessons
// RLAB_LESSONS names (all by default) and checks each was verified.
func verifyLessons(t *testing.T, extra ...string) {
	all, err := lessons.Load()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"lesson", "verify", "--shell-interval", "1s"}, extra...)
	chosen := all
	if only := os.Getenv("RLAB_LESSONS"); only != "" {
		chosen = nil
		for _, f := range strings.Split(only, ",") {
			args = append(args, strings.TrimSpace(f))
			for _, l := range all {
				if fmt.Sprint(l.Number) == strings.TrimSpace(f) {
					chosen = append(chosen, l)
				}
			}
		}
	} else {
		args = append(args, "--all")
	}
	// Kept when the test fails: the operators' and control plane's logs.
	root, err := os.MkdirTemp("", "rlab-verify-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), rlabBin, args...)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(root, "state"), "TMPDIR="+root)
	// On a test timeout, stop it as Ctrl-C would: it stops its sandbox.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 30 * time.Second
	out := newLineLogger(t)
	cmd.Stdout, cmd.Stderr = out.w, out.w
	t0 := time.Now()
	err = cmd.Run()
	took := time.Since(t0)
	got := out.close()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs of the operators and the control plane kept in %s", filepath.Join(root, "state", "rlab", "logs"))
			return
		}
		_ = os.RemoveAll(root)
	})
	if err != nil {
		// The failures again, last: CI keeps only the end of a long log.
		t.Fatalf("rlab %s: %v\n%s", strings.Join(args, " "), err, failures(got))
	}
	if summary := fmt.Sprintf("%d of %d lessons verified", len(chosen), len(chosen)); !strings.Contains(got, summary) {
		t.Fatalf("no %q in the output", summary)
	}
	for _, l := range chosen {
		if want := fmt.Sprintf("ok   lesson %d %s in ", l.Number, l.Slug); !strings.Contains(got, want) {
			t.Errorf("no %q line in the output", want)
		}
	}
	t.Logf("rlab %s: %d lessons in %.1fs, sandbox start and stop included", strings.Join(args, " "), len(chosen), took.Seconds())
}

// startSandbox starts the sandbox every lesson expects, stopped when the
// test ends.
func startSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	sb, logs := startWith(t, sandbox.Options{Styles: style.All(), ShellInterval: time.Second, Sample: true})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	if err := sb.WaitSample(ctx); err != nil {
		t.Fatalf("sandbox: %v (logs in %s)", err, logs)
	}
	return sb
}

// startWith starts a sandbox with o, in a state dir of the test's own and
// with the test binary's assets and rlab, stopped when the test ends; it
// returns the sandbox and where its logs are.
func startWith(t *testing.T, o sandbox.Options) (*sandbox.Sandbox, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	root := t.TempDir()
	o.State, o.Assets, o.Self = state.Dir{Root: filepath.Join(root, "state")}, assetsDir, rlabBin
	logs := o.State.Logs()
	sb, err := sandbox.Start(ctx, o)
	if err != nil {
		t.Fatalf("start sandbox: %v (logs in %s)", err, logs)
	}
	t.Cleanup(func() {
		if err := sb.Stop(); err != nil {
			t.Errorf("stop sandbox: %v", err)
		}
	})
	return sb, logs
}
