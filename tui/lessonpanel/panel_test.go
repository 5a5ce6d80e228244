package lessonpanel

import (
	"reflect"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/tui/common"
)

// TestTUIShellWrap: a command line too wide is broken at spaces with a
// shell continuation; put back together it is the line as written.
func TestTUIShellWrap(t *testing.T) {
	long := `  kubectl -n echo-$s patch ec hello --type=merge -p '{"spec":{"message":"hello from rlab"}}' && kubectl -n echo-$s get ec hello -o yaml`
	tests := []struct {
		name string
		line string
		w    int
		want int // parts
	}{
		{"fits", "kubectl get pods", 40, 1},
		{"exactly", strings.Repeat("x", 40), 40, 1},
		{"long", long, 60, 3},
		{"no space", strings.Repeat("y", 100), 40, 3},
		{"too narrow to wrap", long, 7, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := shellWrap(tt.line, tt.w)
			if len(parts) != tt.want {
				t.Fatalf("%d parts, want %d: %q", len(parts), tt.want, parts)
			}
			if len(parts) == 1 {
				if parts[0] != tt.line {
					t.Fatalf("changed: %q", parts[0])
				}
				return
			}
			var joined string
			for i, p := range parts {
				if w := ansi.StringWidth(p); w > tt.w {
					t.Errorf("part %d is %d wide, over %d: %q", i, w, tt.w, p)
				}
				if i < len(parts)-1 && !strings.HasSuffix(p, " \\") {
					t.Errorf("part %d does not continue: %q", i, p)
				}
				if in := strings.Repeat(" ", leading(parts[0])+2); i > 0 && !strings.HasPrefix(p, in) {
					t.Errorf("part %d is not indented under the first: %q", i, p)
				}
				p = strings.TrimSuffix(p, " \\")
				if i > 0 {
					p = strings.TrimLeft(p, " ")
				}
				joined += p
				if i < len(parts)-1 && strings.Contains(tt.line, " ") {
					joined += " "
				}
			}
			if joined != tt.line {
				t.Fatalf("put together:\n%q\nwant\n%q", joined, tt.line)
			}
		})
	}
}

