package main

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/kkloud/rlab/cmd/rlab/internal/launch"
)

// TestImageFlag: every command that starts a sandbox takes --image (or
// $RLAB_IMAGE) and hands it to the launcher; none given leaves the choice to
// the backend.
func TestImageFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		args []string
		want string
	}{
		{"none", "", nil, ""},
		{"flag", "", []string{"--image", "rlab.local/echo-server:v1"}, "rlab.local/echo-server:v1"},
		{"env", "nginx:1.27", nil, "nginx:1.27"},
		{"flag over env", "nginx:1.27", []string{"--image", "rlab.local/echo-server:v1"}, "rlab.local/echo-server:v1"},
	} {
		for _, cmd := range []struct {
			name string
			new  func() *cobra.Command
		}{
			{"up", newUpCmd}, {"run", newRunCmd}, {"lesson start", newLessonStartCmd}, {"lesson verify", newLessonVerifyCmd},
		} {
			t.Run(tc.name+"/"+cmd.name, func(t *testing.T) {
				t.Setenv("RLAB_IMAGE", tc.env)
				c := cmd.new()
				if err := c.ParseFlags(tc.args); err != nil {
					t.Fatal(err)
				}
				got := c.Flags().Lookup("image")
				if got == nil {
					t.Fatal("no --image flag")
				}
				if got.Value.String() != tc.want {
					t.Errorf("--image = %q, want %q", got.Value.String(), tc.want)
				}
			})
		}
	}
	o := launch.Options{}
	if err := (clusterFlags{Image: "rlab.local/echo-server:v1"}).apply(&o); err != nil {
		t.Fatal(err)
	}
	if o.Image != "rlab.local/echo-server:v1" {
		t.Errorf("launch.Options.Image = %q after apply, want the flag's", o.Image)
	}
}
