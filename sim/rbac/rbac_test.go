package rbac

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// names lists roles as "Kind/name".
func names(rs []Role) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Kind+"/"+r.Name)
	}
	return out
}

// TestLoad: what a manager is granted, from a kubebuilder config/rbac
// folder (bound roles only: not the user-facing editor, viewer, admin and
// metrics-reader roles), one role file, and a file of roles with no
// bindings.
func TestLoad(t *testing.T) {
	scaffold := filepath.Join("testdata", "kubebuilder", "config", "rbac")
	tests := []struct {
		name              string
		path              string
		cluster, namespcd []string
		rules             int
	}{
		{name: "kubebuilder config/rbac", path: scaffold,
			// In the order of the files' names.
			cluster:  []string{"ClusterRole/metrics-auth-role", "ClusterRole/manager-role"},
			namespcd: []string{"Role/leader-election-role"},
			rules:    4 + 2 + 3},
		{name: "role.yaml alone", path: filepath.Join(scaffold, "role.yaml"),
			cluster: []string{"ClusterRole/manager-role"}, rules: 4},
		{name: "roles with no bindings", path: filepath.Join("testdata", "roles.yaml"),
			cluster: []string{"ClusterRole/echo-reader"}, namespcd: []string{"Role/echo-operator"}, rules: 3},
		{name: "a ClusterRole bound in one namespace", path: filepath.Join("testdata", "rolebinding-clusterrole.yaml"),
			namespcd: []string{"ClusterRole/echo-manager"}, rules: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Load(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(g.Cluster); !slices.Equal(got, tt.cluster) {
				t.Errorf("cluster-wide %v, want %v", got, tt.cluster)
			}
			if got := names(g.Namespaced); !slices.Equal(got, tt.namespcd) {
				t.Errorf("namespaced %v, want %v", got, tt.namespcd)
			}
			if got := len(g.Rules()); got != tt.rules {
				t.Errorf("%d rules, want %d", got, tt.rules)
			}
			if g.Path != tt.path {
				t.Errorf("Path %q, want %q", g.Path, tt.path)
			}
		})
	}
}

// TestLoadRules: the rules come through as written, and each role says
// where it was read.
func TestLoadRules(t *testing.T) {
	g, err := Load(filepath.Join("testdata", "kubebuilder", "config", "rbac"))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(g.Cluster, func(r Role) bool { return r.Name == "manager-role" })
	if i < 0 {
		t.Fatalf("no manager-role in %v", names(g.Cluster))
	}
	m := g.Cluster[i]
	if want := filepath.Join("testdata", "kubebuilder", "config", "rbac", "role.yaml") + ": document 1"; m.Source != want {
		t.Errorf("source %q, want %q", m.Source, want)
	}
	echoes := m.Rules[1]
	if !slices.Equal(echoes.APIGroups, []string{"kkloud.io"}) || !slices.Equal(echoes.Resources, []string{"echoes"}) ||
		!slices.Equal(echoes.Verbs, []string{"create", "delete", "get", "list", "patch", "update", "watch"}) {
		t.Errorf("manager-role rule 2 = %+v", echoes)
	}
	le := g.Namespaced[0].Rules[0]
	if !slices.Equal(le.APIGroups, []string{""}) || !slices.Equal(le.Resources, []string{"configmaps"}) {
		t.Errorf("leader-election-role rule 1 = %+v", le)
	}
}

// TestLoadErrors: one error, naming the file and the document, and what
// to do.
func TestLoadErrors(t *testing.T) {
	bad := func(f string) string { return filepath.Join("testdata", "bad", f) }
	tests := []struct {
		path string
		want []string
	}{
		{bad("yaml.yaml"), []string{bad("yaml.yaml") + ": document 2: not valid YAML"}},
		{bad("missing-role.yaml"), []string{bad("missing-role.yaml") + `: document 2: binds ClusterRole "manager-role", which no file in ` +
			bad("missing-role.yaml") + " declares: add it, or remove the binding"}},
		{bad("no-serviceaccount.yaml"), []string{"no RoleBinding or ClusterRoleBinding binds a ServiceAccount"}},
		{bad("no-role.yaml"), []string{"no Role or ClusterRole in " + bad("no-role.yaml")}},
		{bad("typo.yaml"), []string{bad("typo.yaml") + ": document 1: ClusterRole:", `unknown field "verb"`}},
		{bad("no-verbs.yaml"), []string{bad("no-verbs.yaml") + `: document 2: ClusterRole "manager-role": rule 2: no verbs`}},
		{bad("nonresource-role.yaml"), []string{bad("nonresource-role.yaml") + `: document 1: Role "metrics": rule 1: nonResourceURLs in a Role`}},
		{bad("apiversion.yaml"), []string{bad("apiversion.yaml") + `: document 1: ClusterRole has apiVersion "rbac.authorization.k8s.io/v1beta1": want rbac.authorization.k8s.io/v1`}},
		{bad("binds-role-cluster-wide.yaml"), []string{`document 2: ClusterRoleBinding "manager-rolebinding" binds a Role`}},
		{bad("no-kind.yaml"), []string{bad("no-kind.yaml") + ": document 1: has rules or a roleRef but no kind"}},
		{bad("empty"), []string{"no Role or ClusterRole in " + bad("empty") + ": it has no .yaml or .yml file"}},
		{filepath.Join("testdata", "kubebuilder", "config"), []string{"give --rbac its rbac folder, " + filepath.Join("testdata", "kubebuilder", "config", "rbac")}},
		{bad("absent"), []string{"read RBAC: ", "no such file or directory"}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			g, err := Load(tt.path)
			if err == nil {
				t.Fatalf("Load = %+v, want an error", g)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want it to say %q", err, w)
				}
			}
		})
	}
}
