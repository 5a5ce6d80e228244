package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
)

// clients are a set of clients: rlab's own (admin), or the student's
// hands (through their proxy, with the same identity behind it).
type clients struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

func newClients(cfg *rest.Config) (*clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "rlab"
	// No client-side limit on rlab's own requests: a bulk create (a lesson's
	// 100 Echoes, rlab bench's 500) must reach the apiserver at once, as one
	// `kubectl apply -f` of a big file does.
	cfg.QPS = -1
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	return &clients{kube: kube, dyn: dyn}, nil
}

// Kube is rlab's own admin client: what it does is not the student's.
func (s *Sandbox) Kube() kubernetes.Interface { return s.admin.kube }

// Echoes is rlab's own (admin) client of a style's Echoes.
func (s *Sandbox) Echoes(st style.Style) dynamic.ResourceInterface { return s.echoes(s.admin, st) }

// Student is the student's hands: the same identity through the proxy
// `rlab env` hands out, so a request made for the student (a key, autoplay,
// `rlab do`) is traced as theirs, like the ones they type.
type Student struct{ s *Sandbox }

// Student acts as the student.
func (s *Sandbox) Student() Student { return Student{s} }

// Echoes is the student's client of a style's Echoes.
func (h Student) Echoes(st style.Style) dynamic.ResourceInterface { return h.s.echoes(h.s.hands, st) }

// everyStyle runs fn for each running style at the same instant, so the
// styles race fairly, and returns the first error (the apiserver's own).
func (s *Sandbox) everyStyle(fn func(st style.Style) error) error { return s.inStyles(s.styles, fn) }

// inStyles runs fn for each of styles at the same instant, as everyStyle.
func (s *Sandbox) inStyles(styles []style.Style, fn func(st style.Style) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	start := make(chan struct{})
	for _, st := range styles {
		wg.Go(func() {
			<-start
			if err := fn(st); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		return errs[0] // the same rejection in every namespace: say it once
	}
	return nil
}

// echoes is c's client of a style's Echoes.
func (s *Sandbox) echoes(c *clients, st style.Style) dynamic.ResourceInterface {
	return c.dyn.Resource(echov1.Resource).Namespace(s.Namespace(st))
}

// patchEcho is c's edit of Echo name's spec in every namespace.
func (s *Sandbox) patchEcho(ctx context.Context, c *clients, name string, spec map[string]any) error {
	return s.everyStyle(func(st style.Style) error {
		_, err := s.echoes(c, st).Patch(ctx, name, types.MergePatchType,
			mustJSON(map[string]any{"spec": spec}), metav1.PatchOptions{FieldManager: "rlab"})
		return err
	})
}

// SetMessage sets spec.message of Echo name in every style's namespace. A
// value the apiserver rejects comes back as its error, and nothing changes.
func (h Student) SetMessage(ctx context.Context, name, message string) error {
	return h.s.patchEcho(ctx, h.s.hands, name, map[string]any{"message": message})
}

// SetReplicasIn is SetReplicas in the namespaces of styles only (all if
// none).
func (h Student) SetReplicasIn(ctx context.Context, styles []style.Style, name string, replicas int) error {
	return h.s.inStyles(h.s.running(styles), func(st style.Style) error {
		_, err := h.s.echoes(h.s.hands, st).Patch(ctx, name, types.MergePatchType,
			mustJSON(map[string]any{"spec": map[string]any{"replicas": replicas}}), metav1.PatchOptions{FieldManager: "rlab"})
		return err
	})
}

// SetMessageIn is SetMessage in the namespaces of styles only (all if
// none).
func (h Student) SetMessageIn(ctx context.Context, styles []style.Style, name, message string) error {
	return h.s.inStyles(h.s.running(styles), func(st style.Style) error {
		_, err := h.s.echoes(h.s.hands, st).Patch(ctx, name, types.MergePatchType,
			mustJSON(map[string]any{"spec": map[string]any{"message": message}}), metav1.PatchOptions{FieldManager: "rlab"})
		return err
	})
}

// SetReplicas sets spec.replicas of Echo name in every style's namespace.
func (h Student) SetReplicas(ctx context.Context, name string, replicas int) error {
	return h.s.patchEcho(ctx, h.s.hands, name, map[string]any{"replicas": replicas})
}

// ResetSample gives the sample Echo its spec from the start again, as rlab
// (not the student) after a lesson.
func (s *Sandbox) ResetSample(ctx context.Context) error {
	return s.patchEcho(ctx, s.admin, SampleName, map[string]any{"replicas": SampleReplicas, "message": SampleMessage})
}

// CreateEcho creates Echo name in every style's namespace, as the student.
func (h Student) CreateEcho(ctx context.Context, name, message string, replicas int) error {
	return h.s.createEcho(ctx, h.s.hands, name, message, replicas)
}

// CreateEchoIn is CreateEcho in the namespaces of styles only (all if
// none), at the same instant.
func (h Student) CreateEchoIn(ctx context.Context, styles []style.Style, name, message string, replicas int) error {
	if len(styles) == 0 {
		return h.CreateEcho(ctx, name, message, replicas)
	}
	return h.s.inStyles(h.s.running(styles), func(st style.Style) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": echov1.GroupVersion.String(), "kind": echov1.Kind,
			"metadata": map[string]any{"name": name, "namespace": h.s.Namespace(st)},
			"spec":     map[string]any{"message": message, "replicas": int64(replicas)},
		}}
		_, err := h.s.echoes(h.s.hands, st).Create(ctx, u, metav1.CreateOptions{FieldManager: "rlab"})
		return err
	})
}

