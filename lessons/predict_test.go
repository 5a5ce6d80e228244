package lessons

import (
	"bytes"
	"strings"
	"testing"
)

// predictStep is okStep (a check, a hint) asking a question; answer is
// appended as the predict block's last line if not "".
func predictStep(choices, answer string) string {
	s := okStep + "    predict:\n      question: Which style repairs first?\n      choices: " + choices + "\n"
	if answer != "" {
		s += "      answer: " + answer + "\n"
	}
	return s
}

func TestParsePredict(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		choices []string
		answer  int
	}{
		{"measured", predictStep("[the shell loop, client-go, controller-runtime, all at once]", ""),
			[]string{"the shell loop", "client-go", "controller-runtime", "all at once"}, 0},
		{"with an answer", predictStep("[none, one]", "2"), []string{"none", "one"}, 2},
		{"five choices", predictStep("[a, b, c, d, e]", "5"), []string{"a", "b", "c", "d", "e"}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Parse("l.yaml", []byte(lesson(tt.yaml)))
			if err != nil {
				t.Fatal(err)
			}
			q := l.Steps[0].Predict
			if q == nil {
				t.Fatal("no predict")
			}
			if q.Question != "Which style repairs first?" || strings.Join(q.Choices, "|") != strings.Join(tt.choices, "|") ||
				q.Answer != tt.answer || q.Line != 14 {
				t.Errorf("predict = %+v", q)
			}
		})
	}
	l, err := Parse("l.yaml", []byte(lesson(okStep)))
	if err != nil || l.Steps[0].Predict != nil {
		t.Errorf("a step with no predict: %+v, %v", l.Steps[0].Predict, err)
	}
}

func TestParsePredictErrors(t *testing.T) {
	noCheck := "  - title: a\n    text: b\n    predict:\n      question: q\n      choices: [x, y]\n"
	tests := []struct {
		name, yaml string
		want       string
	}{
		{"no check", noCheck, "l.yaml:7: step 1: predict: a question needs a check on the same step"},
		// The check would pass before the student answered.
		{"nothing to act", "  - title: a\n    text: b\n    check:\n      echo_absent: {style: all, name: a}\n    hint: h\n    predict:\n      question: q\n      choices: [x, y]\n",
			"l.yaml:10: step 1: predict: a question needs a check that waits for the student's act"},
		{"an act the apiserver refuses", strings.Replace(predictStep("[x, y]", ""), "replicas: 3}", "replicas: 9, expect_error: invalid}", 1),
			"l.yaml:14: step 1: predict: a question needs a check that waits for the student's act"},
		{"one choice", predictStep("[only]", ""), "l.yaml:15: step 1: predict: choices: want a list of 2 to 5 answers, got 1"},
		{"six choices", predictStep("[a, b, c, d, e, f]", ""), "l.yaml:15: step 1: predict: choices: want a list of 2 to 5 answers, got 6"},
		{"choices not a list", predictStep("many", ""), `l.yaml:15: step 1: predict: choices: want a list of 2 to 5 answers, got "many"`},
		{"empty choice", predictStep(`[a, ""]`, ""), "l.yaml:15: step 1: predict: choices: 2: empty"},
		{"choice twice", predictStep("[a, a]", ""), `l.yaml:15: step 1: predict: choices: "a" given twice`},
		{"answer out of range", predictStep("[a, b]", "3"), "l.yaml:16: step 1: predict: answer: want the number of a choice, 1 to 2, got 3"},
		{"answer zero", predictStep("[a, b]", "0"), "l.yaml:16: step 1: predict: answer: want the number of a choice, 1 to 2, got 0"},
		{"answer not a number", predictStep("[a, b]", "b"), "l.yaml:16: step 1: predict: answer: want a whole number"},
		{"empty question", lesson(okStep + "    predict:\n      question: \"  \"\n      choices: [a, b]\n"), "l.yaml:14: step 1: predict: question: empty"},
		{"no question", lesson(okStep + "    predict:\n      choices: [a, b]\n"), `l.yaml:14: step 1: predict: "question" is required`},
		{"no choices", lesson(okStep + "    predict:\n      question: q\n"), `l.yaml:14: step 1: predict: "choices" is required`},
		{"unknown field", lesson(okStep + "    predict:\n      question: q\n      choices: [a, b]\n      why: because\n"),
			`l.yaml:16: step 1: predict: unknown field "why" (want question, choices, answer)`},
		{"not a mapping", lesson(okStep + "    predict: which?\n"), "l.yaml:13: step 1: predict: want a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := tt.yaml
			if !strings.HasPrefix(y, "title:") {
				y = lesson(y)
			}
			_, err := Parse("l.yaml", []byte(y))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\n does not contain %q", err, tt.want)
			}
		})
	}
}

