// Package rbac reads the RBAC an operator's project declares for its manager
// (a kubebuilder or operator-sdk config/rbac folder, or a role file), so
// that rlab can grant an operator its own permissions instead of the
// course's Role, and grade it against them. It only reads files; the
// sandbox grants.
package rbac

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Kinds the loader reads; any other kind is skipped.
const (
	KindRole               = "Role"
	KindClusterRole        = "ClusterRole"
	KindRoleBinding        = "RoleBinding"
	KindClusterRoleBinding = "ClusterRoleBinding"
)

// Grant is what a project's RBAC gives its manager.
type Grant struct {
	// Path is where it was read from.
	Path string
	// Cluster are the ClusterRoles granted cluster-wide: bound by a
	// ClusterRoleBinding to a ServiceAccount (or, in a file with no
	// bindings at all, every ClusterRole).
	Cluster []Role
	// Namespaced are the roles granted in the manager's own namespace:
	// Roles, and ClusterRoles bound by a RoleBinding.
	Namespaced []Role
}

// Role is one declared Role or ClusterRole.
type Role struct {
	Kind   string // KindRole or KindClusterRole, as declared
	Name   string
	Source string // "config/rbac/role.yaml: document 1"
	Rules  []rbacv1.PolicyRule
}

// Rules are every rule of the grant, cluster-wide and namespaced.
func (g *Grant) Rules() []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range slices.Concat(g.Cluster, g.Namespaced) {
		out = append(out, r.Rules...)
	}
	return out
}

// Load reads path, a folder (its *.yaml and *.yml files, not its
// subfolders; kustomization.yaml is skipped) or one YAML file, each of any
// number of documents, and returns what the manager is granted: the roles
// that the files' RoleBindings and ClusterRoleBindings bind to a
// ServiceAccount, or, where there are no bindings at all, every role. The
// one error names the file and the document, and what to fix.
func Load(path string) (*Grant, error) {
	files, err := yamlFiles(path)
	if err != nil {
		return nil, err
	}
	var (
		roles    []Role
		bindings []binding
	)
	for _, f := range files {
		r, b, err := readFile(f)
		if err != nil {
			return nil, err
		}
		roles = append(roles, r...)
		bindings = append(bindings, b...)
	}
	if len(roles) == 0 {
		return nil, noRoles(path, len(files))
	}
	g := &Grant{Path: path}
	if len(bindings) == 0 {
		// A role file alone: its manager is granted all it declares.
		for _, r := range roles {
			if r.Kind == KindClusterRole {
				g.Cluster = append(g.Cluster, r)
			} else {
				g.Namespaced = append(g.Namespaced, r)
			}
		}
		return g, nil
	}
	// Which roles are bound, and how; listed below in the files' order.
	type ref struct{ kind, name string }
	cluster, namespaced := map[ref]bool{}, map[ref]bool{}
	bound := 0
	for _, b := range bindings {
		if !b.toServiceAccount {
			continue
		}
		bound++
		k := ref{b.ref.Kind, b.ref.Name}
		if !slices.ContainsFunc(roles, func(r Role) bool { return r.Kind == k.kind && r.Name == k.name }) {
			return nil, fmt.Errorf("%s: binds %s %q, which no file in %s declares: add it, or remove the binding", b.source, b.ref.Kind, b.ref.Name, path)
		}
		// A RoleBinding grants even a ClusterRole in its namespace only.
		if b.kind == KindClusterRoleBinding {
			cluster[k] = true
		} else {
			namespaced[k] = true
		}
	}
	if bound == 0 {
		return nil, fmt.Errorf("%s: no RoleBinding or ClusterRoleBinding binds a ServiceAccount: bind your manager's ServiceAccount (role_binding.yaml), or give --rbac the role file alone", path)
	}
	for _, r := range roles {
		k := ref{r.Kind, r.Name}
		if cluster[k] {
			g.Cluster = append(g.Cluster, r)
		}
		if namespaced[k] && !cluster[k] { // cluster-wide holds in its namespace too
			g.Namespaced = append(g.Namespaced, r)
		}
	}
	return g, nil
}

// yamlFiles are the files Load reads at path, sorted.
func yamlFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read RBAC: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("read RBAC: %w", err)
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if e.IsDir() || ext != ".yaml" && ext != ".yml" || isKustomization(name) {
			continue
		}
		files = append(files, filepath.Join(path, name))
	}
	return files, nil // ReadDir sorts by name
}

// isKustomization says whether name is kustomize's own file, which lists
// the others and declares nothing.
func isKustomization(name string) bool {
	base := strings.TrimSuffix(strings.TrimSuffix(name, ".yaml"), ".yml")
	return base == "kustomization" || base == "Kustomization"
}

