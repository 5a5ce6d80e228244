package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// EchoSpec is what the user asks for: pods that answer with a message.
type EchoSpec struct {
	// message is what every pod answers (http-echo -text=<message>).
	// +required
	Message string `json:"message"`

	// replicas is the number of pods.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +kubebuilder:default=1
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
}

// EchoStatus is what the controller observed.
type EchoStatus struct {
	// ready is "<ready pods>/<spec.replicas>", e.g. "2/2".
	// +optional
	Ready string `json:"ready,omitempty"`

	// observedGeneration is the metadata.generation this status is about:
	// a reader trusts ready and the conditions only when the two are equal.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Ready (every pod ready) and Progressing (the
	// Deployment still rolling out).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ec
// +kubebuilder:printcolumn:name="MESSAGE",type=string,JSONPath=`.spec.message`
// +kubebuilder:printcolumn:name="REPLICAS",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.ready`

// Echo asks for a Deployment of http-echo pods that answer with spec.message.
type Echo struct {
	metav1.TypeMeta `json:",inline"`

	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// +required
	Spec EchoSpec `json:"spec"`

	// +optional
	Status EchoStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// EchoList is a list of Echo.
type EchoList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Echo `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &Echo{}, &EchoList{})
		return nil
	})
}
