package runner

import (
	"github.com/kkloud/rlab/lessons/lessontest"
	"github.com/kkloud/rlab/sim/simtest"
)

// t0 is the moment the made-up events count from.
var t0 = simtest.T0

// A lesson.yaml around steps, and a step that loads.
var lesson, okStep = lessontest.Lesson, lessontest.OKStep

func predictStep(choices, answer string) string {
	s := okStep + "    predict:\n      question: Which style repairs first?\n      choices: " + choices + "\n"
	if answer != "" {
		s += "      answer: " + answer + "\n"
	}
	return s
}
