package runner

import (
	"strings"
	"testing"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/world"
)

// The baseline holds the student's operator only to the sample's spec: the
// starter writes no status and owns nothing.
func TestBaselineOperator(t *testing.T) {
	mine := style.Style("mine")
	view := func(ready string, replicas int32, orphan bool) *world.NamespaceView {
		ns := &world.NamespaceView{Echoes: map[string]*world.EchoView{sandbox.SampleName: {
			Name: sandbox.SampleName, Message: sandbox.SampleMessage, Replicas: replicas, Ready: ready,
			Deployment: &world.DeploymentView{Name: "echo-hello", Replicas: 2, ReadyReplicas: 2},
		}}}
		if orphan {
			ns.Orphans = []*world.DeploymentView{{Name: "echo-gone"}}
		}
		return ns
	}
	tests := []struct {
		name string
		st   style.Style
		ns   *world.NamespaceView
		want string // "" if it holds
	}{
		{"built-in at 2/2", style.Shell, view("2/2", 2, false), ""},
		{"built-in with no status", style.Shell, view("", 2, false), `shell: hello is "hello from rlab", 2 replicas, ready ""`},
		{"built-in with an orphan", style.Shell, view("2/2", 2, true), "shell: orphaned Deployment echo-gone"},
		{"operator with no status", mine, view("", 2, false), ""},
		{"operator with an orphan", mine, view("", 2, true), ""},
		{"operator's sample scaled", mine, view("", 4, false), "mine: hello is"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sn := world.Snapshot{Namespaces: map[string]*world.NamespaceView{tt.st.Namespace(): tt.ns}}
			ok, why := Baseline(sn, []string{tt.st.Source("a")}, []style.Style{tt.st}, func(style.Style) []string { return []string{"a"} })
			if ok != (tt.want == "") || !strings.Contains(why, tt.want) {
				t.Errorf("Baseline = %v, %q, want %q", ok, why, tt.want)
			}
		})
	}
}
