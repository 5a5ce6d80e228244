package actions

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/checks"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/feature/check"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/testenv"
)

// testTimeout bounds one go test run: a build of a fresh folder and the
// test's own control plane.
const testTimeout = 5 * time.Minute

// testLoop runs the student's tests a project_test names, in the folder of
// the project its operator runs, until a run passes or ctx ends; after a
// failure, again once a file there changes (the student saved) or the
// operator runs another folder (autoplay swapped in the lesson's).
func (p *Player) testLoop(ctx context.Context, g *grader, key string, a lessons.Args) {
	st := style.Style(a.Str("operator"))
	for {
		dir, err := p.sb.Customs().ProjectDir(st)
		if err != nil {
			g.update(key, func(gr *checks.Grade) { gr.Err = err.Error() })
			return
		}
		stamp := newest(dir)
		g.update(key, func(gr *checks.Grade) { gr.Running, gr.Partial = true, nil })
		t0 := time.Now()
		res, err := runProjectTests(ctx, dir, a)
		if ctx.Err() != nil {
			return
		}
		g.update(key, func(gr *checks.Grade) {
			gr.Runs++
			gr.Last, gr.Running, gr.Took, gr.Err = res, false, time.Since(t0), ""
			if err != nil {
				gr.Err = "go test could not run: " + err.Error()
			}
		})
		if err == nil && (checks.Grade{Runs: 1, Last: res}).Passed(checks.ProjectTestIDs(a)) {
			return
		}
		// Until the student changes something, the same run fails alike.
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			now, err := p.sb.Customs().ProjectDir(st)
			if err != nil || now != dir || newest(dir).After(stamp) {
				break
			}
		}
	}
}

// newest is the latest change to a .go or go.mod file under dir.
func newest(dir string) time.Time {
	var t time.Time
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if n := d.Name(); !d.IsDir() && (strings.HasSuffix(n, ".go") || n == "go.mod") {
			if info, err := d.Info(); err == nil && info.ModTime().After(t) {
				t = info.ModTime()
			}
		}
		return nil
	})
	return t
}

// runProjectTests runs the tests a names in dir: each must pass; with
// needs_gc, they run again without the garbage collector and one must
// fail; with fails_with, on a copy of dir with the lesson's broken files
// laid over it, and one must fail. One result a test, then one for each
// of the other runs (checks.ProjectTestIDs).
func runProjectTests(ctx context.Context, dir string, a lessons.Args) ([]check.Result, error) {
	tests := a.List("tests")
	out, err := goTest(ctx, dir, tests, nil)
	if err != nil && out == "" {
		return nil, err
	}
	res := testResults(out, tests)
	for _, r := range res {
		if !r.Pass {
			return res, nil
		}
	}
	if a.Bool("needs_gc") {
		out, _ := goTest(ctx, dir, tests, []string{testenv.NoGarbageCollectorEnv + "=1"})
		res = append(res, mustFail(checks.WithoutGC, out, tests,
			"all pass without the garbage collector: none waits for it to delete what an owner owned"))
	}
	if broken := a.File("fails_with"); broken.Name != "" {
		copyDir, err := os.MkdirTemp("", "rlab-broken-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(copyDir)
		if err := os.CopyFS(copyDir, os.DirFS(dir)); err != nil {
			return res, fmt.Errorf("copy %s: %w", dir, err)
		}
		if err := sandbox.WriteProject(copyDir, broken.Files); err != nil {
			return res, err
		}
		out, _ := goTest(ctx, copyDir, tests, nil)
		res = append(res, mustFail(checks.OnBroken, out, tests,
			fmt.Sprintf("all pass on the lesson's broken version (%s): they do not look at what it fails to do", broken.Name)))
	}
	return res, nil
}

// goTest runs go test -v of tests in every package of dir.
func goTest(ctx context.Context, dir string, tests, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	run := "^(" + strings.Join(tests, "|") + ")$"
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-v", "-run", run, "./...")
	cmd.Dir = dir
	// A project's go.mod may lack a requirement its tests add: resolve it
	// from the module cache rather than refuse.
	cmd.Env = append(append(os.Environ(), "GOFLAGS=-mod=mod"), env...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

var (
	testLine = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+)`)
	// a test's own message: "    echo_test.go:42: want 2 replicas"
	testMsg = regexp.MustCompile(`^\s+(\S+_test\.go:\d+: .*)$`)
	// a compiler's: "internal/controller/x_test.go:12:3: undefined: foo"
	buildErr = regexp.MustCompile(`^\S+\.go:\d+:\d+: .*$`)
)

// testResults reads go test -v's output: one result per test in tests,
// a failure quoting the test's first message, or the build's first
// error, or go test's last line.
func testResults(out string, tests []string) []check.Result {
	status := map[string]string{}
	first := map[string]string{}
	var current, build, last string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) != "" {
			last = strings.TrimSpace(line)
		}
		if strings.HasPrefix(line, "=== RUN") {
			current = strings.TrimSpace(strings.TrimPrefix(line, "=== RUN"))
		}
		if m := testLine.FindStringSubmatch(line); m != nil {
			status[m[2]] = m[1]
			continue
		}
		if m := testMsg.FindStringSubmatch(line); m != nil && current != "" && first[current] == "" {
			first[current] = m[1]
		}
		if build == "" && buildErr.MatchString(line) {
			build = line
		}
	}
	res := make([]check.Result, 0, len(tests))
	for _, t := range tests {
		r := check.Result{ID: t, Title: t, Required: true}
		switch status[t] {
		case "PASS":
			r.Pass, r.Reason = true, "passes"
		case "FAIL":
			r.Reason = "fails"
			if first[t] != "" {
				r.Reason += ": " + first[t]
			}
		case "SKIP":
			r.Reason = "skipped: " + first[t]
		default:
			switch {
			case build != "":
				r.Reason = "does not build: " + build
			case last != "":
				r.Reason = "did not run (no test of that name?); go test said: " + last
			default:
				r.Reason = "did not run"
			}
		}
		res = append(res, r)
	}
	return res
}

// mustFail is the result of a run that must fail one of tests: id passes
// if one failed.
func mustFail(id, out string, tests []string, whyNot string) check.Result {
	r := check.Result{ID: id, Title: id, Required: true}
	results := testResults(out, tests)
	for _, t := range results {
		// Failed, not unbuilt: the broken version must compile.
		if strings.HasPrefix(t.Reason, "fails") {
			r.Pass, r.Reason = true, t.ID+" "+t.Reason
			return r
		}
	}
	r.Reason = whyNot
	for _, t := range results {
		if strings.HasPrefix(t.Reason, "does not build") {
			r.Reason = "the lesson's version " + t.Reason + " (beside your project's files)"
		}
	}
	return r
}
