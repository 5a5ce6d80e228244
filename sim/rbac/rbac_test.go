package rbac

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
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

// TestObjects: where ClusterRoles may hold cluster-wide, each becomes a
// ClusterRole named after the operator's namespace with a binding of the
// same name; on a shared cluster every role becomes a Role in the
// namespace. Every binding binds the operator's identity, and no Role
// carries a non-resource URL.
func TestObjects(t *testing.T) {
	g := &Grant{
		Cluster: []Role{
			{Kind: KindClusterRole, Name: "manager-role", Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"kkloud.io"}, Resources: []string{"echoes"}, Verbs: []string{"list", "watch"}},
				{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
			}},
		},
		Namespaced: []Role{
			{Kind: KindRole, Name: "leader-election-role", Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get"}}}},
			{Kind: KindClusterRole, Name: "manager-role", Rules: []rbacv1.PolicyRule{ // bound by a RoleBinding too
				{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}}}},
		},
	}
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "echo-mine-operator", Namespace: "echo-mine"}
	labels := map[string]string{"app.kubernetes.io/managed-by": "rlab"}
	type role struct {
		name  string
		rules int
	}
	tests := []struct {
		name        string
		clusterWide bool
		cluster     []role // ClusterRoles, each bound by a ClusterRoleBinding of its name
		roles       []role // Roles in echo-mine, each bound by a RoleBinding of its name
	}{
		{"own cluster", true, []role{{"echo-mine:manager-role", 2}}, []role{{"leader-election-role", 1}, {"manager-role", 1}}},
		{"shared cluster", false, nil, []role{{"manager-role", 2}, {"leader-election-role", 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := g.Objects("echo-mine", sa, tt.clusterWide, labels)
			var cluster, roles []role
			for i, cr := range o.ClusterRoles {
				cluster = append(cluster, role{cr.Name, len(cr.Rules)})
				b := o.ClusterRoleBindings[i]
				if b.Name != cr.Name || b.RoleRef.Kind != KindClusterRole || b.RoleRef.Name != cr.Name || !slices.Equal(b.Subjects, []rbacv1.Subject{sa}) {
					t.Errorf("ClusterRoleBinding %+v does not bind %s to %v", b, cr.Name, sa)
				}
				if cr.Labels["app.kubernetes.io/managed-by"] != "rlab" {
					t.Errorf("ClusterRole %s labels %v", cr.Name, cr.Labels)
				}
			}
			if len(o.ClusterRoleBindings) != len(o.ClusterRoles) || len(o.RoleBindings) != len(o.Roles) {
				t.Fatalf("%d ClusterRoles, %d bindings; %d Roles, %d bindings", len(o.ClusterRoles), len(o.ClusterRoleBindings), len(o.Roles), len(o.RoleBindings))
			}
			for i, r := range o.Roles {
				roles = append(roles, role{r.Name, len(r.Rules)})
				if r.Namespace != "echo-mine" {
					t.Errorf("Role %s in %q, want echo-mine", r.Name, r.Namespace)
				}
				for _, rule := range r.Rules {
					if len(rule.NonResourceURLs) > 0 {
						t.Errorf("Role %s grants %v: a Role cannot", r.Name, rule.NonResourceURLs)
					}
				}
				b := o.RoleBindings[i]
				if b.Name != r.Name || b.Namespace != "echo-mine" || b.RoleRef.Kind != KindRole || b.RoleRef.Name != r.Name || !slices.Equal(b.Subjects, []rbacv1.Subject{sa}) {
					t.Errorf("RoleBinding %+v does not bind %s to %v", b, r.Name, sa)
				}
			}
			if !slices.Equal(cluster, tt.cluster) || !slices.Equal(roles, tt.roles) {
				t.Errorf("ClusterRoles %v, Roles %v; want %v, %v", cluster, roles, tt.cluster, tt.roles)
			}
		})
	}
}
