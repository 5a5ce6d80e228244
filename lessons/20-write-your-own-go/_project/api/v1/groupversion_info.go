// Package v1 is the kkloud.io/v1 API of this project: the Echo, as rlab's
// course defines it (rlab installs the CRD; this project only reads and
// writes Echoes).
//
// +kubebuilder:object:generate=true
// +groupName=kkloud.io
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// SchemeGroupVersion is the group and version of every type here, under
	// the name k8s.io/api uses.
	SchemeGroupVersion = schema.GroupVersion{Group: "kkloud.io", Version: "v1"}

	// GroupVersion is the same, under the name kubebuilder's scaffolds use.
	GroupVersion = SchemeGroupVersion

	// SchemeBuilder collects the functions that register this group's types.
	SchemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		metav1.AddToGroupVersion(s, SchemeGroupVersion)
		return nil
	})

	// AddToScheme registers this group's types in a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
