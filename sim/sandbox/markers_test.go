package sandbox

import (
	"os"
	"reflect"
	"testing"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/rbac"
)

// TestRBACMarkersMatchRole: the +kubebuilder:rbac markers a student reads
// above the controller-runtime reconciler are the Role the sandbox grants
// that style, rule for rule.
func TestRBACMarkersMatchRole(t *testing.T) {
	src, err := os.ReadFile("../../operators/runtime/controller.go")
	if err != nil {
		t.Fatal(err)
	}
	got, err := rbac.Markers(src)
	if err != nil {
		t.Fatal(err)
	}
	if want := rules(style.Runtime); !reflect.DeepEqual(got, want) {
		t.Fatalf("markers say\n%+v\nthe Role grants\n%+v", got, want)
	}
}
