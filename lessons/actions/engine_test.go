package actions

import (
	"testing"

	"github.com/kkloud/rlab/lessons"
	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/sim/sandbox"
)

// The course's copies of the sandbox's names and flags are the sandbox's.
func TestEngineWords(t *testing.T) {
	if lessons.PolicyName != sandbox.PolicyName || lessons.WebhookName != sandbox.WebhookName {
		t.Errorf("lessons names %s and %s, the sandbox %s and %s", lessons.PolicyName, lessons.WebhookName, sandbox.PolicyName, sandbox.WebhookName)
	}
	if lessons.SampleEcho != sandbox.SampleName || lessons.SampleReplicas != sandbox.SampleReplicas || lessons.MaxEchoPods != echov1.MaxReplicas {
		t.Errorf("lessons' sample %s×%d (at most %d pods an Echo), the sandbox's %s×%d (the CRD's %d)",
			lessons.SampleEcho, lessons.SampleReplicas, lessons.MaxEchoPods, sandbox.SampleName, sandbox.SampleReplicas, echov1.MaxReplicas)
	}
	for _, i := range []int{1, 9, 10, 100, 1000} {
		if got, want := lessons.SetName("load", i), sandbox.SetName("load", i); got != want {
			t.Errorf("SetName(load, %d) = %q, the sandbox's %q", i, got, want)
		}
	}
	for _, a := range []Args{
		{},
		{"workers": 10},
		{"qps": float32(100), "burst": 200},
		{"workers": 1, "qps": float32(-1), "burst": 0},
		{"qps": float32(12.5)},
	} {
		if got, want := lessons.TuningWords(a), tuningOf(a).String(); got != want {
			t.Errorf("TuningWords(%v) = %q, the sandbox's %q", a, got, want)
		}
	}
}
