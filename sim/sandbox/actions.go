package sandbox

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/proxy"
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

// Student is the student's hands: the same identity through the proxy
// `rlab env` hands out, so a request made for the student (a key, autoplay,
// `rlab do`) is traced as theirs, like the ones they type.
//
// It is the part of the engine that owns the student's proxy and the
// clients through it; StudentAPI holds the same clients for acts on the
// API itself.
type Student struct {
	you   *proxy.Proxy
	hands *clients
	sc    scope
}

// close stops the student's proxy; safe to call more than once.
func (h *Student) close() error {
	if h.you == nil {
		return nil
	}
	err := h.you.Close()
	h.you = nil
	return err
}

// Echoes is the student's client of a style's Echoes.
func (h *Student) Echoes(st style.Style) dynamic.ResourceInterface { return h.sc.echoes(h.hands, st) }

// patchEcho is c's edit of Echo name's spec in every namespace of sc.
func patchEcho(ctx context.Context, sc scope, c *clients, name string, spec map[string]any) error {
	return sc.everyStyle(func(st style.Style) error {
		_, err := sc.echoes(c, st).Patch(ctx, name, types.MergePatchType,
			mustJSON(map[string]any{"spec": spec}), metav1.PatchOptions{FieldManager: "rlab"})
		return err
	})
}

// SetMessage sets spec.message of Echo name in every style's namespace. A
// value the apiserver rejects comes back as its error, and nothing changes.
func (h *Student) SetMessage(ctx context.Context, name, message string) error {
	return patchEcho(ctx, h.sc, h.hands, name, map[string]any{"message": message})
}

// SetReplicasIn is SetReplicas in the namespaces of styles only (all if
// none).
func (h *Student) SetReplicasIn(ctx context.Context, styles []style.Style, name string, replicas int) error {
	return inStyles(h.sc.running(styles), func(st style.Style) error {
		_, err := h.sc.echoes(h.hands, st).Patch(ctx, name, types.MergePatchType,
			mustJSON(map[string]any{"spec": map[string]any{"replicas": replicas}}), metav1.PatchOptions{FieldManager: "rlab"})
		return err
	})
}

// SetMessageIn is SetMessage in the namespaces of styles only (all if
// none).
func (h *Student) SetMessageIn(ctx context.Context, styles []style.Style, name, message string) error {
	return inStyles(h.sc.running(styles), func(st style.Style) error {
		_, err := h.sc.echoes(h.hands, st).Patch(ctx, name, types.MergePatchType,
			mustJSON(map[string]any{"spec": map[string]any{"message": message}}), metav1.PatchOptions{FieldManager: "rlab"})
		return err
	})
}

// SetReplicas sets spec.replicas of Echo name in every style's namespace.
func (h *Student) SetReplicas(ctx context.Context, name string, replicas int) error {
	return patchEcho(ctx, h.sc, h.hands, name, map[string]any{"replicas": replicas})
}

// CreateEcho creates Echo name in every style's namespace, as the student.
func (h *Student) CreateEcho(ctx context.Context, name, message string, replicas int) error {
	return createEcho(ctx, h.sc, h.hands, name, message, replicas)
}

// CreateEchoIn is CreateEcho in the namespaces of styles only (all if
// none), at the same instant.
func (h *Student) CreateEchoIn(ctx context.Context, styles []style.Style, name, message string, replicas int) error {
	if len(styles) == 0 {
		return h.CreateEcho(ctx, name, message, replicas)
	}
	return inStyles(h.sc.running(styles), func(st style.Style) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": echov1.GroupVersion.String(), "kind": echov1.Kind,
			"metadata": map[string]any{"name": name, "namespace": h.sc.namespace(st)},
			"spec":     map[string]any{"message": message, "replicas": int64(replicas)},
		}}
		_, err := h.sc.echoes(h.hands, st).Create(ctx, u, metav1.CreateOptions{FieldManager: "rlab"})
		return err
	})
}

