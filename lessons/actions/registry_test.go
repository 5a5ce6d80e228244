package actions

import (
	"slices"
	"testing"

	"github.com/kkloud/rlab/lessons"
)

// The actions a lesson can play (lessons' table of their arguments and
// words) and the deeds here are keyed by the same names; an action is done
// once or per style, exactly when it takes a style.
func TestEveryActionDone(t *testing.T) {
	names := lessons.ActionNames()
	for _, name := range names {
		a, ok := actions[name]
		styled := lessons.ActionTakesStyle(name)
		if !ok || (a.do == nil) == (a.each == nil) || styled != (a.each != nil) {
			t.Errorf("action %s: want do, or each when it takes a style (styled %v)", name, styled)
		}
	}
	for name := range actions {
		if !slices.Contains(names, name) {
			t.Errorf("action %s: done here, and lessons has no arguments and words for it", name)
		}
	}
}
