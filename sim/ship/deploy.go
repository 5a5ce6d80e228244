package ship

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Env names the operator's pods are told where they run by, as rlab tells
// an operator it runs on this machine (sandbox.EnvWatchNamespace, ...).
const (
	envWatchNamespace = "WATCH_NAMESPACE"
	envPodNamespace   = "POD_NAMESPACE"
	envPodName        = "POD_NAME"
	envImage          = "ECHO_IMAGE"
)

// LabelApp marks the operator's pods: the Deployment's selector.
const LabelApp = "app.kubernetes.io/name"

// DeployOptions describe the operator's Deployment.
type DeployOptions struct {
	Namespace, Name string // the Deployment's
	ServiceAccount  string // its pods run as this
	Image           string // Image.Ref, loaded into the nodes
	Replicas        int32
	Args            []string // the manager's flags, e.g. --leader-elect
	// WatchNamespace is WATCH_NAMESPACE (Namespace if ""); EchoImage
	// ECHO_IMAGE, what the operator's Echo pods run.
	WatchNamespace, EchoImage string
	// APIServerHost and APIServerPort, if set, are where the pods reach the
	// apiserver (KUBERNETES_SERVICE_HOST and _PORT, which client-go's
	// in-cluster config reads): a cluster with no kube-proxy has no route to
	// the kubernetes Service.
	APIServerHost string
	APIServerPort int
	Labels        map[string]string // on the Deployment and its pods
}

// Deployment is the operator's Deployment: kubebuilder's
// config/manager/manager.yaml in shape (non-root, read-only root, no
// privilege escalation, every capability dropped, 10 s to stop), with the
// image that is loaded, never pulled.
func Deployment(o DeployOptions) *appsv1.Deployment {
	labels := map[string]string{LabelApp: o.Name}
	for k, v := range o.Labels {
		labels[k] = v
	}
	watch := o.WatchNamespace
	if watch == "" {
		watch = o.Namespace
	}
	env := []corev1.EnvVar{
		{Name: envWatchNamespace, Value: watch},
		{Name: envPodNamespace, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: envPodName, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: envImage, Value: o.EchoImage},
	}
	if o.APIServerHost != "" {
		env = append(env,
			corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: o.APIServerHost},
			corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: strconv.Itoa(o.APIServerPort)})
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(o.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelApp: o.Name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName:            o.ServiceAccount,
					TerminationGracePeriodSeconds: ptr.To(int64(10)),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            "manager",
						Image:           o.Image,
						ImagePullPolicy: corev1.PullNever,
						Command:         []string{Binary},
						Args:            o.Args,
						Env:             env,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}

// Deploy creates the operator's Deployment, or replaces the spec of one a
// earlier ship left (a new image rolls its pods).
func Deploy(ctx context.Context, cs kubernetes.Interface, o DeployOptions) (*appsv1.Deployment, error) {
	want := Deployment(o)
	ds := cs.AppsV1().Deployments(o.Namespace)
	got, err := ds.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var have *appsv1.Deployment
		if have, err = ds.Get(ctx, o.Name, metav1.GetOptions{}); err == nil {
			have.Labels, have.Spec = want.Labels, want.Spec
			got, err = ds.Update(ctx, have, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: %w", o.Namespace, o.Name, err)
	}
	return got, nil
}
