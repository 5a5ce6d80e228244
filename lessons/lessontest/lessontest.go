// Package lessontest holds what the course's packages' tests share: a
// lesson.yaml around steps, and a step that loads. Test files are no
// package's to import, so the course, its checks and its runners take
// these from here.
package lessontest

// Lesson wraps steps in a valid lesson header (3 lines).
func Lesson(steps string) string {
	return "title: T\nsummary: S\nsteps:\n" + steps
}

// OKStep is a step that loads: an action with a kubectl command and a play,
// a check, a hint.
const OKStep = `  - title: a
    text: b
    action:
      kubectl: kubectl -n echo-shell get ec
      play:
        - set_replicas: {name: hello, replicas: 3}
    check:
      echo_status: {style: all, name: hello, ready: 3/3}
    hint: h
`