// TestTUIReflow: a paragraph's lines are joined; blank lines, indented
// lines and list items keep their breaks.
func TestTUIReflow(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"one line", []string{"one line"}},
		{"wrapped at\nseventy columns\n", []string{"wrapped at seventy columns"}},
		{"first\nparagraph\n\nsecond\n", []string{"first paragraph", "", "second"}},
		{"items:\n- one\n- two\nand on", []string{"items:", "- one", "- two and on"}},
		{"code:\n  kubectl get pods\nafter", []string{"code:", "  kubectl get pods after"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := reflow(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("reflow(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func bigStep() lessonview.State {
	return lessonview.State{
		Version: 3, Lesson: 6, Count: 9, Title: "The workqueue", Step: 2, Steps: 5, StepTitle: "Retries with backoff",
		Text: "Take the create verb on Deployments away from the Go operators' Roles,\nthen create an Echo called retry-demo. Every reconcile fails with\nforbidden. The error goes back to the workqueue, which queues the key\nagain after a backoff that doubles each time.",
		Kubectl: "for s in clientgo runtime; do\n  kubectl -n echo-$s patch role echo-operator --type=json -p '[{\"op\":\"remove\",\"path\":\"/rules/2\"}]'\n" +
			"done\nfor s in shell clientgo runtime; do\n  kubectl -n echo-$s create -f - <<EOF\napiVersion: kkloud.io/v1\nkind: Echo\nmetadata: {name: retry-demo}\nspec: {message: retry, replicas: 1}\nEOF\ndone\n",
		Note:    "The shell loop keeps its rights: it is the control.",
		Waiting: "reconcile_errors (name=retry-demo style=go min=3)",
		Detail:  "still missing: runtime has 1 failed reconcile of 3",
		Hint:    "kubectl -n echo-clientgo get role echo-operator -o yaml shows what is left.",
		PlayErr: "remove_verb: roles.rbac.authorization.k8s.io \"echo-operator\" not found",
	}
}

// TestTUILessonPanelFit: at every height the panel is exactly w×h; the
// check's first line always shows, then the first command line, and a cut
// block says how much it hides; tall enough, everything shows.
func TestTUILessonPanelFit(t *testing.T) {
	s := common.PlainTheme()
	for _, w := range []int{60, 100, 160} {
		p := New(bigStep(), w, s)
		for h := 3; h <= p.Want()+2; h++ {
			out := p.Render(h)
			if len(out) != h {
				t.Fatalf("w=%d h=%d: %d lines", w, h, len(out))
			}
			for i, l := range out {
				if lw := ansi.StringWidth(l); lw != w {
					t.Fatalf("w=%d h=%d: line %d is %d wide: %q", w, h, i, lw, l)
				}
			}
			body := strings.Join(out, "\n")
			if !strings.Contains(body, "✗ remove_verb:") {
				t.Errorf("w=%d h=%d: the play error is not shown:\n%s", w, h, body)
			}
			// Rows for the play error (three lines at 60 columns) and the check.
			if h >= 6 && !strings.Contains(body, "… waiting for: reconcile_errors") {
				t.Errorf("w=%d h=%d: the check is not shown:\n%s", w, h, body)
			}
			if h >= p.Want()-6 && !strings.Contains(body, "for s in clientgo runtime; do") {
				t.Errorf("w=%d h=%d: the first command line is not shown:\n%s", w, h, body)
			}
			// The blank lines between the three blocks go first, then the
			// prose, which says how much it hides once it has two lines.
			need := p.Want() - 2
			textCut := strings.Contains(body, "Take the create verb") && !strings.Contains(body, "doubles each time")
			if textCut && !strings.Contains(body, "more lines (a taller terminal shows them)") {
				t.Errorf("w=%d h=%d: the prose is cut with no word of it:\n%s", w, h, body)
			}
			if h >= need {
				for _, want := range []string{"Take the create verb", "doubles each time.", "spec: {message: retry, replicas: 1}", "it is the control", "still missing", "hint: kubectl"} {
					if !strings.Contains(body, want) {
						t.Errorf("w=%d h=%d: %q not shown:\n%s", w, h, want, body)
					}
				}
			}
		}
	}
}

// TestTUIListDone: a lesson done is painted OK whatever its text says of
// how (by hand, played, skipped); one in progress or not started is not.
func TestTUIListDone(t *testing.T) {
	s := common.NewTheme(true)
	ok, _, _ := strings.Cut(s.OK.S("\x00"), "\x00")
	if ok == "" {
		t.Fatal("the OK paint paints nothing")
	}
	tests := []struct {
		entry lessonview.Entry
		ok    bool
	}{
		{lessonview.Entry{Number: 1, Title: "By hand", Steps: 4, Where: "4/4 by hand", Done: true}, true},
		{lessonview.Entry{Number: 2, Title: "Skipped through", Steps: 2, Where: "0/2, 2 skipped", Done: true}, true},
		{lessonview.Entry{Number: 3, Title: "Old file", Steps: 3, Where: "done", Done: true}, true},
		{lessonview.Entry{Number: 4, Title: "Half way", Steps: 5, Where: "step 2 of 5"}, false},
		{lessonview.Entry{Number: 5, Title: "Not started", Steps: 5}, false},
	}
	v := &List{Cursor: len(tests)} // the cursor's row is painted Reverse: on none of these
	for _, tt := range tests {
		v.Entries = append(v.Entries, tt.entry)
	}
	v.Entries = append(v.Entries, lessonview.Entry{Number: 6, Title: "Cursor", Steps: 1})
	out := v.Render(80, len(v.Entries)+6, s)
	for _, tt := range tests {
		t.Run(tt.entry.Title, func(t *testing.T) {
			for _, line := range out {
				if strings.Contains(line, tt.entry.Title) {
					if got := strings.Contains(line, ok); got != tt.ok {
						t.Errorf("painted OK %v, want %v: %q", got, tt.ok, line)
					}
					return
				}
			}
			t.Fatalf("no row for %q:\n%s", tt.entry.Title, strings.Join(out, "\n"))
		})
	}
}

// question is a step waiting, with a question to answer.
func question(answer, choice int) lessonview.State {
	return lessonview.State{
		Version: 1, Lesson: 4, Count: 11, Title: "Drift repair", Step: 0, Steps: 6, StepTitle: "Delete the Deployment",
		Text:    "Delete echo-hello in every namespace.",
		Key:     "d",
		Waiting: "every style: the operator repairs the deleted of Deployment echo-hello\nevery style: Deployment echo-hello asks for 2 replicas",
		Predict: &lessonview.Predict{
			Question: "Which style repairs the Deployment first?",
			Choices:  []string{"the shell loop", "client-go", "controller-runtime", "all at once"},
			Answer:   answer,
		},
		Predicted: lessonview.Prediction{Choice: choice},
	}
}

// passed is d with its check passed, the answer measured.
func passed(d lessonview.State) lessonview.State {
	d.Passed = true
	d.Detail = "drift_repaired: shell deleted repaired in 4.40s, clientgo deleted repaired in 0.02s, runtime deleted repaired in 0.02s"
	d.Predicted = d.Predict.Measure(d.Predicted, d.Detail)
	return d
}

// TestTUILessonPanelPredict: the question and its choices before the
// pass, the answer given, and after the pass the answer beside what was
// measured (and the verdict, when the question has an answer); never the
// answer before the pass.
func TestTUILessonPanelPredict(t *testing.T) {
	tests := []struct {
		name    string
		d       lessonview.State
		want    []string
		wantNot []string
	}{
		{name: "asking", d: question(3, 0),
			want:    []string{"? Which style repairs the Deployment first?  (y: your prediction, before you act)", "1 the shell loop   2 client-go   3 controller-runtime   4 all at once"},
			wantNot: []string{"you said", "right", "not quite", "measured"}},
		{name: "answered", d: question(3, 2),
			want:    []string{"you said: client-go (y changes it)", "4 all at once"},
			wantNot: []string{"measured", "right", "not quite", "your prediction"}},
		{name: "right", d: passed(question(3, 3)),
			want:    []string{"? Which style repairs the Deployment first?", "✓ right", "you said: controller-runtime · measured: drift_repaired: shell deleted repaired in 4.40s"},
			wantNot: []string{"1 the shell loop", "y changes it"}},
		{name: "not quite", d: passed(question(3, 1)),
			want: []string{"✗ not quite: the answer is controller-runtime", "you said: the shell loop · measured: drift_repaired"}},
		{name: "the measurement decides", d: passed(question(0, 1)),
			want:    []string{"you said: the shell loop · measured: drift_repaired"},
			wantNot: []string{"right", "not quite"}},
		{name: "not answered, passed: the detail as before", d: passed(question(3, 0)),
			want:    []string{"  drift_repaired: shell deleted repaired in 4.40s"},
			wantNot: []string{"Which style", "you said", "right", "not quite"}},
		{name: "done", d: func() lessonview.State { d := passed(question(3, 3)); d.Done = true; return d }(),
			want:    []string{"lesson done", "✓ right", "you said: controller-runtime · measured"},
			wantNot: []string{"Which style"}},
	}
	s := common.PlainTheme()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(tt.d, 140, s)
			body := strings.Join(p.Render(p.Want()), "\n")
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("%q not shown:\n%s", w, body)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(body, w) {
					t.Errorf("%q shown:\n%s", w, body)
				}
			}
		})
	}
}

