package checks

import "github.com/kkloud/rlab/lessons/lessontest"

// A lesson.yaml around steps, and a step that loads.
var lesson, okStep = lessontest.Lesson, lessontest.OKStep

// withOperator is a lesson of steps that runs the student's operator mine.
func withOperator(steps string) string {
	return lesson(steps) + "operator: {name: mine, starter: starter.sh}\n"
}
