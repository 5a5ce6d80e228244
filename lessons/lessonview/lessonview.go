// Package lessonview holds what the screen shows of a lesson session: its
// State, the course's Entries and a step's question. It imports only the
// standard library, so the screen (package tui) reads a lesson without
// depending on the lesson engine, its sandbox or its cluster.
//
// One word per idea: the thing that runs a lesson on the screen is a
// session (runner.Session); this package names what it shows.
package lessonview

import (
	"errors"
	"fmt"
)

// State is what the lesson panel shows of a session, as it stands now.
type State struct {
	Version            uint64
	Lesson, Count      int
	Title              string
	Step, Steps        int
	StepTitle          string
	Text               string
	Kubectl, Key, Note string
	Waiting            string
	Passed             bool
	Detail             string
	Hint               string
	Playing            bool
	PlayErr            string
	Done               bool
	// Predict is the step's question, if it asks one; Predicted is the
	// student's answer and, once the check passed, what was measured.
	Predict   *Predict
	Predicted Prediction
	// Words are the screen's words in the lesson's language (nil:
	// English).
	Words Words
}

// Entry is one lesson of the course's list.
type Entry struct {
	Number int
	Title  string
	Steps  int
	Where  string
	Done   bool // the student got past its last step
}

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
func (q *Predict) Said(pr Prediction) string { return q.SaidIn(nil, pr) }

// SaidIn is Said in words' language.
func (q *Predict) SaidIn(w Words, pr Prediction) string {
	if q == nil || pr.Choice < 1 || pr.Choice > len(q.Choices) || pr.Measured == "" {
		return ""
	}
	return w.F("you said: %s · measured: %s", q.Choices[pr.Choice-1], pr.Measured)
}

// Verdict is "right" or "not quite: …" for a question with an answer,
// once measured; "" otherwise.
func (q *Predict) Verdict(pr Prediction) string { return q.VerdictIn(nil, pr) }

// VerdictIn is Verdict in words' language.
func (q *Predict) VerdictIn(w Words, pr Prediction) string {
	switch {
	case q == nil || pr.Right == nil:
		return ""
	case *pr.Right:
		return w.T("right")
	}
	return w.F("not quite: the answer is %s", q.Choices[q.Answer-1])
}

// Map is q with every text (question and choices) passed through f, a
// copy; nil for nil. The engine words a question for one sandbox with it.
func (q *Predict) Map(f func(string) string) *Predict {
	if q == nil {
		return nil
	}
	m := *q
	m.Question = f(q.Question)
	m.Choices = make([]string, len(q.Choices))
	for i, c := range q.Choices {
		m.Choices[i] = f(c)
	}
	return &m
}
