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
// operator's namespace (rbac.ClusterRoleName), binds it with a
// ClusterRoleBinding of the same name, and deletes both at Stop. On a
// shared cluster every role holds in the operator's namespace only: its
// rules become a Role there, so that no student's operator reads another's
// Echoes, and rlab makes nothing outside its namespaces.

// grantedObject is an RBAC object the sandbox made for an operator's own
// RBAC that would outlive the sandbox: Stop deletes it.
type grantedObject struct {
	kind, namespace, name string
}

// grantRBAC binds to subject, the identity of the operator in namespace
// ns, what g grants (rbac.Grant.Objects). owned says the sandbox created ns
// (and deletes it whole at Stop on a shared cluster).
func (c *Cluster) grantRBAC(ctx context.Context, ns string, subject rbacv1.Subject, g *rbac.Grant, owned bool) error {
	o := g.Objects(ns, subject, !c.shared, map[string]string{tenancy.LabelManagedBy: tenancy.ManagedByRlab})
	for i, cr := range o.ClusterRoles {
		if err := c.applyClusterRole(ctx, &cr); err != nil {
			return fmt.Errorf("grant %s to %s: %w", g.Cluster[i].Source, subject.Name, err)
		}
		if err := c.applyClusterRoleBinding(ctx, &o.ClusterRoleBindings[i]); err != nil {
			return fmt.Errorf("bind %s to %s: %w", g.Cluster[i].Source, subject.Name, err)
		}
	}
	for i, r := range o.Roles {
		if err := c.applyRole(ctx, &r, !owned); err != nil {
			return fmt.Errorf("grant %s to %s in %s: %w", r.Name, subject.Name, ns, err)
		}
		if err := c.applyRoleBinding(ctx, &o.RoleBindings[i], !owned); err != nil {
			return fmt.Errorf("bind %s to %s in %s: %w", r.Name, subject.Name, ns, err)
		}
	}
	return nil
}

// applyClusterRole creates cr, or resets the rules of one a killed run
// left; Stop deletes it.
func (c *Cluster) applyClusterRole(ctx context.Context, cr *rbacv1.ClusterRole) error {
	crs := c.admin.kube.RbacV1().ClusterRoles()
	name := cr.Name
	_, err := crs.Create(ctx, cr, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var got *rbacv1.ClusterRole
		if got, err = crs.Get(ctx, name, metav1.GetOptions{}); err == nil {
			got.Rules = cr.Rules
			_, err = crs.Update(ctx, got, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("clusterrole %s: %w", name, err)
	}
	c.granted = append(c.granted, grantedObject{kind: "ClusterRole", name: name})
	return nil
}

// applyClusterRoleBinding creates crb, or makes it anew in place of one a
// killed run left; Stop deletes it.
func (c *Cluster) applyClusterRoleBinding(ctx context.Context, crb *rbacv1.ClusterRoleBinding) error {
	crbs := c.admin.kube.RbacV1().ClusterRoleBindings()
	name := crb.Name
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
	c.granted = append(c.granted, grantedObject{kind: "ClusterRoleBinding", name: name})
	return nil
}

// applyRole creates role, or resets the rules of one there; outlives says
// its namespace outlives the sandbox, so Stop deletes the Role.
func (c *Cluster) applyRole(ctx context.Context, role *rbacv1.Role, outlives bool) error {
	ns, name := role.Namespace, role.Name
	roles := c.admin.kube.RbacV1().Roles(ns)
	_, err := roles.Create(ctx, role, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var got *rbacv1.Role
		if got, err = roles.Get(ctx, name, metav1.GetOptions{}); err == nil {
			got.Rules = role.Rules
			_, err = roles.Update(ctx, got, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("role %s: %w", name, err)
	}
	if outlives {
		c.granted = append(c.granted, grantedObject{kind: "Role", namespace: ns, name: name})
	}
	return nil
}

// applyRoleBinding creates rb, or makes it anew in place of one there;
// outlives as for applyRole.
func (c *Cluster) applyRoleBinding(ctx context.Context, rb *rbacv1.RoleBinding, outlives bool) error {
	ns, name := rb.Namespace, rb.Name
	rbs := c.admin.kube.RbacV1().RoleBindings(ns)
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
		c.granted = append(c.granted, grantedObject{kind: "RoleBinding", namespace: ns, name: name})
	}
	return nil
}

// revokeRBAC is Stop's: it deletes what grantRBAC made that would outlive
// the sandbox, bindings first, once the operators are gone.
func (c *Cluster) revokeRBAC() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rb := c.admin.kube.RbacV1()
	var errs []error
	for _, o := range slices.Backward(c.granted) {
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
	c.granted = nil
	return errors.Join(errs...)
}
