package lessons

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kkloud/rlab/operators/style"
)

// Predict is a question a step asks before the student acts: what will
// the sandbox measure? The step's check measures it; once the check passed,
// the student's answer is shown beside its detail.
type Predict struct {
	Question string
	Choices  []string
	// Answer is the right choice, from 1, when the code fixes the outcome;
	// 0 when the measurement decides (then no answer is right or wrong).
	Answer int
	Line   int
}

// Prediction is the student's answer to a step's question and, once the
// step's check passed, how it went: what a progress file can keep.
type Prediction struct {
	Choice   int    `json:"choice"`             // from 1; 0: not answered
	Right    *bool  `json:"right,omitempty"`    // once passed, when the question has an answer
	Measured string `json:"measured,omitempty"` // the check's detail when it passed
}

// Choice counts of a question: at least two, and at most what one digit
// typed on the screen's prompt reads comfortably.
const (
	minChoices = 2
	maxChoices = 5
)

// Choose is the student's answer choice (from 1), not measured yet.
func (q *Predict) Choose(choice int) (Prediction, error) {
	if q == nil {
		return Prediction{}, errors.New("this step asks no question")
	}
	if choice < 1 || choice > len(q.Choices) {
		return Prediction{}, fmt.Errorf("answer with a number from 1 to %d", len(q.Choices))
	}
	return Prediction{Choice: choice}, nil
}

// Measure is pr once the step's check passed with detail measured. A step
// with no question (q nil) keeps pr as it is.
func (q *Predict) Measure(pr Prediction, measured string) Prediction {
	if q == nil {
		return pr
	}
	pr.Measured = measured
	if q.Answer > 0 && pr.Choice > 0 {
		right := pr.Choice == q.Answer
		pr.Right = &right
	}
	return pr
}

// Said puts the student's answer beside what was measured, once both are
// known: "you said: client-go · measured: …"; "" before.
func (q *Predict) Said(pr Prediction) string {
	if q == nil || pr.Choice < 1 || pr.Choice > len(q.Choices) || pr.Measured == "" {
		return ""
	}
	return "you said: " + q.Choices[pr.Choice-1] + " · measured: " + pr.Measured
}

// Verdict is "right" or "not quite: …" for a question with an answer,
// once measured; "" otherwise.
func (q *Predict) Verdict(pr Prediction) string {
	switch {
	case q == nil || pr.Right == nil:
		return ""
	case *pr.Right:
		return "right"
	}
	return "not quite: the answer is " + q.Choices[q.Answer-1]
}

// Localized is q in the namespaces of a sandbox with prefix p (see
// Localize); nil for nil.
func (q *Predict) Localized(p style.Prefix) *Predict {
	if q == nil || p == "" {
		return q
	}
	l := *q
	l.Question = Localize(q.Question, p)
	l.Choices = make([]string, len(q.Choices))
	for i, c := range q.Choices {
		l.Choices[i] = Localize(c, p)
	}
	return &l
}

// predict reads `predict: {question: …, choices: […], answer: N}`.
func (p *parser) predict(n *yaml.Node, what string) *Predict {
	f := p.fields(n, what, []string{"question", "choices"}, []string{"answer"})
	if f == nil {
		return nil
	}
	q := &Predict{Line: n.Line}
	if v := f["question"]; v != nil {
		q.Question = p.text(v, what+": question")
	}
	if v := f["choices"]; v != nil {
		if v.Kind != yaml.SequenceNode || len(v.Content) < minChoices || len(v.Content) > maxChoices {
			p.errorf(v, "%s: choices: want a list of %d to %d answers, got %s", what, minChoices, maxChoices, kindOrCount(v))
		} else {
			for i, c := range v.Content {
				text := p.text(c, fmt.Sprintf("%s: choices: %d", what, i+1))
				if text != "" && slices.Contains(q.Choices, text) {
					p.errorf(c, "%s: choices: %q given twice", what, text)
				}
				q.Choices = append(q.Choices, text)
			}
		}
	}
	if v := f["answer"]; v != nil {
		n, ok := p.value(v, what+": answer", tInt)
		switch {
		case !ok:
		case len(q.Choices) == 0:
			// The choices' own error says what is wrong.
		case n.(int) < 1 || n.(int) > len(q.Choices):
			p.errorf(v, "%s: answer: want the number of a choice, 1 to %d, got %d", what, len(q.Choices), n.(int))
		default:
			q.Answer = n.(int)
		}
	}
	return q
}

// kindOrCount says what a node is, counting a list's items.
func kindOrCount(n *yaml.Node) string {
	if n.Kind == yaml.SequenceNode {
		return fmt.Sprintf("%d", len(n.Content))
	}
	return kindName(n)
}

// printAsk prints the question on plain text, after the step's text.
func (q *Predict) printAsk(out io.Writer) {
	fmt.Fprintf(out, "\n  Predict before you act: %s\n", q.Question)
	for i, c := range q.Choices {
		fmt.Fprintf(out, "    %d %s\n", i+1, c)
	}
	fmt.Fprintln(out, "  (type the number of your answer, then Enter)")
}

// isNumber says whether a command line is a number: an answer.
func isNumber(cmd string) bool {
	_, err := strconv.Atoi(cmd)
	return err == nil
}

// answer keeps the number the student typed in pr, before the check
// passed; it returns what to reply.
func (q *Predict) answer(cmd string, pr *Prediction, passed bool) string {
	if passed {
		return "passed already: a prediction comes before the act"
	}
	n, _ := strconv.Atoi(cmd)
	got, err := q.Choose(n)
	if err != nil {
		return err.Error()
	}
	*pr = got
	return "you said: " + q.Choices[n-1] + " (another number changes it until the check passes)"
}

// report is what a passed check says on plain text: its detail, or the
// student's answer beside it (pr measured) and, if the question has an
// answer, whether it was right.
func (q *Predict) report(pr Prediction, detail string) string {
	said := q.Said(pr)
	if said == "" {
		return detail
	}
	if v := q.Verdict(pr); v != "" {
		said += "\n    " + v
	}
	return said
}