func (s *Sandbox) createEcho(ctx context.Context, c *clients, name, message string, replicas int) error {
	return s.everyStyle(func(st style.Style) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": echov1.GroupVersion.String(), "kind": echov1.Kind,
			"metadata": map[string]any{"name": name, "namespace": s.Namespace(st)},
			"spec":     map[string]any{"message": message, "replicas": int64(replicas)},
		}}
		_, err := s.echoes(c, st).Create(ctx, u, metav1.CreateOptions{FieldManager: "rlab"})
		return err
	})
}

// applySample makes the sample Echo in every namespace at start-up by
// server-side apply, a PATCH, not a create: the apiserver holds every create
// of a custom resource for 2 s while its CRD's Established condition is
// under 2 s old (customresource_handler.go in apiextensions-apiserver, for
// HA apiservers that have not yet seen it), and the sandbox now gets here
// within that, so half the starts waited 2 s for nothing. The object is the
// same; its managedFields say Apply by rlab instead of Update.
func (s *Sandbox) applySample(ctx context.Context) error {
	return s.everyStyle(func(st style.Style) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": echov1.GroupVersion.String(), "kind": echov1.Kind,
			"metadata": map[string]any{"name": SampleName, "namespace": s.Namespace(st)},
			"spec":     map[string]any{"message": SampleMessage, "replicas": int64(SampleReplicas)},
		}}
		_, err := s.echoes(s.admin, st).Apply(ctx, SampleName, u, metav1.ApplyOptions{FieldManager: "rlab", Force: true})
		return err
	})
}

