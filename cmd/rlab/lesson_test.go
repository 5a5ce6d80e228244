package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/runner"
	"github.com/kkloud/rlab/sim/state"
)

// The lesson commands that need no sandbox: list (with saved progress) and
// the argument errors of verify and start. Verifying the lessons themselves
// against a real sandbox is lessons/e2e.
func TestLessonCommands(t *testing.T) {
	e := newSandboxEnv(t)
	all, err := lessons.Load()
	if err != nil {
		t.Fatal(err)
	}
	// Lesson 1 done, its last step autoplayed; lesson 2 at its second step,
	// the first skipped.
	prog := &runner.Progress{Lessons: map[string]*runner.LessonProgress{}}
	n := len(all[0].Steps)
	for i := range n {
		how := runner.ByHand
		if i == n-1 {
			how = runner.Played
		}
		prog.Record(all[0], i, how, time.Now())
	}
	prog.Set(all[0], n, time.Now())
	prog.Record(all[1], 0, runner.Skipped, time.Now())
	prog.Set(all[1], 1, time.Now())
	// Lesson 3 done before outcomes were kept.
	prog.Set(all[2], len(all[2].Steps), time.Now())
	if err := prog.Save(state.Dir{Root: e.rlabState()}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		exit int
		want []string
	}{
		{[]string{"lesson", "list"}, 0, []string{" 1  The reconcile loop", fmt.Sprintf(" %d/%d, 1 played\n", n-1, n),
			" step 2 of 2\n", " done\n", "Leader election", "rlab lesson start N",
			// time, prerequisites, backends
			"~13 min  after 7", "after 2, 3", "envtest only", "envtest, kind only", "kind only"}},
		{[]string{"lesson", "list", "--lang", "zh"}, 0, []string{"调和循环", "约 13 分钟", "先学 7", "仅 envtest, kind"}},
		// The lesson as text: its title, time, objectives, prose and steps' commands.
		{[]string{"lesson", "show", "8"}, 0, []string{"# 8. Leader election", "About 13 minutes · after lesson 7", "## Objectives",
			"- You can find a Go style's leader", "`echo-operator` in its namespace", "kill -9 $(kubectl -n echo-$s get lease echo-operator"}},
		{[]string{"lesson", "show", "8", "--lang", "ru"}, 0, []string{"# 8. Выбор лидера", "Около 13 минут · после урока 7", "## Цели",
			"kill -9 $(kubectl -n echo-$s get lease echo-operator"}},
		{[]string{"lesson", "show", "99"}, 1, []string{"no lesson 99"}},
		{[]string{"lesson", "verify"}, 1, []string{"give their numbers, or --all"}},
		{[]string{"lesson", "verify", "99"}, 1, []string{"no lesson 99"}},
		{[]string{"lesson", "verify", "--all", "1"}, 1, []string{"not both"}},
		{[]string{"lesson", "start", "x"}, 1, []string{`lesson "x": want a number`}},
		{[]string{"lesson", "start"}, 1, []string{"accepts 1 arg"}},
		// Refused before anything starts: kind's one node cannot hold it.
		{[]string{"lesson", "verify", "17", "--backend", "kind"}, 1, []string{"lesson 17 runs on envtest only", "this sandbox is kind"}},
		{[]string{"lesson", "start", "17", "--backend", "kind"}, 1, []string{"lesson 17 runs on envtest only"}},
		// Lesson 12 grades the student's operator named mine.
		{[]string{"lesson", "starter", "12"}, 0, []string{"#!/usr/bin/env bash", "reconcile_echo", "WATCH_NAMESPACE"}},
		{[]string{"lesson", "starter", "12", "--step", "6"}, 0, []string{"ownerReferences", "update_status", `message=${message//\"/`}},
		{[]string{"lesson", "starter", "12", "--step", "7"}, 0, []string{"ownerReferences", "update_status", `message=${message//\"/`}}, // the last step changes no file
		{[]string{"lesson", "starter", "12", "--step", "8"}, 1, []string{"--step 8: lesson 12 has steps 1 to 7"}},
		{[]string{"lesson", "starter", "3"}, 1, []string{"lesson 3 has no operator for you to write; lessons with one: 12"}},
		{[]string{"lesson", "start", "12", "--operator", "yours=./x.sh"}, 1, []string{"lesson 12 grades the operator named mine", "--operator mine=COMMAND"}},
		{[]string{"lesson", "start", "12", "--text", "--operator", "yours=./x.sh"}, 1, []string{"lesson 12 grades the operator named mine"}},
		{[]string{"lesson", "verify", "12", "--backend", "kubeconfig"}, 1, []string{"lesson 12 runs on envtest or kind only"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := exec.Command(rlabBin, tt.args...)
			cmd.Env = e.env
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.exit {
				t.Errorf("exit %d, want %d\n%s", code, tt.exit, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	// -o writes the starter as an executable, and never over a file.
	out := filepath.Join(t.TempDir(), "my-operator.sh")
	for i, want := range []int{0, 1} {
		cmd := exec.Command(rlabBin, "lesson", "starter", "12", "-o", out)
		cmd.Env = e.env
		b, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != want || err != nil && code == -1 {
			t.Fatalf("starter -o, time %d: exit %d (%v), want %d\n%s", i+1, code, err, want, b)
		}
		if i == 1 && !strings.Contains(string(b), "exists already") {
			t.Errorf("starter -o over a file: %s", b)
		}
	}
	l12, err := lessons.Find(all, 12)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("%s: %v, %v; want mode 0755", out, fi, err)
	}
	if b, _ := os.ReadFile(out); string(b) != string(l12.Operator.Starter.Data) {
		t.Errorf("%s is not the starter", out)
	}
	// Lesson 20's starter is a Go project: -o writes its folder, go.mod
	// under its own name, never over a folder that exists; --step writes
	// the project as that step leaves it.
	tmp := t.TempDir()
	for _, tt := range []struct {
		args []string
		exit int
		out  string // in the output
		file string // a file of the folder written
		has  string // in that file
	}{
		{[]string{"20"}, 1, "lesson 20's operator is a Go project, a folder of files: give -o DIR to write it", "", ""},
		{[]string{"20", "-o", filepath.Join(tmp, "echo-go")}, 0, "cd " + filepath.Join(tmp, "echo-go") + " && rlab lesson start 20 --operator mine='go run ./cmd'",
			"echo-go/cmd/main.go", "TODO(lesson 20, step 2)"},
		{[]string{"20", "-o", filepath.Join(tmp, "echo-go")}, 1, "exists already", "echo-go/go.mod", "module example.com/echo"},
		{[]string{"20", "--step", "7", "-o", filepath.Join(tmp, "step7")}, 0, "wrote the Go module", "step7/internal/controller/echo_controller.go", "retry.RetryOnConflict"},
		// Lessons 22 and 23 swap a version in at step 1: the starter is
		// before it (step 1 not done for the student), --step 1 after.
		{[]string{"22", "-o", filepath.Join(tmp, "echo-test")}, 0, "wrote the Go module", "echo-test/internal/controller/suite_test.go", "TODO(lesson 22, step 1)"},
		{[]string{"23", "-o", filepath.Join(tmp, "echo-ship")}, 0, "rlab lesson start 23 --backend kind --operator mine='go run ./cmd'",
			"echo-ship/Makefile", "TODO(lesson 23, step 1)"},
		{[]string{"23", "--step", "1", "-o", filepath.Join(tmp, "ship1")}, 0, "wrote the Go module", "ship1/config/rbac/role.yaml", "manager-role"},
	} {
		cmd := exec.Command(rlabBin, append([]string{"lesson", "starter"}, tt.args...)...)
		cmd.Env = e.env
		b, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != tt.exit || !strings.Contains(string(b), tt.out) {
			t.Errorf("lesson starter %s: exit %d, want %d and %q:\n%s", strings.Join(tt.args, " "), code, tt.exit, tt.out, b)
		}
		if tt.file == "" {
			continue
		}
		if data, err := os.ReadFile(filepath.Join(tmp, tt.file)); err != nil || !strings.Contains(string(data), tt.has) {
			t.Errorf("lesson starter %s: %s lacks %q (%v)", strings.Join(tt.args, " "), tt.file, tt.has, err)
		}
	}
	// Nothing was started: no sandbox holds the state dir.
	if pid := (state.Dir{Root: e.rlabState()}).Running(); pid != 0 {
		t.Fatalf("a sandbox (pid %d) runs after the lesson commands", pid)
	}
	if _, err := os.Stat(runner.ProgressFile(state.Dir{Root: e.rlabState()})); err != nil {
		t.Fatal(err)
	}
}
