package backend

import (
	"testing"

	"github.com/kkloud/rlab/sim/assets"
)

// TestParse: "" is the default, every backend parses by its name, and an
// unknown name says which there are.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Backend
	}{{"", Envtest}, {"envtest", Envtest}, {"kind", Kind}, {"kubeconfig", Kubeconfig}} {
		if got, err := Parse(tc.name); err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	_, err := Parse("docker")
	if want := `unknown backend "docker": use envtest, kind or kubeconfig`; err == nil || err.Error() != want {
		t.Errorf("Parse(docker) = %v, want %q", err, want)
	}
}

// TestLabelTitle: what the screen and the reports say of each backend,
// the zero Backend being the default.
func TestLabelTitle(t *testing.T) {
	kind := "kind " + KindVersion()
	for _, tc := range []struct {
		b            Backend
		label, title string
	}{
		{Backend{}, "envtest", "envtest " + assets.KubeVersion},
		{Envtest, "envtest", "envtest " + assets.KubeVersion},
		{Kind, kind + " · Kubernetes", kind},
		{Kubeconfig, "existing cluster · Kubernetes", "an existing cluster"},
	} {
		if got := tc.b.Label(); got != tc.label {
			t.Errorf("%v.Label() = %q, want %q", tc.b, got, tc.label)
		}
		if got := tc.b.Title(); got != tc.title {
			t.Errorf("%v.Title() = %q, want %q", tc.b, got, tc.title)
		}
	}
}

// TestUsage: --backend's help lists every backend in screen order.
func TestUsage(t *testing.T) {
	want := "envtest (local binaries, no Docker), kind (real kubelet and containers; needs Docker) or kubeconfig (an existing cluster, shared)"
	if got := Usage(); got != want {
		t.Errorf("Usage() = %q, want %q", got, want)
	}
}