// TestPredictOutcome: an answer is one of the choices; once measured it is
// put beside the detail, and judged when the question has an answer.
func TestPredictOutcome(t *testing.T) {
	measured := &Predict{Question: "Who repairs first?", Choices: []string{"the shell loop", "client-go", "all at once"}}
	fixed := &Predict{Question: "How many GETs?", Choices: []string{"none", "one per Pod"}, Answer: 1}
	const detail = "drift_repaired: shell deleted repaired in 4.40s, clientgo deleted repaired in 0.02s"
	tests := []struct {
		name    string
		q       *Predict
		choice  int
		err     string
		said    string
		verdict string
		right   *bool
	}{
		{name: "measurement decides", q: measured, choice: 2, said: "you said: client-go · measured: " + detail},
		{name: "right", q: fixed, choice: 1, said: "you said: none · measured: " + detail, verdict: "right", right: ptr(true)},
		{name: "not quite", q: fixed, choice: 2, said: "you said: one per Pod · measured: " + detail,
			verdict: "not quite: the answer is none", right: ptr(false)},
		{name: "zero", q: measured, choice: 0, err: "answer with a number from 1 to 3"},
		{name: "past the last", q: measured, choice: 4, err: "answer with a number from 1 to 3"},
		{name: "no question", q: nil, choice: 1, err: "this step asks no question"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr, err := tt.q.Choose(tt.choice)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Choose(%d) = %v, want %q", tt.choice, err, tt.err)
				}
				return
			}
			if err != nil || pr.Choice != tt.choice {
				t.Fatalf("Choose(%d) = %+v, %v", tt.choice, pr, err)
			}
			if s := tt.q.Said(pr); s != "" {
				t.Errorf("said before the pass: %q", s)
			}
			pr = tt.q.Measure(pr, detail)
			if got := tt.q.Said(pr); got != tt.said {
				t.Errorf("Said = %q, want %q", got, tt.said)
			}
			if got := tt.q.Verdict(pr); got != tt.verdict {
				t.Errorf("Verdict = %q, want %q", got, tt.verdict)
			}
			if (pr.Right == nil) != (tt.right == nil) || pr.Right != nil && *pr.Right != *tt.right {
				t.Errorf("Right = %v, want %v", pr.Right, tt.right)
			}
		})
	}
	// Not answered: measured, but nothing said and nothing judged.
	pr := fixed.Measure(Prediction{}, detail)
	if pr.Measured != detail || pr.Right != nil || fixed.Said(pr) != "" || fixed.Verdict(pr) != "" {
		t.Errorf("unanswered, measured: %+v", pr)
	}
	// A step with no question keeps its (empty) prediction.
	var none *Predict
	if pr := none.Measure(Prediction{}, detail); pr != (Prediction{}) {
		t.Errorf("no question, measured: %+v", pr)
	}
}

func ptr[T any](v T) *T { return &v }

func TestPredictLocalized(t *testing.T) {
	q := &Predict{Question: "What does echo-shell keep?", Choices: []string{"echo-clientgo", "nothing"}, Answer: 2}
	l := Localized(q, "ada-")
	if l.Question != "What does ada-echo-shell keep?" || l.Choices[0] != "ada-echo-clientgo" || l.Choices[1] != "nothing" || l.Answer != 2 {
		t.Errorf("localized = %+v", l)
	}
	if q.Question != "What does echo-shell keep?" || q.Choices[0] != "echo-clientgo" {
		t.Errorf("the lesson's own question changed: %+v", q)
	}
	if Localized(q, "") != q {
		t.Error("no prefix: a copy")
	}
	var none *Predict
	if Localized(none, "ada-") != nil {
		t.Error("nil localized is not nil")
	}
}

// TestGuidePredict: on plain text the question follows the step's text, a
// number answers it until the check passes, and the pass prints the answer
// beside what was measured.
func TestGuidePredict(t *testing.T) {
	q := &Predict{Question: "How many GETs?", Choices: []string{"none", "one per Pod"}, Answer: 1}
	var out bytes.Buffer
	PrintAsk(&out, q, nil)
	if want := "\n  Predict before you act: How many GETs?\n    1 none\n    2 one per Pod\n  (type the number of your answer, then Enter)\n"; out.String() != want {
		t.Errorf("asked:\n%q\nwant\n%q", out.String(), want)
	}
	tests := []struct {
		cmds    []string // typed, in order, before the pass
		replies []string
		report  string
	}{
		{cmds: []string{"2"}, replies: []string{"you said: one per Pod (another number changes it until the check passes)"},
			report: "you said: one per Pod · measured: 0 GETs\n    not quite: the answer is none"},
		{cmds: []string{"3", "2", "1"}, replies: []string{"answer with a number from 1 to 2", "you said: one per Pod (another number changes it until the check passes)",
			"you said: none (another number changes it until the check passes)"},
			report: "you said: none · measured: 0 GETs\n    right"},
		{report: "0 GETs"}, // not answered: the detail alone, as before
	}
	for _, tt := range tests {
		var pr Prediction
		for i, c := range tt.cmds {
			if !IsNumber(c) {
				t.Fatalf("%q is not a number", c)
			}
			if got := Answer(q, c, &pr, false, nil); got != tt.replies[i] {
				t.Errorf("%v: reply to %s = %q, want %q", tt.cmds, c, got, tt.replies[i])
			}
		}
		if got := PredictReport(q, q.Measure(pr, "0 GETs"), "0 GETs", nil); got != tt.report {
			t.Errorf("%v: report = %q, want %q", tt.cmds, got, tt.report)
		}
	}
	pr := Prediction{Choice: 1}
	if got := Answer(q, "2", &pr, true, nil); got != "passed already: a prediction comes before the act" || pr.Choice != 1 {
		t.Errorf("after the pass: %q, %+v", got, pr)
	}
	for _, c := range []string{"n", "", "a", "1x"} {
		if IsNumber(c) {
			t.Errorf("%q read as an answer", c)
		}
	}
	var none *Predict
	if got := PredictReport(none, Prediction{}, "0 GETs", nil); got != "0 GETs" {
		t.Errorf("no question: report = %q", got)
	}
}

// TestEveryLessonPredicts: each lesson on the built-in operators asks at
// least one question (the loader has checked that each waits for the
// student's act); one about the student's own operator need not.
func TestEveryLessonPredicts(t *testing.T) {
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		n := 0
		for _, s := range l.Steps {
			if s.Predict != nil {
				n++
			}
		}
		if l.Operator == nil && n == 0 {
			t.Errorf("%s asks the student to predict nothing", l.Dir)
		}
	}
}
