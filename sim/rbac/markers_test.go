package rbac

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

func TestMarkers(t *testing.T) {
	src := []byte(`package controller

// +kubebuilder:rbac:groups=kkloud.io,resources=echoes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,resourceNames=echo-registry,verbs=get;update
func Reconcile() {}
`)
	got, err := Markers(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"kkloud.io"}, Resources: []string{"echoes"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"echo-registry"}, Verbs: []string{"get", "update"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Markers = %+v, want %+v", got, want)
	}
	if _, err := Markers([]byte("// +kubebuilder:rbac:groups=x,urls=/metrics,verbs=get\n")); err == nil {
		t.Fatal("an unknown key was accepted")
	}
}
