package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kkloud/rlab/sim/rbac"
	"github.com/kkloud/rlab/sim/tenancy"
)

// A custom operator graded with its own RBAC (Custom.RBAC) is granted what
// its project declares instead of the course's Role. Where the cluster is
// this sandbox's alone (envtest, kind), a ClusterRole holds cluster-wide as
// it would in a real deployment: rlab makes it a ClusterRole named after the
// operator's namespace (two sandboxes on one cluster cannot clash), binds it
// with a ClusterRoleBinding of the same name, and deletes both at Stop. On a
// shared cluster every role holds in the operator's namespace only: its
// rules become a Role there, so that no student's operator reads another's
// Echoes, and rlab makes nothing outside its namespaces.

// grantedObject is an RBAC object the sandbox made for an operator's own
// RBAC that would outlive the sandbox: Stop deletes it.
type grantedObject struct {
	kind, namespace, name string
}

// ClusterRoleName is the ClusterRole (and ClusterRoleBinding) that grants
// ClusterRole role of the operator in namespace ns cluster-wide:
// "echo-mine:manager-role".
func ClusterRoleName(ns, role string) string { return ns + ":" + role }

// grantRBAC binds to subject, the identity of the operator in namespace
// ns, what g grants. owned says the sandbox created ns (and deletes it
// whole at Stop on a shared cluster).
func (s *Sandbox) grantRBAC(ctx context.Context, ns string, subject rbacv1.Subject, g *rbac.Grant, owned bool) error {
	labels := map[string]string{tenancy.LabelManagedBy: tenancy.ManagedByRlab}
	namespaced := g.Namespaced
	if s.shared {
		namespaced = slices.Concat(g.Cluster, g.Namespaced)
	} else {
		for _, r := range g.Cluster {
			name := ClusterRoleName(ns, r.Name)
			if err := s.applyClusterRole(ctx, name, labels, r.Rules); err != nil {
				return fmt.Errorf("grant %s (%s) to %s: %w", r.Name, r.Source, subject.Name, err)
			}
			if err := s.applyClusterRoleBinding(ctx, name, labels, subject); err != nil {
				return fmt.Errorf("bind %s (%s) to %s: %w", r.Name, r.Source, subject.Name, err)
			}
		}
	}
	// Roles of the same name (a Role and a ClusterRole, on a shared
	// cluster) become one Role.
	var names []string
	rules := map[string][]rbacv1.PolicyRule{}
	for _, r := range namespaced {
		if !slices.Contains(names, r.Name) {
			names = append(names, r.Name)
		}
		rules[r.Name] = append(rules[r.Name], inNamespace(r.Rules)...)
	}
	for _, name := range names {
		if err := s.applyRole(ctx, ns, name, labels, rules[name], !owned); err != nil {
			return fmt.Errorf("grant %s to %s in %s: %w", name, subject.Name, ns, err)
		}
		if err := s.applyRoleBinding(ctx, ns, name, labels, subject, !owned); err != nil {
			return fmt.Errorf("bind %s to %s in %s: %w", name, subject.Name, ns, err)
		}
	}
	return nil
}

// inNamespace are the rules of rs that a Role may hold: a Role cannot
// grant non-resource URLs (/metrics), which are cluster-wide by nature.
func inNamespace(rs []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rs {
		if len(r.NonResourceURLs) == 0 {
			out = append(out, r)
		}
	}
	return out
}

// applyClusterRole creates ClusterRole name with rules, or resets the rules
// of one a killed run left; Stop deletes it.
func (s *Sandbox) applyClusterRole(ctx context.Context, name string, labels map[string]string, rules []rbacv1.PolicyRule) error {
	crs := s.admin.kube.RbacV1().ClusterRoles()
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
	_, err := crs.Create(ctx, cr, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var got *rbacv1.ClusterRole
		if got, err = crs.Get(ctx, name, metav1.GetOptions{}); err == nil {
			got.Rules = rules
			_, err = crs.Update(ctx, got, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("clusterrole %s: %w", name, err)
	}
	s.granted = append(s.granted, grantedObject{kind: "ClusterRole", name: name})
	return nil
}

// applyClusterRoleBinding binds ClusterRole name to subject cluster-wide,
// with a ClusterRoleBinding of the same name; Stop deletes it.
func (s *Sandbox) applyClusterRoleBinding(ctx context.Context, name string, labels map[string]string, subject rbacv1.Subject) error {
	crbs := s.admin.kube.RbacV1().ClusterRoleBindings()
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{subject},
	}
	_, err := crbs.Create(ctx, crb, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// A killed run's: its roleRef cannot change, so make it anew.
		if err = crbs.Delete(ctx, name, metav1.DeleteOptions{}); err == nil || apierrors.IsNotFound(err) {
			_, err = crbs.Create(ctx, crb, metav1.CreateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("clusterrolebinding %s: %w", name, err)
	}
	s.granted = append(s.granted, grantedObject{kind: "ClusterRoleBinding", name: name})
	return nil
}

// applyRole creates Role name in ns with rules, or resets the rules of one
// there; outlives says ns outlives the sandbox, so Stop deletes the Role.
func (s *Sandbox) applyRole(ctx context.Context, ns, name string, labels map[string]string, rules []rbacv1.PolicyRule, outlives bool) error {
	roles := s.admin.kube.RbacV1().Roles(ns)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Rules: rules}
	_, err := roles.Create(ctx, role, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var got *rbacv1.Role
		if got, err = roles.Get(ctx, name, metav1.GetOptions{}); err == nil {
			got.Rules = rules
			_, err = roles.Update(ctx, got, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("role %s: %w", name, err)
	}
	if outlives {
		s.granted = append(s.granted, grantedObject{kind: "Role", namespace: ns, name: name})
	}
	return nil
}

// applyRoleBinding binds Role name in ns to subject with a RoleBinding of
// the same name; outlives as for applyRole.
func (s *Sandbox) applyRoleBinding(ctx context.Context, ns, name string, labels map[string]string, subject rbacv1.Subject, outlives bool) error {
	rbs := s.admin.kube.RbacV1().RoleBindings(ns)
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{subject},
	}
	_, err := rbs.Create(ctx, rb, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		if err = rbs.Delete(ctx, name, metav1.DeleteOptions{}); err == nil || apierrors.IsNotFound(err) {
			_, err = rbs.Create(ctx, rb, metav1.CreateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("rolebinding %s: %w", name, err)
	}
	if outlives {
		s.granted = append(s.granted, grantedObject{kind: "RoleBinding", namespace: ns, name: name})
	}
	return nil
}

// revokeRBAC is Stop's: it deletes what grantRBAC made that would outlive
// the sandbox, bindings first, once the operators are gone.
func (s *Sandbox) revokeRBAC() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rb := s.admin.kube.RbacV1()
	var errs []error
	for _, o := range slices.Backward(s.granted) {
		var err error
		switch o.kind {
		case "ClusterRoleBinding":
			err = rb.ClusterRoleBindings().Delete(ctx, o.name, metav1.DeleteOptions{})
		case "ClusterRole":
			err = rb.ClusterRoles().Delete(ctx, o.name, metav1.DeleteOptions{})
		case "RoleBinding":
			err = rb.RoleBindings(o.namespace).Delete(ctx, o.name, metav1.DeleteOptions{})
		case "Role":
			err = rb.Roles(o.namespace).Delete(ctx, o.name, metav1.DeleteOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s %s: %w", o.kind, o.name, err))
		}
	}
	s.granted = nil
	return errors.Join(errs...)
}