// noRoles is Load's error for a path that declares no role, with a hint
// when it is a project's config folder rather than its rbac folder.
func noRoles(path string, files int) error {
	if st, err := os.Stat(filepath.Join(path, "rbac")); err == nil && st.IsDir() {
		return fmt.Errorf("no Role or ClusterRole in %s: give --rbac its rbac folder, %s", path, filepath.Join(path, "rbac"))
	}
	if files == 0 {
		return fmt.Errorf("no Role or ClusterRole in %s: it has no .yaml or .yml file", path)
	}
	return fmt.Errorf("no Role or ClusterRole in %s: give --rbac the folder or file that declares your manager's role (config/rbac)", path)
}

// binding is a RoleBinding or ClusterRoleBinding as read.
type binding struct {
	kind             string
	source           string
	ref              rbacv1.RoleRef
	toServiceAccount bool
}

// head is what tells a document's kind.
type head struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Rules      any    `json:"rules"`
	RoleRef    any    `json:"roleRef"`
}

// readFile reads the roles and bindings of one file, document by document.
func readFile(file string) ([]Role, []binding, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("read RBAC: %w", err)
	}
	var (
		roles    []Role
		bindings []binding
	)
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for n := 1; ; n++ {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		source := fmt.Sprintf("%s: document %d", file, n)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", source, err)
		}
		r, b, err := readDoc(doc, source)
		if err != nil {
			return nil, nil, err
		}
		if r != nil {
			roles = append(roles, *r)
		}
		if b != nil {
			bindings = append(bindings, *b)
		}
	}
	return roles, bindings, nil
}

// readDoc reads one document: a role, a binding, or nothing rlab needs.
func readDoc(doc []byte, source string) (*Role, *binding, error) {
	var h head
	if err := yaml.Unmarshal(doc, &h); err != nil {
		return nil, nil, fmt.Errorf("%s: not valid YAML: %w", source, err)
	}
	switch h.Kind {
	case KindRole, KindClusterRole, KindRoleBinding, KindClusterRoleBinding:
	case "":
		if h.Rules != nil || h.RoleRef != nil {
			return nil, nil, fmt.Errorf("%s: has rules or a roleRef but no kind: add kind: ClusterRole, Role, ClusterRoleBinding or RoleBinding", source)
		}
		return nil, nil, nil // a comment, or not a Kubernetes object
	default:
		return nil, nil, nil // a ServiceAccount, a Deployment, ...
	}
	if h.APIVersion != rbacv1.SchemeGroupVersion.String() {
		return nil, nil, fmt.Errorf("%s: %s has apiVersion %q: want %s", source, h.Kind, h.APIVersion, rbacv1.SchemeGroupVersion)
	}
	switch h.Kind {
	case KindRole, KindClusterRole:
		r, err := readRole(doc, h.Kind, source)
		return r, nil, err
	}
	b, err := readBinding(doc, h.Kind, source)
	return nil, b, err
}

// readRole reads and checks a Role or ClusterRole.
func readRole(doc []byte, kind, source string) (*Role, error) {
	// Strict: a misspelt field (verb:, resource:) would grant less than
	// meant, silently.
	var (
		name  string
		rules []rbacv1.PolicyRule
	)
	if kind == KindClusterRole {
		var cr rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict(doc, &cr); err != nil {
			return nil, fmt.Errorf("%s: ClusterRole: %w", source, err)
		}
		if cr.AggregationRule != nil {
			return nil, fmt.Errorf("%s: ClusterRole %q aggregates others (aggregationRule), which rlab cannot grant: list its rules instead", source, cr.Name)
		}
		name, rules = cr.Name, cr.Rules
	} else {
		var r rbacv1.Role
		if err := yaml.UnmarshalStrict(doc, &r); err != nil {
			return nil, fmt.Errorf("%s: Role: %w", source, err)
		}
		name, rules = r.Name, r.Rules
	}
	if name == "" {
		return nil, fmt.Errorf("%s: %s has no metadata.name", source, kind)
	}
	for i, r := range rules {
		if err := checkRule(r, kind); err != nil {
			return nil, fmt.Errorf("%s: %s %q: rule %d: %w", source, kind, name, i+1, err)
		}
	}
	return &Role{Kind: kind, Name: name, Source: source, Rules: rules}, nil
}

// checkRule says what the apiserver would refuse in r, before anything
// starts.
func checkRule(r rbacv1.PolicyRule, kind string) error {
	switch {
	case len(r.Verbs) == 0:
		return errors.New("no verbs: add verbs, e.g. [get, list, watch]")
	case len(r.NonResourceURLs) > 0 && kind == KindRole:
		return errors.New("nonResourceURLs in a Role: only a ClusterRole may grant them")
	case len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.APIGroups) > 0):
		return errors.New("both nonResourceURLs and resources: split it into two rules")
	case len(r.NonResourceURLs) > 0:
		return nil
	case len(r.Resources) == 0:
		return errors.New("no resources: add resources, e.g. [echoes]")
	case len(r.APIGroups) == 0:
		return errors.New(`no apiGroups: add apiGroups, e.g. [kkloud.io], or [""] for the core group`)
	}
	return nil
}

