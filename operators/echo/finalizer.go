package echo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The finalizer (--finalizer) guards state that lives outside the owner
// tree: each Echo is listed by name and uid in the namespace's registry
// ConfigMap. The garbage collector cannot know about that entry (nothing
// owns it), so the operator must remove it before the Echo goes, and the
// finalizer makes the apiserver wait for that.
const (
	// Finalizer is the operators' finalizer on an Echo.
	Finalizer = "kkloud.io/echo-registry"
	// RegistryName is the ConfigMap that lists the Echoes: data[name] = uid.
	RegistryName = "echo-registry"
)

// HasFinalizer says whether finalizers holds ours.
func HasFinalizer(finalizers []string) bool { return slices.Contains(finalizers, Finalizer) }

// WithoutFinalizer is finalizers less ours, never nil (a JSON merge patch
// must write [] to empty the list, not null).
func WithoutFinalizer(finalizers []string) []string {
	out := []string{}
	for _, f := range finalizers {
		if f != Finalizer {
			out = append(out, f)
		}
	}
	return out
}

// FinalizersPatch is the JSON merge patch that sets an Echo's finalizers,
// with its resourceVersion as a precondition: if anyone changed the list
// since we read it, the apiserver answers 409 and we read it again.
func FinalizersPatch(resourceVersion string, finalizers []string) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": resourceVersion, "finalizers": finalizers}})
}

// Register lists the Echo in the registry (creating the ConfigMap if it is
// not there yet). Idempotent.
func Register(ctx context.Context, kube kubernetes.Interface, namespace, name, uid string) error {
	cms := kube.CoreV1().ConfigMaps(namespace)
	patch, err := json.Marshal(map[string]any{"data": map[string]string{name: uid}})
	if err != nil {
		return err
	}
	_, err = cms.Patch(ctx, RegistryName, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: RegistryName, Namespace: namespace},
			Data:       map[string]string{name: uid},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) { // another replica or Echo was first: patch it
			_, err = cms.Patch(ctx, RegistryName, types.MergePatchType, patch, metav1.PatchOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("register in %s: %w", RegistryName, err)
	}
	return nil
}

// Unregister removes the Echo's entry from the registry; an entry or
// registry already gone is fine. This is the cleanup the finalizer waits for.
func Unregister(ctx context.Context, kube kubernetes.Interface, namespace, name string) error {
	patch, err := json.Marshal(map[string]any{"data": map[string]any{name: nil}})
	if err != nil {
		return err
	}
	_, err = kube.CoreV1().ConfigMaps(namespace).Patch(ctx, RegistryName, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("unregister from %s: %w", RegistryName, err)
	}
	return nil
}
