package checks

import (
	"bytes"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/feature/check"
	"github.com/kkloud/rlab/sim/world"
)

func pass(id, reason string) check.Result { return check.Result{ID: id, Pass: true, Reason: reason} }
func fail(id, reason string) check.Result { return check.Result{ID: id, Reason: reason} }

// operator_check passes on a whole run that passed, and until then shows
// each failing check with its reason, one a line, the newest result first
// (of the run under way, once it has got that far).
func TestOperatorCheckEval(t *testing.T) {
	cond := lessons.Cond{Kind: lessons.CondOperatorCheck, Args: Args{"operator": "mine", "checks": []string{"owner", "gc"}}, Line: 0}
	key := GradeKey(cond.Args)
	tests := []struct {
		name  string
		grade *Grade // nil: not graded
		ok    bool
		want  []string // in the detail
		not   []string // not in it
	}{
		{"not graded", nil, false, []string{"mine not checked yet"}, nil},
		{"first run under way", &Grade{Running: true, Partial: []check.Result{pass("owner", "ok")}}, false,
			[]string{"checking: 1 of 2 done"}, nil},
		{"first run fails as it goes", &Grade{Running: true, Partial: []check.Result{fail("owner", "no ownerReference")}}, false,
			[]string{"✗ owner: no ownerReference", "(checking again…)"}, nil},
		{"failed", &Grade{Runs: 1, Log: "/state/logs/mine-a.log", Last: []check.Result{fail("owner", "no ownerReference"), fail("gc", "still there")}}, false,
			[]string{"✗ owner: no ownerReference\n✗ gc: still there\nits log: /state/logs/mine-a.log"}, []string{"checking again"}},
		{"failed, passing now in the next run", &Grade{Runs: 1, Running: true,
			Last:    []check.Result{fail("owner", "no ownerReference"), fail("gc", "still there")},
			Partial: []check.Result{pass("owner", "ok")}}, false,
			[]string{"✗ gc: still there", "(checking again…)"}, []string{"✗ owner"}},
		{"one passed, one failed", &Grade{Runs: 2, Last: []check.Result{pass("owner", "ok"), fail("gc", "still there")}}, false,
			[]string{"✗ gc: still there"}, []string{"owner"}},
		{"passed", &Grade{Runs: 3, Last: []check.Result{pass("owner", "Echo/hello controller=true"), pass("gc", "collected")}}, true,
			[]string{"owner ✓ Echo/hello controller=true; gc ✓ collected"}, nil},
		{"a check that did not run", &Grade{Runs: 1, Last: []check.Result{pass("owner", "ok")}}, false,
			[]string{"1 of 2 checks ran"}, nil},
		{"could not run", &Grade{Err: "this sandbox runs no operator mine"}, false,
			[]string{"this sandbox runs no operator mine"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := View{}
			if tt.grade != nil {
				v.Grades = map[string]Grade{key: *tt.grade}
			}
			o := EvalCond(cond, v)
			if o.OK != tt.ok || o.Final {
				t.Errorf("= %+v, want ok %v, not final", o, tt.ok)
			}
			for _, w := range tt.want {
				if !strings.Contains(o.Detail, w) {
					t.Errorf("detail %q lacks %q", o.Detail, w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(o.Detail, w) {
					t.Errorf("detail %q has %q", o.Detail, w)
				}
			}
		})
	}
	// Many checks passed: counted, not each reason.
	many := Grade{Runs: 1, Took: 42e9}
	var ids []string
	for _, c := range check.All()[:5] {
		ids = append(ids, c.ID)
		many.Last = append(many.Last, pass(c.ID, "fine"))
	}
	if r := many.result(ids); !r.ok || r.detail != "all 5 checks passed in 42.00s" {
		t.Errorf("five passed: %+v", r)
	}
	if got := cond.Describe(); got != "operator mine: passes rlab check's owner, gc" {
		t.Errorf("Describe = %q", got)
	}
}

// The lesson's operator: declared once, named by every action and check
// about it, its scripts read from the lesson's folder.
func TestLessonOperator(t *testing.T) {
	const steps = `  - title: a
    text: b
    action:
      note: n
      play:
        - run_operator: {operator: mine, file: owner.sh}
    check:
      operator_check: {operator: mine, checks: [owner, gc]}
    hint: h
  - title: c
    text: d
`
	good := "title: T\nsummary: S\noperator: {name: mine, starter: starter.sh}\nsteps:\n" + steps
	ls, err := lessons.LoadFS(fstest.MapFS{
		"12-x/lesson.yaml": {Data: []byte(good)}, "12-x/README.md": {Data: []byte("# x")},
		"12-x/starter.sh": {Data: []byte("echo starter")}, "12-x/owner.sh": {Data: []byte("echo owner")},
	})
	if err != nil {
		t.Fatal(err)
	}
	l := ls[0]
	if l.Operator == nil || l.Operator.Name != "mine" || string(l.Operator.Starter.Data) != "echo starter" {
		t.Fatalf("operator = %+v", l.Operator)
	}
	op := l.Steps[0].Action.Play[0]
	if f := op.Args.File("file"); f.Name != "owner.sh" || string(f.Data) != "echo owner" {
		t.Errorf("run_operator file = %+v", f)
	}
	if got := op.Describe(); got != "operator mine: restart it running the lesson's owner.sh, and wait for its first pass" {
		t.Errorf("Describe = %q", got)
	}
	for i, want := range []string{"echo owner", "echo owner"} {
		if f, err := l.Version(i); err != nil || string(f.Data) != want {
			t.Errorf("Version(%d) = %q, %v, want %q", i, f.Data, err, want)
		}
	}
	if _, err := l.Version(2); err == nil {
		t.Error("Version(2) of a two-step lesson: no error")
	}
	l.Steps[0].Action = nil // no fix played yet: the starter
	if f, _ := l.Version(1); string(f.Data) != "echo starter" {
		t.Errorf("Version(1) with no run_operator = %q, want the starter", f.Data)
	}
	if _, err := (&lessons.Lesson{Number: 3, Steps: l.Steps}).Version(0); err == nil || !strings.Contains(err.Error(), "lesson 3 has no operator") {
		t.Errorf("Version of a lesson with no operator: %v", err)
	}

	_, err = lessons.LoadFS(fstest.MapFS{"12-x/lesson.yaml": {Data: []byte(good)}, "12-x/README.md": {Data: []byte("# x")}})
	for _, want := range []string{"12-x/lesson.yaml:3: no file starter.sh in 12-x", "12-x/lesson.yaml:10: no file owner.sh in 12-x"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing scripts: error %v, want %q", err, want)
		}
	}
}

func TestLessonOperatorErrors(t *testing.T) {
	check := func(args string) string {
		return "  - title: a\n    text: b\n    check:\n      operator_check: " + args + "\n    hint: h\n"
	}
	tests := []struct {
		name, yaml, want string
	}{
		{"no operator declared", lesson(check("{operator: mine, checks: [owner]}")),
			"l.yaml:7: step 1: check: operator_check: operator mine: the lesson runs no operator of the student's"},
		{"another operator", withOperator(check("{operator: yours, checks: [owner]}")),
			"l.yaml:7: step 1: check: operator_check: operator yours: the lesson's operator is mine"},
		{"built-in style", withOperator(check("{operator: shell, checks: [owner]}")),
			"operator: want the name of the lesson's operator"},
		{"unknown check", withOperator(check("{operator: mine, checks: [owner, ownership]}")),
			`l.yaml:7: step 1: check: operator_check: checks: "ownership" is not one of rlab check's checks`},
		{"twice", withOperator(check("{operator: mine, checks: [gc, gc]}")), "checks: gc given twice"},
		{"no checks", withOperator(check("{operator: mine, checks: []}")), "checks: want a list of rlab check's checks"},
		{"bad file", withOperator("  - title: a\n    text: b\n    action:\n      note: n\n      play:\n        - run_operator: {operator: mine, file: ../x.sh}\n"),
			"l.yaml:9: step 1: action: play 1: run_operator: file: want a bash script in the lesson's folder"},
		{"operator fields", "title: T\nsummary: S\noperator: {name: mine}\nsteps:\n" + okStep,
			"l.yaml:3: operator: give starter (a bash script) or project (a Go project's folder), not both"},
		{"starter and project", "title: T\nsummary: S\noperator: {name: mine, starter: s.sh, project: _p}\nsteps:\n" + okStep,
			"l.yaml:3: operator: give starter"},
		{"bad project", withOperator("  - title: a\n    text: b\n    action:\n      note: n\n      play:\n        - run_project: {operator: mine, project: steps/x}\n"),
			"l.yaml:9: step 1: action: play 1: run_project: project: want a folder of a Go project in the lesson's folder, its name beginning with _"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := lessons.Parse("l.yaml", []byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// A check, and an action on a Deployment by hand, can be about the
// student's operator (operator: mine) instead of a style: evaluated in its
// namespace, done there.
func TestOperatorInPlaceOfStyle(t *testing.T) {
	step := func(check, play string) string {
		s := "  - title: a\n    text: b\n"
		if play != "" {
			s += "    action:\n      note: n\n      play:\n        - " + play + "\n"
		}
		if check != "" {
			s += "    check:\n      " + check + "\n    hint: h\n"
		}
		return s
	}
	mine := style.Style("mine")
	orphan := world.Snapshot{Namespaces: map[string]*world.NamespaceView{mine.Namespace(): {
		Orphans: []*world.DeploymentView{{Name: "echo-x"}}}}}
	tests := []struct {
		name, yaml string
		want       string // in the error; "" if it loads
		styles     []style.Style
		detail     string // of the check on orphan
	}{
		{name: "check", yaml: withOperator(step("orphaned: {operator: mine, name: x}", "")),
			styles: []style.Style{mine}, detail: "mine echo-x left with 0 pods, no owner"},
		{name: "list of checks", yaml: withOperator(step("deployment_absent: [{style: all, name: x}, {operator: mine, name: x}]", "")),
			styles: []style.Style{mine}, detail: "mine echo-x still there"},
		{name: "action", yaml: withOperator(step("", "delete_deployment: {operator: mine, name: x}")), styles: []style.Style{mine}},
		{name: "no operator declared", yaml: lesson(step("orphaned: {operator: mine, name: x}", "")),
			want: "l.yaml:7: step 1: check: orphaned: operator mine: the lesson runs no operator of the student's"},
		{name: "both", yaml: withOperator(step("orphaned: {style: all, operator: mine, name: x}", "")),
			want: `step 1: check: orphaned: unknown field "style"`},
		{name: "a built-in style", yaml: withOperator(step("orphaned: {operator: shell, name: x}", "")),
			want: "operator: want the name of the lesson's operator"},
		{name: "a Go style's check", yaml: withOperator(step("leader_lost: {operator: mine}", "")),
			want: `unknown field "operator"`},
		{name: "an action on the operators", yaml: withOperator(step("", "pause_operators: {operator: mine}")),
			want: `unknown field "operator"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := lessons.Parse("l.yaml", []byte(tt.yaml))
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := l.Steps[0]
			if s.Action != nil {
				if got := s.Action.Play[0].Args.Styles(); !slices.Equal(got, tt.styles) {
					t.Errorf("action styles %v, want %v", got, tt.styles)
				}
				return
			}
			c := s.Check.Conds[len(s.Check.Conds)-1]
			if got := c.Args.Styles(); !slices.Equal(got, tt.styles) {
				t.Errorf("check styles %v, want %v", got, tt.styles)
			}
			if o := EvalCond(c, View{Snapshot: orphan}); o.Detail != tt.detail {
				t.Errorf("detail %q, want %q", o.Detail, tt.detail)
			}
		})
	}
}

// Every script a lesson ships parses as bash, and each run_operator plays a
// version that differs from the one before: a step that changes nothing
// teaches nothing.
func TestLessonScripts(t *testing.T) {
	all, err := lessons.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		if l.Operator == nil {
			continue
		}
		prev := l.Operator.Starter
		files := []lessons.File{prev}
		for i := range l.Steps {
			f, err := l.Version(i)
			if err != nil {
				t.Fatal(err)
			}
			if f.Name != prev.Name {
				if string(f.Data) == string(prev.Data) && maps.EqualFunc(f.Files, prev.Files, bytes.Equal) {
					t.Errorf("%s step %d: %s is %s again", l.Dir, i+1, f.Name, prev.Name)
				}
				files = append(files, f)
			}
			prev = f
		}
		for _, f := range files {
			if f.IsProject() {
				continue // TestProjectVersions builds them
			}
			cmd := exec.Command("bash", "-n")
			cmd.Stdin = strings.NewReader(string(f.Data))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s/%s: %v\n%s", l.Dir, f.Name, err, out)
			}
		}
	}
}
