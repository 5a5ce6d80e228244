package checks

import (
	"slices"
	"testing"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/sim/feature/check"
)

// The course's copy of rlab check's checks is sim/feature/check's.
func TestRlabChecks(t *testing.T) {
	var want []lessons.RlabCheck
	for _, c := range check.All() {
		want = append(want, lessons.RlabCheck{ID: c.ID, Replicated: c.Replicated})
	}
	if !slices.Equal(lessons.RlabChecks, want) {
		t.Errorf("lessons.RlabChecks = %v, sim/feature/check has %v", lessons.RlabChecks, want)
	}
}
