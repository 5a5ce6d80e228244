package runner

import (
	"github.com/kkloud/rlab/sim/simtest"
)

// What the moved tests share with lessons' own (copies: a test file is
// no package's to import).
var t0 = simtest.T0

func lesson(steps string) string {
	return "title: T\nsummary: S\nsteps:\n" + steps
}

const okStep = `  - title: a
    text: b
    action:
      kubectl: kubectl -n echo-shell get ec
      play:
        - set_replicas: {name: hello, replicas: 3}
    check:
      echo_status: {style: all, name: hello, ready: 3/3}
    hint: h
`

func predictStep(choices, answer string) string {
	s := okStep + "    predict:\n      question: Which style repairs first?\n      choices: " + choices + "\n"
	if answer != "" {
		s += "      answer: " + answer + "\n"
	}
	return s
}
