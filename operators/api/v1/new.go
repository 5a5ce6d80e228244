package v1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// NewEcho is the Echo namespace/name asking for replicas pods that answer
// message, with its apiVersion and kind set: the dynamic client and the
// unstructured conversion need them, and a typed client ignores them.
func NewEcho(namespace, name, message string, replicas int32) *Echo {
	return &Echo{
		TypeMeta:   metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       EchoSpec{Message: message, Replicas: &replicas},
	}
}

// ToUnstructured is the Echo as the dynamic client takes it.
func (in *Echo) ToUnstructured() (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	if err != nil {
		return nil, fmt.Errorf("echo %s/%s to unstructured: %w", in.Namespace, in.Name, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}
