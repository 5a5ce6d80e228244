package lessons

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/operators/style"
)

// Predict is a question a step asks before the student acts; the screen
// shows it, so it lives in the view package.
type Predict = lessonview.Predict

// Prediction is the student's answer to a step's question and how it went.
type Prediction = lessonview.Prediction

// Choice counts of a question: at least two, and at most what one digit
// typed on the screen's prompt reads comfortably.
const (
	minChoices = 2
	maxChoices = 5
)

// Localized is q in the namespaces of a sandbox with prefix p (see
// Localize); nil for nil.
func Localized(q *Predict, p style.Prefix) *Predict {
	if q == nil || p == "" {
		return q
	}
	return q.Map(func(text string) string { return Localize(text, p) })
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

// PrintAsk prints the question on plain text, after the step's text.
func PrintAsk(out io.Writer, q *Predict, w lessonview.Words) {
	fmt.Fprintf(out, "\n  %s\n", w.F("Predict before you act: %s", q.Question))
	for i, c := range q.Choices {
		fmt.Fprintf(out, "    %d %s\n", i+1, c)
	}
	fmt.Fprintln(out, "  "+w.T("(type the number of your answer, then Enter)"))
}

// IsNumber says whether a command line is a number: an answer.
func IsNumber(cmd string) bool {
	_, err := strconv.Atoi(cmd)
	return err == nil
}

// Answer keeps the number the student typed in pr, before the check
// passed; it returns what to reply.
func Answer(q *Predict, cmd string, pr *Prediction, passed bool, w lessonview.Words) string {
	if passed {
		return w.T("passed already: a prediction comes before the act")
	}
	n, _ := strconv.Atoi(cmd)
	got, err := q.Choose(n)
	if err != nil {
		return w.F("answer with a number from 1 to %d", len(q.Choices))
	}
	*pr = got
	return w.F("you said: %s (another number changes it until the check passes)", q.Choices[n-1])
}

// PredictReport is what a passed check says on plain text: its detail, or the
// student's answer beside it (pr measured) and, if the question has an
// answer, whether it was right.
func PredictReport(q *Predict, pr Prediction, detail string, w lessonview.Words) string {
	said := q.SaidIn(w, pr)
	if said == "" {
		return detail
	}
	if v := q.VerdictIn(w, pr); v != "" {
		said += "\n    " + v
	}
	return said
}
