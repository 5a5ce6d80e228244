package checks

import (
	"slices"
	"strings"
	"testing"

	"github.com/kkloud/rlab/lessons"
)

// The checks a lesson can name (lessons' table of their arguments and
// words) and the evaluations here are keyed by the same names.
func TestEveryCheckEvaluated(t *testing.T) {
	names := lessons.CheckNames()
	for _, name := range names {
		if c, ok := checks[name]; !ok || c.eval == nil {
			t.Errorf("check %s: lessons names it, and it has no evaluation here", name)
		}
	}
	for name := range checks {
		if !slices.Contains(names, name) {
			t.Errorf("check %s: evaluated here, and lessons has no arguments and words for it", name)
		}
	}
}

// Every condition of the course evaluates on an empty world, with a detail
// per style it names.
func TestEveryCondEvaluates(t *testing.T) {
	all, err := lessons.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		for _, s := range l.Steps {
			if s.Check == nil {
				continue
			}
			for _, c := range s.Check.Conds {
				o := EvalCond(c, View{})
				for _, st := range c.Args.Styles() {
					if st != "" && !strings.Contains(o.Detail, string(st)+" ") {
						t.Errorf("%s %s on an empty world: %+v, want a detail for %s", l.Dir, c.Kind, o, st)
					}
				}
			}
		}
	}
}