// TestTUILessonPanelPredictFit: from the least height the screen gives the
// panel, the choices show whole before the pass (nothing to answer without
// them) and the verdict after it.
func TestTUILessonPanelPredictFit(t *testing.T) {
	s := common.PlainTheme()
	long := question(3, 0)
	long.Predict.Choices = []string{"the shell loop, at its next poll", "client-go, within milliseconds", "controller-runtime, within milliseconds", "all three at once", "nobody"}
	tests := []struct {
		name string
		d    lessonview.State
		want []string
	}{
		{"choices", question(3, 0), []string{"4 all at once"}},
		{"long choices, packed", long, []string{"1 the shell loop, at its next poll   2 client-go", "5 nobody"}},
		{"verdict", passed(question(3, 1)), []string{"✗ not quite: the answer is controller-runtime"}},
	}
	for _, tt := range tests {
		for _, w := range []int{60, 100, 160} {
			p := New(tt.d, w, s)
			for h := MinHeight; h <= p.Want(); h++ {
				out := p.Render(h)
				if len(out) != h {
					t.Fatalf("%s w=%d h=%d: %d lines", tt.name, w, h, len(out))
				}
				body := strings.Join(out, "\n")
				for _, want := range tt.want {
					if w >= 100 && !strings.Contains(body, want) {
						t.Errorf("%s w=%d h=%d: %q not shown:\n%s", tt.name, w, h, want, body)
					}
				}
				if !strings.Contains(body, "for the next step") && !strings.Contains(body, "waiting for") {
					t.Errorf("%s w=%d h=%d: the check is not shown:\n%s", tt.name, w, h, body)
				}
			}
		}
	}
}
