package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kkloud/rlab/cmd/rlab/internal/launch"
	"github.com/kkloud/rlab/sim/sandbox"
)

// TestRBACFlags: --rbac loads the roles before anything starts and grants
// them to every custom operator; it refuses what cannot be honoured with
// one error each.
func TestRBACFlags(t *testing.T) {
	dir := t.TempDir()
	role := filepath.Join(dir, "role.yaml")
	if err := os.WriteFile(role, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: manager-role
rules:
- apiGroups: [kkloud.io]
  resources: [echoes]
  verbs: [list, watch]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(f checkFlags, args ...string) ([]sandbox.Custom, error) {
		var o launch.Options
		_, _, err := f.operator(args, &o)
		return o.Custom, err
	}
	up := func(f operatorFlags) ([]sandbox.Custom, error) {
		var o launch.Options
		err := f.apply(&o)
		return o.Custom, err
	}
	tests := []struct {
		name    string
		run     func() ([]sandbox.Custom, error)
		granted int // custom operators granted the role
		err     string
	}{
		{"check", func() ([]sandbox.Custom, error) { return check(checkFlags{Name: "mine", RBAC: role}, "./op.sh") }, 1, ""},
		{"check without --rbac", func() ([]sandbox.Custom, error) { return check(checkFlags{Name: "mine"}, "./op.sh") }, 0, ""},
		{"check a built-in", func() ([]sandbox.Custom, error) { return check(checkFlags{Name: "mine", RBAC: role}, "runtime") }, 0,
			"--rbac grades your own operator: the built-in runtime runs with its own Role"},
		{"check as namespace admin", func() ([]sandbox.Custom, error) {
			return check(checkFlags{Name: "mine", RBAC: role, Role: sandbox.RoleNamespaceAdmin}, "./op.sh")
		}, 0, "--rbac and --operator-role namespace-admin exclude each other"},
		{"check a folder of no roles", func() ([]sandbox.Custom, error) { return check(checkFlags{Name: "mine", RBAC: t.TempDir()}, "./op.sh") }, 0,
			"--rbac: no Role or ClusterRole in"},
		{"up, two operators", func() ([]sandbox.Custom, error) {
			return up(operatorFlags{Operators: []string{"a=./a.sh", "b=./b.sh"}, RBAC: role})
		}, 2, ""},
		{"up, no operator", func() ([]sandbox.Custom, error) { return up(operatorFlags{RBAC: role}) }, 0,
			"no --operator to grant it to"},
		{"up as namespace admin", func() ([]sandbox.Custom, error) {
			return up(operatorFlags{Operators: []string{"a=./a.sh"}, RBAC: role, Role: sandbox.RoleNamespaceAdmin})
		}, 0, "exclude each other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := tt.run()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want it to say %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			granted := 0
			for _, c := range cs {
				if c.RBAC != nil {
					granted++
					if len(c.RBAC.Cluster) != 1 || c.RBAC.Cluster[0].Name != "manager-role" {
						t.Errorf("%s granted %+v, want ClusterRole manager-role", c.Name, c.RBAC)
					}
				}
			}
			if granted != tt.granted {
				t.Errorf("%d operators granted the role, want %d", granted, tt.granted)
			}
		})
	}
}
