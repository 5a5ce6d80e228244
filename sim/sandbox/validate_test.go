package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/state"
)

// TestValidate: an option that cannot work is refused before anything
// starts, naming the option, its value and what would work; Start refuses
// it the same way without taking the state dir.
func TestValidate(t *testing.T) {
	mine := []Custom{{Name: "mine", Command: "./op.sh"}}
	for _, tc := range []struct {
		name string
		o    Options
		want *OptionError // nil: valid, or not an option error (other)
		err  string       // the other error's text
	}{
		{name: "zero", o: Options{}},
		{name: "whole seconds", o: Options{ShellInterval: 2 * time.Second, Image: "rlab.local/echo-server:v1", KindImage: "kindest/node:v1.36.0", NamespacePrefix: "rlab-a-", Custom: mine}},
		{name: "negative interval", o: Options{ShellInterval: -time.Second},
			want: &OptionError{"ShellInterval", "-1s", "want a positive duration, e.g. 5s"}},
		{name: "interval below 1s", o: Options{ShellInterval: 500 * time.Millisecond},
			want: &OptionError{"ShellInterval", "500ms", "want whole seconds, at least 1s (rlab gives the shell loop whole seconds), e.g. 5s"}},
		{name: "fractional interval", o: Options{ShellInterval: 1500 * time.Millisecond},
			want: &OptionError{"ShellInterval", "1.5s", "want whole seconds, at least 1s (rlab gives the shell loop whole seconds), e.g. 5s"}},
		{name: "image", o: Options{Image: "echo server"},
			want: &OptionError{"Image", `"echo server"`, "want an image with no spaces, e.g. hashicorp/http-echo:0.2.3"}},
		{name: "node image", o: Options{KindImage: "kindest/Node"},
			want: &OptionError{"KindImage", `"kindest/Node"`, "want an image reference, [HOST[:PORT]/]NAME[:TAG][@DIGEST] with a lower-case NAME, e.g. rlab.local/kind-node:v1.36.3"}},
		{name: "prefix", o: Options{NamespacePrefix: "Alice"}, err: `namespace prefix "Alice" must end with a dash, e.g. "Alice-"`},
		{name: "built-in replicas", o: Options{Styles: []style.Style{style.Runtime}, Replicas: map[style.Style]int{style.Runtime: 6}}, err: "runtime: 6 replicas, want 1 to 5"},
		{name: "custom replicas", o: Options{Custom: []Custom{{Name: "mine", Command: "x", Replicas: 6}}}, err: "operator mine: 6 replicas, want 1 to 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			var oe *OptionError
			switch {
			case tc.want != nil:
				if !errors.As(err, &oe) || *oe != *tc.want {
					t.Fatalf("Validate = %#v, want %#v", err, tc.want)
				}
			case tc.err != "":
				if err == nil || err.Error() != tc.err {
					t.Fatalf("Validate = %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			}
			if tc.want == nil && tc.err == "" {
				return
			}
			root := filepath.Join(t.TempDir(), "state")
			o := tc.o
			o.State = state.Dir{Root: root}
			o.Self = "/nonexistent/rlab"
			if sb, serr := Start(context.Background(), o); sb != nil || serr == nil || serr.Error() != err.Error() {
				t.Errorf("Start = %v, %v; want Validate's error %v", sb, serr, err)
			}
			if _, serr := os.Stat(root); !os.IsNotExist(serr) {
				t.Errorf("Start touched the state dir: %v", serr)
			}
		})
	}
	// Validate fills in no defaults in the caller's options.
	if err := (Options{Custom: mine}).Validate(); err != nil || mine[0].Replicas != 0 || mine[0].Role != "" {
		t.Errorf("Validate = %v and changed the caller's operators: %+v", err, mine[0])
	}
}