// DeleteEcho deletes Echo name in every style's namespace; garbage
// collection, not the operators, removes its Deployment.
func (h Student) DeleteEcho(ctx context.Context, name string) error {
	return h.s.everyStyle(func(st style.Style) error {
		return h.Echoes(st).Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// DeleteEchoOrphan deletes Echo name in every style's namespace the way
// `kubectl delete --cascade=orphan` does: the garbage collector removes the
// ownerReferences from its children and leaves them running.
func (h Student) DeleteEchoOrphan(ctx context.Context, name string) error {
	orphan := metav1.DeletePropagationOrphan
	return h.s.everyStyle(func(st style.Style) error {
		return h.Echoes(st).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &orphan})
	})
}

// SetRoleVerbs sets the verbs a style's Role grants on resource (e.g.
// "deployments", "echoes/status"), as an admin editing the Role would;
// style "" is every style. ResetRole undoes it.
func (s *Sandbox) SetRoleVerbs(ctx context.Context, st style.Style, resource string, verbs []string) error {
	return s.editRole(ctx, st, func(st style.Style, role *rbacv1.Role) error {
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
func (s *Sandbox) ResetRole(ctx context.Context, st style.Style) error {
	return s.editRole(ctx, st, func(st style.Style, role *rbacv1.Role) error {
		role.Rules = rules(st)
		return nil
	})
}

// editRole reads the Role of one style, or of every style when only is
// "", has edit change it, and writes it back.
func (s *Sandbox) editRole(ctx context.Context, only style.Style, edit func(style.Style, *rbacv1.Role) error) error {
	return s.forStyles(only, func(st style.Style) error {
		roles := s.admin.kube.RbacV1().Roles(s.Namespace(st))
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

// forStyles runs fn for one style, or for every style when only is "".
func (s *Sandbox) forStyles(only style.Style, fn func(st style.Style) error) error {
	if only == "" {
		return s.everyStyle(fn)
	}
	return fn(only)
}

// DeleteDeployment deletes Echo name's Deployment by hand (drift).
func (h Student) DeleteDeployment(ctx context.Context, only style.Style, name string) error {
	return h.s.forStyles(only, func(st style.Style) error {
		return h.s.hands.kube.AppsV1().Deployments(h.s.Namespace(st)).Delete(ctx, echo.DeploymentName(name), metav1.DeleteOptions{})
	})
}

// ScaleDeployment sets Echo name's Deployment to replicas by hand (drift).
func (h Student) ScaleDeployment(ctx context.Context, only style.Style, name string, replicas int) error {
	return h.s.forStyles(only, func(st style.Style) error {
		_, err := h.s.hands.kube.AppsV1().Deployments(h.s.Namespace(st)).Patch(ctx, echo.DeploymentName(name), types.MergePatchType,
			mustJSON(map[string]any{"spec": map[string]any{"replicas": replicas}}), metav1.PatchOptions{FieldManager: "kubectl-scale"})
		return err
	})
}

// GetDeployment reads Echo name's Deployment, managedFields and all, as
// `kubectl get deploy --show-managed-fields` does.
func (h Student) GetDeployment(ctx context.Context, only style.Style, name string) error {
	return h.s.forStyles(only, func(st style.Style) error {
		_, err := h.s.hands.kube.AppsV1().Deployments(h.s.Namespace(st)).Get(ctx, echo.DeploymentName(name), metav1.GetOptions{})
		return err
	})
}

// SetConfigMap sets data[key] = value of ConfigMap name in one style's
// namespace, or every style's when only is "": created if missing, else
// merge-patched, as kubectl create configmap and kubectl patch do.
func (h Student) SetConfigMap(ctx context.Context, only style.Style, name, key, value string) error {
	return h.s.forStyles(only, func(st style.Style) error {
		cms := h.s.hands.kube.CoreV1().ConfigMaps(h.s.Namespace(st))
		_, err := cms.Patch(ctx, name, types.MergePatchType, mustJSON(map[string]any{"data": map[string]any{key: value}}), metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{key: value}}, metav1.CreateOptions{})
		}
		return err
	})
}

// DeleteConfigMap deletes ConfigMap name in one style's namespace, or every
// style's when only is ""; one already gone is no error.
func (h Student) DeleteConfigMap(ctx context.Context, only style.Style, name string) error {
	return h.s.forStyles(only, func(st style.Style) error {
		err := h.s.hands.kube.CoreV1().ConfigMaps(h.s.Namespace(st)).Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// ApplyReplicas server-side applies spec.replicas of Echo name's Deployment
// as field manager manager, as `kubectl apply --server-side
// --field-manager=MANAGER [--force-conflicts]` of a Deployment that says
// only that would: 409 Conflict, unless force, when another manager owns
// the field with another value.
func (h Student) ApplyReplicas(ctx context.Context, only style.Style, name string, replicas int, manager string, force bool) error {
	return h.s.forStyles(only, func(st style.Style) error {
		body := mustJSON(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": echo.DeploymentName(name)}, "spec": map[string]any{"replicas": replicas}})
		_, err := h.s.hands.kube.AppsV1().Deployments(h.s.Namespace(st)).Patch(ctx, echo.DeploymentName(name), types.ApplyPatchType,
			body, metav1.PatchOptions{FieldManager: manager, Force: &force})
		return err
	})
}

// ReviewRules asks, as the student through their proxy, what st's
// ServiceAccount may do in its namespace, the way `kubectl auth can-i
// --list --as=system:serviceaccount:NS:NAME` does: a SelfSubjectRulesReview
// impersonating it.
func (h Student) ReviewRules(ctx context.Context, st style.Style) (*authorizationv1.SubjectRulesReviewStatus, error) {
	cfg := rest.CopyConfig(h.s.youConfig)
	cfg.UserAgent = "rlab"
	cfg.Impersonate.UserName = serviceaccount.MakeUsername(h.s.Namespace(st), st.Operator())
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	r, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: h.s.Namespace(st)}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("rules of %s: %w", cfg.Impersonate.UserName, err)
	}
	return &r.Status, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of plain values are passed
	}
	return b
}
