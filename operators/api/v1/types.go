package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group, Version and the resource names of the Echo CRD.
const (
	Group    = "kkloud.io"
	Version  = "v1"
	Kind     = "Echo"
	Plural   = "echoes"
	Singular = "echo"
	Short    = "ec"
)

// WebhookPath is where controller-runtime's builder serves the Echo's
// validating webhook, /validate-<group with dashes>-<version>-<kind>: the
// runtime operator serves it (lesson 19) and the sandbox points the
// ValidatingWebhookConfiguration at it. It lives here, with the group,
// version and kind it is made of, so that the engine need not link the
// operator (and controller-runtime) for one string.
const WebhookPath = "/validate-kkloud-io-v1-echo"

var (
	// GroupVersion is the API group and version of Echo.
	GroupVersion = schema.GroupVersion{Group: Group, Version: Version}
	// Resource is the GroupVersionResource the dynamic client and informers use.
	Resource = GroupVersion.WithResource(Plural)
	// GroupVersionKind is the GVK written into ownerReferences.
	GroupVersionKind = GroupVersion.WithKind(Kind)
)

// MinReplicas and MaxReplicas bound spec.replicas, as the CRD's schema does.
// 0 is an Echo scaled to zero: its Deployment and no pod (lesson 11's
// hundred Echoes, which a shared cluster could not give a pod each).
const (
	MinReplicas = 0
	MaxReplicas = 5
)

// EchoSpec is what the student asks for.
//
// +kubebuilder:validation:XValidation:rule="self.message.size() == 0 || self.message.trim().size() > 0",message="spaces say nothing: write a message, or leave it empty for the namespace default (ConfigMap echo-defaults)",fieldPath=".message"
type EchoSpec struct {
	// Message is what every pod answers (http-echo -text=<message>). Required; empty, the namespace default (ConfigMap echo-defaults).
	Message string `json:"message"`
	// Replicas is the number of pods, 0 to 5; the apiserver defaults it to 1.
	Replicas *int32 `json:"replicas,omitempty"` // a pointer, as Deployment's: an int32's omitempty would drop a 0 from every write, and the apiserver default it back to 1
}

// DeepCopyInto copies the receiver into out.
func (in *EchoSpec) DeepCopyInto(out *EchoSpec) {
	*out = *in
	if in.Replicas != nil {
		out.Replicas = new(int32)
		*out.Replicas = *in.Replicas
	}
}

// EchoStatus is what the operator observed.
type EchoStatus struct {
	// Ready is "<readyReplicas>/<spec.replicas>", e.g. "2/2".
	Ready string `json:"ready,omitempty"`
	// ObservedGeneration is the metadata.generation the operator last
	// reconciled: a reader knows this status is about the current spec only
	// when it equals metadata.generation.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready and Progressing (echo.ConditionReady,
	// echo.ConditionProgressing), one of each type.
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// DeepCopyInto copies the receiver into out.
func (in *EchoStatus) DeepCopyInto(out *EchoStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// Echo asks for a Deployment of http-echo pods that answer with Message.
type Echo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EchoSpec   `json:"spec,omitempty"`
	Status EchoStatus `json:"status,omitempty"`
}

// EchoList is a list of Echo.
type EchoList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Echo `json:"items"`
}

// AddToScheme registers Echo and EchoList in a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Echo{}, &EchoList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// DeepCopyInto copies the receiver into out.
func (in *Echo) DeepCopyInto(out *Echo) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a copy of the receiver.
func (in *Echo) DeepCopy() *Echo {
	if in == nil {
		return nil
	}
	out := new(Echo)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *Echo) DeepCopyObject() runtime.Object { return in.DeepCopy() }

// DeepCopyInto copies the receiver into out.
func (in *EchoList) DeepCopyInto(out *EchoList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Echo, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of the receiver.
func (in *EchoList) DeepCopy() *EchoList {
	if in == nil {
		return nil
	}
	out := new(EchoList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *EchoList) DeepCopyObject() runtime.Object { return in.DeepCopy() }