func createEcho(ctx context.Context, sc scope, c *clients, name, message string, replicas int) error {
	return sc.everyStyle(func(st style.Style) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": echov1.GroupVersion.String(), "kind": echov1.Kind,
			"metadata": map[string]any{"name": name, "namespace": sc.namespace(st)},
			"spec":     map[string]any{"message": message, "replicas": int64(replicas)},
		}}
		_, err := sc.echoes(c, st).Create(ctx, u, metav1.CreateOptions{FieldManager: "rlab"})
		return err
	})
}

// DeleteEcho deletes Echo name in every style's namespace; garbage
// collection, not the operators, removes its Deployment.
func (h *Student) DeleteEcho(ctx context.Context, name string) error {
	return h.sc.everyStyle(func(st style.Style) error {
		return h.Echoes(st).Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// DeleteEchoOrphan deletes Echo name in every style's namespace the way
// `kubectl delete --cascade=orphan` does: the garbage collector removes the
// ownerReferences from its children and leaves them running.
func (h *Student) DeleteEchoOrphan(ctx context.Context, name string) error {
	orphan := metav1.DeletePropagationOrphan
	return h.sc.everyStyle(func(st style.Style) error {
		return h.Echoes(st).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &orphan})
	})
}

// DeleteDeployment deletes Echo name's Deployment by hand (drift).
func (h *Student) DeleteDeployment(ctx context.Context, only style.Style, name string) error {
	return h.sc.forStyles(only, func(st style.Style) error {
		return h.hands.kube.AppsV1().Deployments(h.sc.namespace(st)).Delete(ctx, echo.DeploymentName(name), metav1.DeleteOptions{})
	})
}

// ScaleDeployment sets Echo name's Deployment to replicas by hand (drift).
func (h *Student) ScaleDeployment(ctx context.Context, only style.Style, name string, replicas int) error {
	return h.sc.forStyles(only, func(st style.Style) error {
		_, err := h.hands.kube.AppsV1().Deployments(h.sc.namespace(st)).Patch(ctx, echo.DeploymentName(name), types.MergePatchType,
			mustJSON(map[string]any{"spec": map[string]any{"replicas": replicas}}), metav1.PatchOptions{FieldManager: "kubectl-scale"})
		return err
	})
}

// GetDeployment reads Echo name's Deployment, managedFields and all, as
// `kubectl get deploy --show-managed-fields` does.
func (h *Student) GetDeployment(ctx context.Context, only style.Style, name string) error {
	return h.sc.forStyles(only, func(st style.Style) error {
		_, err := h.hands.kube.AppsV1().Deployments(h.sc.namespace(st)).Get(ctx, echo.DeploymentName(name), metav1.GetOptions{})
		return err
	})
}

// SetConfigMap sets data[key] = value of ConfigMap name in one style's
// namespace, or every style's when only is "": created if missing, else
// merge-patched, as kubectl create configmap and kubectl patch do.
func (h *Student) SetConfigMap(ctx context.Context, only style.Style, name, key, value string) error {
	return h.sc.forStyles(only, func(st style.Style) error {
		cms := h.hands.kube.CoreV1().ConfigMaps(h.sc.namespace(st))
		_, err := cms.Patch(ctx, name, types.MergePatchType, mustJSON(map[string]any{"data": map[string]any{key: value}}), metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{key: value}}, metav1.CreateOptions{})
		}
		return err
	})
}

// DeleteConfigMap deletes ConfigMap name in one style's namespace, or every
// style's when only is ""; one already gone is no error.
func (h *Student) DeleteConfigMap(ctx context.Context, only style.Style, name string) error {
	return h.sc.forStyles(only, func(st style.Style) error {
		err := h.hands.kube.CoreV1().ConfigMaps(h.sc.namespace(st)).Delete(ctx, name, metav1.DeleteOptions{})
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
func (h *Student) ApplyReplicas(ctx context.Context, only style.Style, name string, replicas int, manager string, force bool) error {
	return h.sc.forStyles(only, func(st style.Style) error {
		body := mustJSON(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": echo.DeploymentName(name)}, "spec": map[string]any{"replicas": replicas}})
		_, err := h.hands.kube.AppsV1().Deployments(h.sc.namespace(st)).Patch(ctx, echo.DeploymentName(name), types.ApplyPatchType,
			body, metav1.PatchOptions{FieldManager: manager, Force: &force})
		return err
	})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of plain values are passed
	}
	return b
}
