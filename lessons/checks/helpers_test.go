package checks

// What these tests share with lessons' (copies: a test file is no
// package's to import).

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

// withOperator is a lesson of steps that runs the student's operator mine.
func withOperator(steps string) string {
	return lesson(steps) + "operator: {name: mine, starter: starter.sh}\n"
}
