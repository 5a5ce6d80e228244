package echo

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/trace"
)

func sample() *echov1.Echo {
	return &echov1.Echo{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "ns", UID: "u-1"},
		Spec:       echov1.EchoSpec{Message: `say "hi"`, Replicas: ptr.To[int32](3)},
	}
}

func TestDesiredDeployment(t *testing.T) {
	d := DesiredDeployment(sample(), nil, "echo-test", DefaultImage)
	c := d.Spec.Template.Spec.Containers
	switch {
	case d.Name != "echo-hello" || d.Namespace != "ns":
		t.Fatalf("name %s/%s", d.Namespace, d.Name)
	case *d.Spec.Replicas != 3:
		t.Fatalf("replicas %d", *d.Spec.Replicas)
	case len(c) != 1 || len(c[0].Args) != 1 || c[0].Args[0] != `-text=say "hi"`:
		t.Fatalf("containers %+v", c)
	case !metav1.IsControlledBy(d, sample()) || !*d.OwnerReferences[0].BlockOwnerDeletion:
		t.Fatalf("owner %+v", d.OwnerReferences)
	case d.Labels[ManagedByKey] != "echo-test" || d.Spec.Template.Labels[LabelKey] != "hello":
		t.Fatalf("labels %v / %v", d.Labels, d.Spec.Template.Labels)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Fatal("the selector does not select the pod template")
	}
	e := sample()
	e.Spec.Replicas = nil // not defaulted yet
	if got := *DesiredDeployment(e, nil, "x", DefaultImage).Spec.Replicas; got != 1 {
		t.Fatalf("default replicas = %d, want 1", got)
	}
	e.Spec.Replicas = ptr.To[int32](0) // scaled to zero, not unset
	if got := *DesiredDeployment(e, nil, "x", DefaultImage).Spec.Replicas; got != 0 {
		t.Fatalf("replicas 0 = %d, want 0", got)
	}
}

// TestDesiredContainer: whatever the image, it is the one asked for, used
// as it is if the node has it, and Ready means it answers HTTP on its port.
func TestDesiredContainer(t *testing.T) {
	if !strings.Contains(DefaultImage, ":") || strings.HasSuffix(DefaultImage, ":latest") {
		t.Fatalf("DefaultImage %q: want a pinned tag", DefaultImage)
	}
	for _, image := range []string{DefaultImage, "rlab.local/echo-server:v1", "rlab.local/echo-server:latest"} {
		t.Run(image, func(t *testing.T) {
			c := DesiredDeployment(sample(), nil, "x", image).Spec.Template.Spec.Containers[0]
			if c.Image != image {
				t.Errorf("image = %q, want %q", c.Image, image)
			}
			if c.ImagePullPolicy != corev1.PullIfNotPresent {
				t.Errorf("imagePullPolicy = %q, want IfNotPresent even for :latest", c.ImagePullPolicy)
			}
			if len(c.Ports) != 1 || c.Ports[0] != (corev1.ContainerPort{Name: "http", ContainerPort: 5678, Protocol: corev1.ProtocolTCP}) {
				t.Errorf("ports = %+v, want http 5678/TCP", c.Ports)
			}
			p := c.ReadinessProbe
			if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/" || p.HTTPGet.Port != intstr.FromString("http") ||
				p.HTTPGet.Scheme != corev1.URISchemeHTTP {
				t.Fatalf("readinessProbe = %+v, want GET / on port http", p)
			}
			// The apiserver's defaults, spelled out: what is stored is what
			// was asked for.
			if p.TimeoutSeconds != 1 || p.PeriodSeconds != 10 || p.SuccessThreshold != 1 || p.FailureThreshold != 3 {
				t.Errorf("probe timings %d/%d/%d/%d, want the apiserver's defaults 1/10/1/3",
					p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold)
			}
		})
	}
}

func TestDrift(t *testing.T) {
	const image = "rlab.local/echo-server:v1" // configured, not the default
	want := DesiredDeployment(sample(), nil, "x", image)
	tests := []struct {
		name   string
		change func(d *appsv1.Deployment)
		drift  string
	}{
		{"same", func(*appsv1.Deployment) {}, ""},
		{"defaults added by the apiserver", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
			d.Spec.Template.Spec.RestartPolicy = "Always"
		}, ""},
		{"scaled by hand", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To(int32(1)) }, trace.DriftReplicas},
		{"message edited", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Args = []string{"-text=x"} }, trace.DriftMessage},
		{"image edited", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.27" }, trace.DriftImage},
		{"the default image, not the configured one", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = DefaultImage }, trace.DriftImage},
		{"owner removed", func(d *appsv1.Deployment) { d.OwnerReferences = nil }, trace.DriftOwner},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			have := want.DeepCopy()
			tc.change(have)
			if got := Drift(have, want); got != tc.drift {
				t.Fatalf("Drift = %q, want %q", got, tc.drift)
			}
		})
	}
}

func TestReady(t *testing.T) {
	spec := echov1.EchoSpec{Replicas: ptr.To[int32](2)}
	if got := Ready(nil, spec); got != "0/2" {
		t.Fatalf("no deployment: %q", got)
	}
	d := &appsv1.Deployment{Status: appsv1.DeploymentStatus{ReadyReplicas: 2}}
	if got := Ready(d, spec); got != "2/2" {
		t.Fatalf("%q", got)
	}
}