// readBinding reads a RoleBinding or ClusterRoleBinding.
func readBinding(doc []byte, kind, source string) (*binding, error) {
	var (
		name     string
		ref      rbacv1.RoleRef
		subjects []rbacv1.Subject
	)
	if kind == KindClusterRoleBinding {
		var b rbacv1.ClusterRoleBinding
		if err := yaml.UnmarshalStrict(doc, &b); err != nil {
			return nil, fmt.Errorf("%s: ClusterRoleBinding: %w", source, err)
		}
		name, ref, subjects = b.Name, b.RoleRef, b.Subjects
	} else {
		var b rbacv1.RoleBinding
		if err := yaml.UnmarshalStrict(doc, &b); err != nil {
			return nil, fmt.Errorf("%s: RoleBinding: %w", source, err)
		}
		name, ref, subjects = b.Name, b.RoleRef, b.Subjects
	}
	switch {
	case ref.Name == "":
		return nil, fmt.Errorf("%s: %s %q has no roleRef.name: name the role it binds", source, kind, name)
	case ref.Kind != KindClusterRole && ref.Kind != KindRole:
		return nil, fmt.Errorf("%s: %s %q: roleRef.kind %q: want ClusterRole or Role", source, kind, name, ref.Kind)
	case kind == KindClusterRoleBinding && ref.Kind == KindRole:
		return nil, fmt.Errorf("%s: ClusterRoleBinding %q binds a Role: a ClusterRoleBinding binds only a ClusterRole", source, name)
	}
	toSA := slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool { return s.Kind == rbacv1.ServiceAccountKind })
	return &binding{kind: kind, source: source, ref: ref, toServiceAccount: toSA}, nil
}

// ClusterRoleName is the ClusterRole (and ClusterRoleBinding) that grants
// ClusterRole role cluster-wide to the operator in namespace ns, named
// after the namespace so that two operators, or two sandboxes on one
// cluster, cannot clash: "echo-mine:manager-role".
func ClusterRoleName(ns, role string) string { return ns + ":" + role }

// Objects are the RBAC objects that grant a Grant to one identity.
type Objects struct {
	ClusterRoles        []rbacv1.ClusterRole
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	Roles               []rbacv1.Role // in the identity's namespace
	RoleBindings        []rbacv1.RoleBinding
}

// Objects are what grant g to subject, the identity of an operator in
// namespace ns, each object labelled labels. With clusterWide, each of
// g.Cluster becomes ClusterRole ClusterRoleName(ns, name) bound to subject
// by a ClusterRoleBinding of the same name; without, it holds in ns only,
// like every role of g.Namespaced: a Role there of its own name (roles of
// one name merged) with a RoleBinding of the same name. A Role cannot grant
// non-resource URLs (/metrics): those rules are left out of it.
func (g *Grant) Objects(ns string, subject rbacv1.Subject, clusterWide bool, labels map[string]string) Objects {
	var o Objects
	namespaced := g.Namespaced
	if clusterWide {
		for _, r := range g.Cluster {
			name := ClusterRoleName(ns, r.Name)
			meta := metav1.ObjectMeta{Name: name, Labels: labels}
			o.ClusterRoles = append(o.ClusterRoles, rbacv1.ClusterRole{ObjectMeta: meta, Rules: r.Rules})
			o.ClusterRoleBindings = append(o.ClusterRoleBindings, rbacv1.ClusterRoleBinding{ObjectMeta: meta,
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: KindClusterRole, Name: name},
				Subjects: []rbacv1.Subject{subject}})
		}
	} else {
		namespaced = slices.Concat(g.Cluster, g.Namespaced)
	}
	for _, r := range namespaced {
		i := slices.IndexFunc(o.Roles, func(have rbacv1.Role) bool { return have.Name == r.Name })
		if i < 0 {
			meta := metav1.ObjectMeta{Name: r.Name, Namespace: ns, Labels: labels}
			o.Roles = append(o.Roles, rbacv1.Role{ObjectMeta: meta})
			o.RoleBindings = append(o.RoleBindings, rbacv1.RoleBinding{ObjectMeta: meta,
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: KindRole, Name: r.Name},
				Subjects: []rbacv1.Subject{subject}})
			i = len(o.Roles) - 1
		}
		for _, rule := range r.Rules {
			if len(rule.NonResourceURLs) == 0 {
				o.Roles[i].Rules = append(o.Roles[i].Rules, rule)
			}
		}
	}
	return o
}
