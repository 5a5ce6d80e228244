package lessons

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kkloud/rlab/lessons/lessontest"
)

func TestLoadEmbedded(t *testing.T) {
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 8 {
		t.Fatalf("%d lessons, want at least 8", len(all))
	}
	for i, l := range all {
		if i > 0 && l.Number <= all[i-1].Number {
			t.Errorf("lesson %s comes after %s", l.Dir, all[i-1].Dir)
		}
		if !strings.HasPrefix(l.README, "# ") || len(l.README) < 500 {
			t.Errorf("%s: README.md must start with a title and teach something", l.Dir)
		}
		for j, s := range l.Steps {
			if s.Action == nil {
				continue
			}
			cmd := s.Action.Kubectl
			if a := s.Action.Answer; a.Name != "" {
				// The file the command applies, read as a here-document.
				cmd = strings.ReplaceAll(cmd, "-f "+a.Name, "-f - <<'EOF'\n"+string(a.Data)+"\nEOF")
			}
			if call := unnamespaced(cmd); call != "" {
				t.Errorf("%s step %d: kubectl command names no namespace: %q", l.Dir, j+1, call)
			}
		}
	}
}

// unnamespaced is the first kubectl call of cmd that names no style
// namespace and is not about the cluster as a whole (discovery, schemas,
// CRDs, admission policies, or a here-document of cluster-wide kinds
// only), "" if there is none.
func unnamespaced(cmd string) string {
	clusterWide := []string{"api-resources", "explain", " crd ", "validatingadmissionpolic", "validatingwebhookconfiguration"}
	lines := strings.Split(cmd, "\n")
	for i, line := range lines {
		for _, call := range strings.FieldsFunc(line, func(r rune) bool { return r == ';' || r == '|' || r == '&' }) {
			call = strings.TrimSpace(call)
			if !strings.HasPrefix(call, "kubectl ") && !strings.Contains(call, " kubectl ") ||
				strings.Contains(call, "-n echo-") ||
				slices.ContainsFunc(clusterWide, func(w string) bool { return strings.Contains(call+" ", w) }) {
				continue
			}
			if strings.Contains(call, "<<") && hereDocClusterWide(lines[i+1:]) {
				continue
			}
			return call
		}
	}
	return ""
}

// hereDocClusterWide: every kind the here-document in lines declares is
// cluster-wide.
func hereDocClusterWide(lines []string) bool {
	kinds := 0
	for _, l := range lines {
		if strings.TrimSpace(l) == "EOF" {
			break
		}
		if k, ok := strings.CutPrefix(l, "kind: "); ok {
			if !strings.HasPrefix(k, "ValidatingAdmissionPolicy") {
				return false
			}
			kinds++
		}
	}
	return kinds > 0
}

func TestUnnamespaced(t *testing.T) {
	tests := []struct{ cmd, want string }{
		{"kubectl -n echo-shell get ec", ""},
		{"for s in a b; do kubectl -n echo-$s get ec; done", ""},
		{"kubectl get ec", "kubectl get ec"},
		{"kubectl api-resources --api-group=kkloud.io", ""},
		{"kubectl explain echo.spec\nkubectl get ec hello", "kubectl get ec hello"},
		{"kubectl get crd echoes.kkloud.io -o yaml", ""},
		{"kubectl delete validatingadmissionpolicybinding,validatingadmissionpolicy x", ""},
		{"kubectl apply -f - <<'EOF'\nkind: ValidatingAdmissionPolicy\n---\nkind: ValidatingAdmissionPolicyBinding\nEOF", ""},
		{"kubectl apply -f - <<'EOF'\nkind: Echo\nEOF", "kubectl apply -f - <<'EOF'"},
		{"rlab do pause runtime", ""},
	}
	for _, tt := range tests {
		if got := unnamespaced(tt.cmd); got != tt.want {
			t.Errorf("unnamespaced(%q) = %q, want %q", tt.cmd, got, tt.want)
		}
	}
}

// A lesson.yaml around steps, and a step that loads.
var lesson, okStep = lessontest.Lesson, lessontest.OKStep

