package sandbox

import (
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/style"
)

// Admin is the part of the engine that acts as rlab itself, with its own
// (admin) clients: what it does is not the student's. Lessons set their
// stage and clean up with it (sets of Echoes, the Role, the sample, the
// cluster-wide objects a lesson left), and rlab bench loads the cluster.
type Admin struct {
	admin *clients
	sc    scope
	// shared says the cluster outlives the sandbox: cluster-wide objects
	// there are not rlab's to delete.
	shared bool
}

// Kube is rlab's own admin client: what it does is not the student's.
func (a *Admin) Kube() kubernetes.Interface { return a.admin.kube }

// Echoes is rlab's own (admin) client of a style's Echoes.
func (a *Admin) Echoes(st style.Style) dynamic.ResourceInterface { return a.sc.echoes(a.admin, st) }

// ResetSample gives the sample Echo its spec from the start again, as rlab
// (not the student) after a lesson.
func (a *Admin) ResetSample(ctx context.Context) error {
	return patchEcho(ctx, a.sc, a.admin, SampleName, map[string]any{"replicas": SampleReplicas, "message": SampleMessage})
}

// applySample makes the sample Echo in every namespace at start-up by
// server-side apply, a PATCH, not a create: the apiserver holds every create
// of a custom resource for 2 s while its CRD's Established condition is
// under 2 s old (customresource_handler.go in apiextensions-apiserver, for
// HA apiservers that have not yet seen it), and the sandbox now gets here
// within that, so half the starts waited 2 s for nothing. The object is the
// same; its managedFields say Apply by rlab instead of Update.
func (a *Admin) applySample(ctx context.Context) error {
	return a.sc.everyStyle(func(st style.Style) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": echov1.GroupVersion.String(), "kind": echov1.Kind,
			"metadata": map[string]any{"name": SampleName, "namespace": a.sc.namespace(st)},
			"spec":     map[string]any{"message": SampleMessage, "replicas": int64(SampleReplicas)},
		}}
		_, err := a.sc.echoes(a.admin, st).Apply(ctx, SampleName, u, metav1.ApplyOptions{FieldManager: "rlab", Force: true})
		return err
	})
}

// SetRoleVerbs sets the verbs a style's Role grants on resource (e.g.
// "deployments", "echoes/status"), as an admin editing the Role would;
// style "" is every style. ResetRole undoes it.
func (a *Admin) SetRoleVerbs(ctx context.Context, st style.Style, resource string, verbs []string) error {
	return a.editRole(ctx, st, func(st style.Style, role *rbacv1.Role) error {
		found := false
		for i, r := range role.Rules {
			if slices.Contains(r.Resources, resource) {
				role.Rules[i].Verbs, found = slices.Clone(verbs), true
			}
		}
		if !found {
			return fmt.Errorf("the Role of %s has no rule for %s", st, resource)
		}
		return nil
	})
}

// ResetRole gives a style's Role back its least-privilege rules; style ""
// is every style.
func (a *Admin) ResetRole(ctx context.Context, st style.Style) error {
	return a.editRole(ctx, st, func(st style.Style, role *rbacv1.Role) error {
		role.Rules = rules(st)
		return nil
	})
}

// editRole reads the Role of one style, or of every style when only is
// "", has edit change it, and writes it back.
func (a *Admin) editRole(ctx context.Context, only style.Style, edit func(style.Style, *rbacv1.Role) error) error {
	return a.sc.forStyles(only, func(st style.Style) error {
		roles := a.admin.kube.RbacV1().Roles(a.sc.namespace(st))
		role, err := roles.Get(ctx, RoleName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("role of %s: %w", st, err)
		}
		if err := edit(st, role); err != nil {
			return err
		}
		_, err = roles.Update(ctx, role, metav1.UpdateOptions{})
		return err
	})
}
