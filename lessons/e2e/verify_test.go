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
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/simtest"
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
	if code, fast := simtest.FastMain(m); fast {
		return code
	}
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
// fresh sandbox of its own (the shell loop at a student's default interval):
// every check of every lesson must pass, each lesson must leave the
// sandbox at its baseline, and each lesson's time is printed.
// RLAB_LESSONS=6,7 verifies only those, while writing a lesson.
//
// It runs beside the by-hand shards and TestWriteYourOwn, each on a sandbox
// of its own: most of a lesson is waiting for a control loop, and go test
// runs no more than -parallel (GOMAXPROCS by default) of them at once.
func TestVerifyAll(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	chosen, whole := chosenLessons(t)
	verifyLessons(t, chosen, whole)
}

// testShellInterval is the shell loop's poll interval in these tests: a
// student's default, 5s. Each pass runs kubectl three times at rest (about
// 0.15s of CPU each): at 2s a sandbox's shell loop alone took 29% of a core,
// at 5s 12%, and go test ./... runs this package's two sandboxes beside
// cmd/rlab's (up to five in its classroom test) on two cores. The lessons are written for the default, so they are
// verified at it.
const testShellInterval = "5s"

// byHandShards is how many `rlab lesson verify --by-hand` split the course
// between them, each on a sandbox of its own.
const byHandShards = 2

// byHandLangs are the shards' languages: the course by hand in two of its
// translations (a translation holds words, never a command or a check, so
// the same steps must pass), the third in cmd/rlab's classroom test, and
// English in TestVerifyAll and on kind.
var byHandLangs = []string{"vi", "zh"}

// TestVerifyByHand runs `rlab lesson verify --by-hand`: every step is done
// as a student does it, the command it shows typed into bash after reading
// the step for longer than any time bound a check sets (5s: the longest,
// lesson 8's takeover after SIGTERM, is 4s), and during that reading a step
// that needs an act must not pass: the student who does nothing fails
// every such step. The course is split into shards by lesson number (1, 3,
// 5, … and 2, 4, 6, …), each a subtest on a sandbox of its own, beside the
// other verifications.
func TestVerifyByHand(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	chosen, _ := chosenLessons(t)
	for i, shard := range shards(chosen, byHandShards) {
		lang := byHandLangs[i%len(byHandLangs)]
		t.Run(fmt.Sprintf("shard %d of %d in %s", i+1, byHandShards, lang), func(t *testing.T) {
			t.Parallel()
			verifyLessons(t, shard, false, "--by-hand", "--read", "5s", "--lang", lang)
		})
	}
}

// chosenLessons are the lessons RLAB_LESSONS names, or all of them (whole),
// of those that run on envtest, this package's backend: verify --all skips
// the others with a line (lesson 23, kind only, is verified in cmd/rlab's
// kind pass).
func chosenLessons(t *testing.T) (chosen []*lessons.Lesson, whole bool) {
	t.Helper()
	all, err := lessons.Load()
	if err != nil {
		t.Fatal(err)
	}
	only := os.Getenv("RLAB_LESSONS")
	for _, l := range all {
		if !l.RunsOn(backend.Envtest.Name) {
			continue
		}
		if only == "" || slices.ContainsFunc(strings.Split(only, ","), func(f string) bool { return strings.TrimSpace(f) == fmt.Sprint(l.Number) }) {
			chosen = append(chosen, l)
		}
	}
	if len(chosen) == 0 {
		t.Fatalf("RLAB_LESSONS=%s names no lesson that runs on envtest", only)
	}
	return chosen, only == ""
}

// shards deals ls out to n shards in turn, leaving out the empty ones.
func shards(ls []*lessons.Lesson, n int) [][]*lessons.Lesson {
	out := make([][]*lessons.Lesson, n)
	for i, l := range ls {
		out[i%n] = append(out[i%n], l)
	}
	return slices.DeleteFunc(out, func(s []*lessons.Lesson) bool { return len(s) == 0 })
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

// verifyLessons runs rlab lesson verify with extra flags on chosen (as
// --all when they are the whole course) and checks each was verified.
func verifyLessons(t *testing.T, chosen []*lessons.Lesson, whole bool, extra ...string) {
	args := append([]string{"lesson", "verify", "--shell-interval", testShellInterval}, extra...)
	if whole {
		args = append(args, "--all")
	} else {
		for _, l := range chosen {
			args = append(args, fmt.Sprint(l.Number))
		}
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
	sb, logs := startWith(t, sandbox.Options{Styles: style.All(), ShellInterval: 5 * time.Second, Sample: true}) // testShellInterval
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