func TestParse(t *testing.T) {
	l, err := Parse("x/lesson.yaml", []byte(lesson(okStep)))
	if err != nil {
		t.Fatal(err)
	}
	s := l.Steps[0]
	if s.Line != 4 || s.Check.Within != DefaultWithin || s.HintAfter != DefaultHintAfter {
		t.Errorf("step = %+v", s)
	}
	if op := s.Action.Play[0]; op.Name != "set_replicas" || op.Line != 9 {
		t.Errorf("op = %+v", op)
	}
	if n, _ := s.Action.Play[0].Args.Int("replicas"); n != 3 {
		t.Errorf("replicas = %d", n)
	}
	if c := s.Check.Conds[0]; c.Kind != "echo_status" || c.Args.Str("ready") != "3/3" || c.Line != 11 {
		t.Errorf("cond = %+v", c)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // substrings of the error, each "file:line: ..."
	}{
		{"not yaml", "title: [", []string{"l.yaml:1: "}},
		{"empty", "", []string{"l.yaml: empty lesson"}},
		{"not a mapping", "- a\n- b\n", []string{"l.yaml:1: lesson: want a mapping"}},
		{"missing steps", "title: T\nsummary: S\n", []string{`l.yaml:1: lesson: "steps" is required`}},
		{"unknown top field", "title: T\nsummary: S\nauthor: me\nsteps: []\n", []string{`l.yaml:3: lesson: unknown field "author"`, "l.yaml:4: steps: want a list of at least one step"}},
		{"duplicate key", "title: T\ntitle: U\nsummary: S\nsteps: []\n", []string{`l.yaml:2: lesson: "title" given twice`}},
		{"title not text", "title: [a]\nsummary: S\nsteps:\n" + okStep, []string{"l.yaml:1: title: want text"}},
		{"unknown action", lesson("  - title: a\n    text: b\n    action:\n      key: x\n      play:\n        - explode: {name: hello}\n"),
			[]string{`l.yaml:9: step 1: action: play 1: unknown action "explode"`}},
		{"bad action argument", lesson("  - title: a\n    text: b\n    action:\n      key: x\n      play:\n        - set_replicas: {name: Hello, replicas: three}\n"),
			[]string{`l.yaml:9: step 1: action: play 1: set_replicas: name: want an Echo name`, `l.yaml:9: step 1: action: play 1: set_replicas: replicas: want a whole number`}},
		{"missing argument", lesson("  - title: a\n    text: b\n    action:\n      key: x\n      play:\n        - create_echo: {name: a}\n"),
			[]string{`l.yaml:9: step 1: action: play 1: create_echo: "message" is required`, `"replicas" is required`}},
		{"shell cannot lead", lesson("  - title: a\n    text: b\n    action:\n      key: k\n      play:\n        - kill_leader: {style: shell}\n"),
			[]string{`l.yaml:9: step 1: action: play 1: kill_leader: style: want a Go style`}},
		{"nothing for the student", lesson("  - title: a\n    text: b\n    action:\n      play:\n        - annotate: {name: a}\n"),
			[]string{"l.yaml:7: step 1: action: tell the student what to do"}},
		{"two keys", lesson("  - title: a\n    text: b\n    action:\n      key: ab\n      play:\n        - annotate: {name: a}\n"),
			[]string{`l.yaml:7: step 1: action: key: want one key, got "ab"`}},
		{"unknown check", lesson("  - title: a\n    text: b\n    check:\n      echo_ready: {style: all}\n    hint: h\n"),
			[]string{`l.yaml:7: step 1: check: unknown check "echo_ready"`}},
		{"bad style", lesson("  - title: a\n    text: b\n    check:\n      echo_absent: {style: python, name: a}\n    hint: h\n"),
			[]string{"l.yaml:7: step 1: check: echo_absent: style: want a style"}},
		{"bad duration", lesson("  - title: a\n    text: b\n    check:\n      within: soon\n      echo_absent: {style: all, name: a}\n    hint: h\n"),
			[]string{`l.yaml:7: step 1: check: within: want a duration`}},
		{"hold not shorter", lesson("  - title: a\n    text: b\n    check:\n      within: 2s\n      hold: 3s\n      echo_absent: {style: all, name: a}\n    hint: h\n"),
			[]string{"l.yaml:7: step 1: check: hold (3s) must be shorter than within (2s)"}},
		{"no condition", lesson("  - title: a\n    text: b\n    check:\n      within: 2s\n    hint: h\n"),
			[]string{"l.yaml:7: step 1: check: no condition to check"}},
		{"check without hint", lesson("  - title: a\n    text: b\n    check:\n      echo_absent: {style: all, name: a}\n"),
			[]string{"l.yaml:4: step 1: a step with a check needs a hint"}},
		{"min above max", lesson("  - title: a\n    text: b\n    check:\n      api_requests: {style: go, min: 3, max: 1}\n    hint: h\n"),
			[]string{"l.yaml:7: step 1: check: api_requests: max (1) is less than min (3)"}},
		{"empty list of checks", lesson("  - title: a\n    text: b\n    check:\n      api_requests: []\n    hint: h\n"),
			[]string{"l.yaml:7: step 1: check: api_requests: empty list"}},
		{"expect_error only on actions", lesson("  - title: a\n    text: b\n    check:\n      echo_absent: {style: all, name: a, expect_error: invalid}\n    hint: h\n"),
			[]string{`unknown field "expect_error"`}},
		{"alias", "title: &t T\nsummary: *t\nsteps:\n" + okStep, []string{"anchors and aliases are not used"}},
		{"unknown backend", "title: T\nsummary: S\nbackends: [envtest, minikube]\nneeds: fake Nodes\nsteps:\n" + okStep,
			[]string{`l.yaml:3: backends: "minikube" is not one of envtest, kind, kubeconfig`}},
		{"backends without needs", "title: T\nsummary: S\nbackends: [envtest]\nsteps:\n" + okStep,
			[]string{"l.yaml:3: backends: say what the others lack in needs"}},
		{"second step counted", lesson(okStep + "  - title: a\n"), []string{`l.yaml:13: step 2: "text" is required`}},
		{"cascade", lesson("  - title: a\n    text: b\n    action:\n      key: x\n      play:\n        - delete_echo: {name: a, cascade: foreground}\n"),
			[]string{"l.yaml:9: step 1: action: play 1: delete_echo: cascade: want background or orphan"}},
		{"latency", lesson("  - title: a\n    text: b\n    action:\n      note: n\n      play:\n        - set_latency: {style: go, latency: 1h}\n"),
			[]string{"l.yaml:9: step 1: action: play 1: set_latency: latency: want 0s to 5s"}},
		{"tune: a rate with no burst", lesson("  - title: a\n    text: b\n    action:\n      note: n\n      play:\n        - tune: {style: go, qps: 50}\n"),
			[]string{"l.yaml:9: step 1: action: play 1: tune: --qps 50: want a --burst of at least 1 with it"}},
		{"tune: qps in quotes", lesson("  - title: a\n    text: b\n    action:\n      note: n\n      play:\n        - tune: {style: go, qps: \"50\", burst: 100}\n"),
			[]string{`l.yaml:9: step 1: action: play 1: tune: qps: want requests per second above 0, e.g. 50, or -1 for no client-side limit, got "50"`}},
		{"answer with no command", lesson("  - title: a\n    text: b\n    action:\n      note: n\n      answer: p.yaml\n      play:\n        - annotate: {name: a}\n"),
			[]string{"l.yaml:8: step 1: action: answer: the file the student writes needs a command that reads it (kubectl) and a note with its skeleton"}},
		{"answer the command does not read", lesson("  - title: a\n    text: b\n    action:\n      kubectl: kubectl apply -f q.yaml\n      note: n\n      answer: p.yaml\n      play:\n        - annotate: {name: a}\n"),
			[]string{`l.yaml:9: step 1: action: answer: want a file of the lesson's folder that the command names, got "p.yaml"`}},
		{"from_step alone", "title: T\nsummary: S\noperator: {name: mine, project: _p, from_step: 3}\nsteps:\n" + okStep,
			[]string{"l.yaml:3: operator: from_step is a step (from 1) of the lesson from_lesson names"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("l.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\n does not contain %q", err, w)
				}
			}
			// Every problem is an *Error naming the file.
			for _, e := range unjoin(err) {
				var le *Error
				if !errors.As(e, &le) || le.File != "l.yaml" {
					t.Errorf("%v is not a lesson error about l.yaml", e)
				}
			}
		})
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestLoadFS(t *testing.T) {
	good := lesson(okStep)
	tests := []struct {
		name string
		fs   fstest.MapFS
		want string
	}{
		{"bad folder name", fstest.MapFS{"1-x/lesson.yaml": {Data: []byte(good)}, "1-x/README.md": {Data: []byte("# x")}},
			"1-x: folder name must be NN-slug"},
		{"missing README", fstest.MapFS{"01-x/lesson.yaml": {Data: []byte(good)}}, "01-x/README.md: missing"},
		{"missing lesson.yaml", fstest.MapFS{"01-x/README.md": {Data: []byte("# x")}}, "01-x/lesson.yaml: missing"},
		{"same number", fstest.MapFS{
			"01-x/lesson.yaml": {Data: []byte(good)}, "01-x/README.md": {Data: []byte("# x")},
			"01-y/lesson.yaml": {Data: []byte(good)}, "01-y/README.md": {Data: []byte("# y")},
		}, "01-y: lesson number 01 is also used by 01-x"},
		{"error in a file", fstest.MapFS{"02-x/lesson.yaml": {Data: []byte("title: T\n")}, "02-x/README.md": {Data: []byte("# x")}},
			`02-x/lesson.yaml:1: lesson: "summary" is required`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadFS(tt.fs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
	ls, err := LoadFS(fstest.MapFS{
		"02-b/lesson.yaml": {Data: []byte(good)}, "02-b/README.md": {Data: []byte("# b")},
		"01-a/lesson.yaml": {Data: []byte(good)}, "01-a/README.md": {Data: []byte("# a")},
		"notes/x.md": {Data: []byte("ignored")},
	})
	if err != nil || len(ls) != 2 || ls[0].Slug != "a" || ls[1].Number != 2 || ls[1].README != "# b" {
		t.Fatalf("LoadFS = %+v, %v", ls, err)
	}
}

// FuzzParse: whatever the input, Parse does not panic; it either returns
// errors that all name the file, or a lesson whose every action and check
// is one the player knows.
func FuzzParse(f *testing.F) {
	matches, _ := fs.Glob(embedded, "*/lesson.yaml")
	for _, m := range matches {
		b, _ := fs.ReadFile(embedded, m)
		f.Add(b)
	}
	f.Add([]byte(lesson(okStep)))
	f.Add([]byte("title: &a [*a]\n"))
	f.Add([]byte(lesson(okStep + "    predict: {question: q, choices: [a, b], answer: 2}\n")))
	f.Add([]byte("steps:\n  - {title: a, text: b, check: {within: 1s, hold: 1ms, new_leader: [{style: go, min: 1s}]}, hint: h}\n"))
	for _, name := range sortedKeys(checks) {
		f.Add([]byte(lesson(checkStep(name, checks[name].args))))
	}
	for _, name := range sortedKeys(actions) {
		f.Add([]byte(lesson(actionStep(name, actions[name].args))))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse("f.yaml", data)
		if err != nil {
			for _, e := range unjoin(err) {
				var le *Error
				if !errors.As(e, &le) || le.File != "f.yaml" || le.Line < 0 {
					t.Fatalf("%v: not a lesson error about f.yaml", e)
				}
			}
			return
		}
		if l.Title == "" || len(l.Steps) == 0 {
			t.Fatalf("accepted a lesson with no title or steps: %+v", l)
		}
		for _, s := range l.Steps {
			if q := s.Predict; q != nil && (s.Check == nil || q.Question == "" || len(q.Choices) < minChoices ||
				len(q.Choices) > maxChoices || q.Answer < 0 || q.Answer > len(q.Choices)) {
				t.Fatalf("accepted predict %+v (check %v)", q, s.Check)
			}
			if s.Action != nil {
				for _, op := range s.Action.Play {
					if _, ok := actions[op.Name]; !ok {
						t.Fatalf("accepted unknown action %q", op.Name)
					}
					if op.Describe() == "" {
						t.Fatalf("action %q has no words", op.Name)
					}
				}
			}
			if s.Check != nil {
				if len(s.Check.Conds) == 0 || s.Check.Within <= 0 || s.Check.Hold >= s.Check.Within {
					t.Fatalf("accepted check %+v", s.Check)
				}
				for _, c := range s.Check.Conds {
					if _, ok := checks[c.Kind]; !ok {
						t.Fatalf("accepted unknown check %q", c.Kind)
					}
				}
				if s.Check.Describe() == "" {
					t.Fatalf("check %+v has no words", s.Check)
				}
			}
		}
	})
}

// TestRunsOn: a lesson with backends runs only there, and says why not
// elsewhere; one without runs everywhere.
func TestRunsOn(t *testing.T) {
	l, err := Parse("l.yaml", []byte("title: T\nsummary: S\nbackends: [envtest, kubeconfig]\nneeds: fake Nodes\nsteps:\n"+okStep))
	if err != nil {
		t.Fatal(err)
	}
	l.Number = 99
	tests := []struct {
		on   string
		runs bool
	}{{"envtest", true}, {"kubeconfig", true}, {"kind", false}}
	for _, tc := range tests {
		if got := l.RunsOn(tc.on); got != tc.runs {
			t.Errorf("RunsOn(%s) = %v, want %v", tc.on, got, tc.runs)
		}
		if why := l.NotOn(tc.on); (why == "") != tc.runs {
			t.Errorf("NotOn(%s) = %q", tc.on, why)
		}
	}
	if want := "lesson 99 runs on envtest or kubeconfig only (it needs fake Nodes); this sandbox is kind"; l.NotOn("kind") != want {
		t.Errorf("NotOn(kind) = %q, want %q", l.NotOn("kind"), want)
	}
	if all, err := Parse("l.yaml", []byte(lesson(okStep))); err != nil || !all.RunsOn("kind") {
		t.Errorf("a lesson with no backends runs everywhere: %v", err)
	}
}

func TestLoadOne(t *testing.T) {
	tests := []struct {
		n       int
		wantErr string
	}{
		{n: 2},
		{n: 12},
		{n: 99, wantErr: "no lesson 99"},
	}
	for _, tt := range tests {
		all, l, err := LoadOne(tt.n)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("LoadOne(%d) = %v, want an error with %q", tt.n, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("LoadOne(%d): %v", tt.n, err)
		case l.Number != tt.n || len(all) < 12 || !slices.Contains(all, l):
			t.Errorf("LoadOne(%d) = lesson %d of %d, not one of the course", tt.n, l.Number, len(all))
		}
	}
}

// A message may be blank (the CRD's rule refuses it: lesson 16 shows that);
// other text may not.
func TestBlankMessage(t *testing.T) {
	tests := []struct {
		op      string
		wantErr string
	}{
		{`create_echo: {name: x, message: "  ", replicas: 1, expect_error: invalid}`, ""},
		{`set_message: {name: x, message: "", expect_error: invalid}`, ""},
		{`create_echoes: {prefix: x, count: 1, message: "  "}`, `message: want text, got "  "`},
	}
	for _, tt := range tests {
		step := "  - title: a\n    text: b\n    action:\n      note: n\n      play:\n        - " + tt.op + "\n"
		_, err := Parse("l.yaml", []byte(lesson(step)))
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: error %v, want %q", tt.op, err, tt.wantErr)
		}
	}
}

// TestFromStep: lessons 22 and 23 continue lesson 20's project as its step
// 7 leaves it, before the finalizer of step 8, whose Echo a test that
// calls Reconcile alone could never see deleted.
func TestFromStep(t *testing.T) {
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	const file = "internal/controller/echo_controller.go"
	l20, err := Find(all, 20)
	if err != nil {
		t.Fatal(err)
	}
	step7, err := l20.Version(6)
	if err != nil {
		t.Fatal(err)
	}
	last, err := l20.Version(len(l20.Steps) - 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(last.Files[file]), "AddFinalizer") || strings.Contains(string(step7.Files[file]), "AddFinalizer") {
		t.Fatal("lesson 20: want the finalizer in its last version and not in step 7's")
	}
	for _, n := range []int{22, 23} {
		l, err := Find(all, n)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(l.Operator.Starter.Files[file]); got != string(step7.Files[file]) {
			t.Errorf("lesson %d: %s is not lesson 20's as step 7 leaves it", n, file)
		}
	}
}
