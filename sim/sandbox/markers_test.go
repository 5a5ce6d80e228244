package sandbox

import (
	"os"
	"reflect"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kkloud/rlab/operators/style"
)

// TestRBACMarkersMatchRole: the +kubebuilder:rbac markers a student reads
// above the controller-runtime reconciler are the Role the sandbox grants
// that style, rule for rule.
func TestRBACMarkersMatchRole(t *testing.T) {
	src, err := os.ReadFile("../../operators/runtime/controller.go")
	if err != nil {
		t.Fatal(err)
	}
	var got []rbacv1.PolicyRule
	for _, line := range strings.Split(string(src), "\n") {
		marker, ok := strings.CutPrefix(line, "// +kubebuilder:rbac:")
		if !ok {
			continue
		}
		var r rbacv1.PolicyRule
		for _, kv := range strings.Split(marker, ",") {
			k, v, _ := strings.Cut(kv, "=")
			vals := strings.Split(strings.ReplaceAll(v, `""`, ""), ";")
			switch k {
			case "groups":
				r.APIGroups = vals
			case "resources":
				r.Resources = vals
			case "resourceNames":
				r.ResourceNames = vals
			case "verbs":
				r.Verbs = vals
			default:
				t.Fatalf("marker %q: unknown key %q", marker, k)
			}
		}
		got = append(got, r)
	}
	if want := rules(style.Runtime); !reflect.DeepEqual(got, want) {
		t.Fatalf("markers say\n%+v\nthe Role grants\n%+v", got, want)
	}
}
