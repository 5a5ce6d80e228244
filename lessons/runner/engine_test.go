package runner

import (
	"slices"
	"testing"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/sim/backend"
)

// The course's copy of the backends' names is the engine's.
func TestBackendNames(t *testing.T) {
	if !slices.Equal(lessons.BackendNames, backend.Names()) {
		t.Errorf("lessons.BackendNames = %v, sim/backend has %v", lessons.BackendNames, backend.Names())
	}
}
