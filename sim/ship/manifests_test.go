package ship

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const markersGo = `package controller

// +kubebuilder:rbac:groups=kkloud.io,resources=echoes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create
func Reconcile() {}
`

// roleYAML is what controller-gen writes for markersGo: rules merged and
// sorted its way.
const roleYAML = `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: manager-role
rules:
- apiGroups:
  - apps
  resources:
  - deployments
  verbs:
  - create
  - get
  - list
  - watch
- apiGroups:
  - kkloud.io
  resources:
  - echoes
  verbs:
  - get
  - list
  - watch
`

func TestCheckManifests(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string // in the error; "" passes
	}{
		{"generated", map[string]string{"internal/c.go": markersGo, RBACDir + "/role.yaml": roleYAML, CRDFile: "kind: CustomResourceDefinition\n"}, ""},
		{"a marker in a test or a _ folder counts not", map[string]string{"internal/c.go": markersGo, "internal/c_test.go": strings.ReplaceAll(markersGo, "create", "delete"),
			"_steps/x/c.go": strings.ReplaceAll(markersGo, "create", "patch"), RBACDir + "/role.yaml": roleYAML, CRDFile: "x"}, ""},
		{"no role", map[string]string{"internal/c.go": markersGo, CRDFile: "x"}, "controller-gen@v0.23.0 rbac:roleName=manager-role"},
		{"a marker added since", map[string]string{"internal/c.go": markersGo + "// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=delete\n",
			RBACDir + "/role.yaml": roleYAML, CRDFile: "x"}, "the markers ask for delete apps/deployments, which it lacks"},
		{"a verb granted beyond the markers", map[string]string{"internal/c.go": strings.ReplaceAll(markersGo, "get;list;watch;create", "get;list;watch"),
			RBACDir + "/role.yaml": roleYAML, CRDFile: "x"}, "it grants create apps/deployments, which no marker asks for"},
		{"no CRD", map[string]string{"internal/c.go": markersGo, RBACDir + "/role.yaml": roleYAML}, "no " + CRDFile},
		{"no marker", map[string]string{"internal/c.go": "package controller\n", RBACDir + "/role.yaml": roleYAML}, "no +kubebuilder:rbac marker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for f, body := range tt.files {
				p := filepath.Join(dir, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := CheckManifests(dir)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("CheckManifests: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("CheckManifests = %v, want an error with %q", err, tt.want)
			}
		})
	}
}
