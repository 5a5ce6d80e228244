// Package echo holds what the three Echo operators share: the desired
// Deployment for an Echo, the status string, and the names and labels they
// all use. Each style calls these; none re-implements them.
package echo

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/trace"
)

const (
	// DefaultImage is the image Echo pods run unless an operator is given
	// another (--image). Tagged: an untagged image means :latest, which is
	// pulled every time and never works offline.
	DefaultImage = "hashicorp/http-echo:0.2.3"
	// ContainerName is its container's name.
	ContainerName = "echo"
	// Port is where the image listens (its -listen default), and PortName
	// the name the readiness probe reaches it by.
	Port     = 5678
	PortName = "http"
	// LabelKey selects an Echo's pods: app.kubernetes.io/instance=<echo name>.
	LabelKey = "app.kubernetes.io/instance"
	// ManagedByKey marks objects an Echo operator created.
	ManagedByKey = "app.kubernetes.io/managed-by"
	// LeaseName is the Lease the Go styles elect their leader on.
	LeaseName = "echo-operator"
	// ReconcileTimeout bounds one reconcile: a request that never answers
	// must fail the reconcile (and be retried) rather than hold the worker,
	// and the key, forever.
	ReconcileTimeout = 30 * time.Second

	// ReasonNotControlled is the reason of the Warning Event an operator
	// records when the Deployment it would create exists and another owner
	// (or nobody) controls it. It never takes such a Deployment over.
	ReasonNotControlled = "ErrResourceExists"
	// MessageNotControlled is that Event's message: Deployment, then Echo.
	MessageNotControlled = "Deployment %q already exists and is not controlled by Echo %q"
)

// DeploymentName is the name of the Deployment an Echo owns: echo-<name>.
func DeploymentName(echoName string) string { return "echo-" + echoName }

// Labels are the labels of an Echo's Deployment and pods; managedBy names the
// operator style.
func Labels(echoName, managedBy string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name": "echo",
		LabelKey:                 echoName,
		ManagedByKey:             managedBy,
	}
}

// Arg is the http-echo argument carrying the message.
func Arg(message string) string { return "-text=" + message }

// Replicas is spec.replicas with the CRD's default applied: 1 when unset.
func Replicas(spec echov1.EchoSpec) int32 { return ptr.Deref(spec.Replicas, 1) }

// OwnerReference is the controller reference from an Echo's children to it.
// Deleting the Echo then deletes them through garbage collection.
func OwnerReference(name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         echov1.GroupVersion.String(),
		Kind:               echov1.Kind,
		Name:               name,
		UID:                uid,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// DesiredDeployment is the Deployment an Echo asks for: spec.replicas pods of
// image answering its Message (spec.message, or the default of defaults, the
// namespace's echo-defaults ConfigMap or nil), owned by the Echo; managedBy
// names the operator style.
func DesiredDeployment(e *echov1.Echo, defaults *corev1.ConfigMap, managedBy, image string) *appsv1.Deployment {
	labels := Labels(e.Name, managedBy)
	selector := map[string]string{LabelKey: e.Name}
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            DeploymentName(e.Name),
			Namespace:       e.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{OwnerReference(e.Name, e.UID)},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(Replicas(e.Spec)),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{container(Message(e.Spec.Message, defaults), image)},
				},
			},
		},
	}
}

// container is the one container of an Echo pod. Every field the apiserver
// would default is spelled out, so what is stored is what was asked for and
// the three styles' Deployments compare equal field by field.
func container(message, image string) corev1.Container {
	return corev1.Container{
		Name:  ContainerName,
		Image: image,
		// Explicit, whatever the tag: an image preloaded into the node (kind,
		// no registry) is used as it is, even one tagged :latest.
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            []string{Arg(message)},
		Ports:           []corev1.ContainerPort{{Name: PortName, ContainerPort: Port, Protocol: corev1.ProtocolTCP}},
		// Ready means the pod answers, not only that its process started.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/", Port: intstr.FromString(PortName), Scheme: corev1.URISchemeHTTP,
			}},
			TimeoutSeconds:   1,
			PeriodSeconds:    10,
			SuccessThreshold: 1,
			FailureThreshold: 3,
		},
	}
}

// Drift says how an existing Deployment differs from what its Echo asks for,
// in the fields an operator owns: "" when it does not.
func Drift(have *appsv1.Deployment, want *appsv1.Deployment) string {
	if have.Spec.Replicas == nil || *have.Spec.Replicas != *want.Spec.Replicas {
		return trace.DriftReplicas
	}
	hc, wc := have.Spec.Template.Spec.Containers, want.Spec.Template.Spec.Containers
	if len(hc) != 1 || len(hc[0].Args) != 1 || hc[0].Args[0] != wc[0].Args[0] {
		return trace.DriftMessage
	}
	// The configured image, not the default: an operator started with
	// --image X repairs any other.
	if hc[0].Image != wc[0].Image {
		return trace.DriftImage
	}
	if !metav1.IsControlledBy(have, &metav1.ObjectMeta{UID: want.OwnerReferences[0].UID}) {
		return trace.DriftOwner
	}
	return ""
}

// Ready is the status an operator writes: "<readyReplicas>/<spec.replicas>".
func Ready(d *appsv1.Deployment, spec echov1.EchoSpec) string {
	ready := int32(0)
	if d != nil {
		ready = d.Status.ReadyReplicas
	}
	return fmt.Sprintf("%d/%d", ready, Replicas(spec))
}
