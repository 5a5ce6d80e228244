package main

import (
	"strings"
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

// TestClusterFlags: a wrong backend or a node image without kind fails
// before anything starts, with a message that says what to do; the
// environment's defaults apply where they mean something.
func TestClusterFlags(t *testing.T) {
	for _, tc := range []struct {
		name             string
		env              map[string]string
		args             []string
		wantErr          string
		backend, kindImg string
		kubeconfig, ctx  string
		prefix           string
	}{
		{name: "default", backend: "envtest"},
		{name: "kind", args: []string{"--backend", "kind"}, backend: "kind"},
		{name: "env backend", env: map[string]string{"RLAB_BACKEND": "kind"}, backend: "kind"},
		{name: "unknown backend", args: []string{"--backend", "docker"}, wantErr: `unknown backend "docker": use envtest, kind or kubeconfig`},
		{name: "kubeconfig", args: []string{"--backend", "kubeconfig", "--kubeconfig", "/k", "--context", "c", "--namespace-prefix", "rlab-x-"},
			backend: "kubeconfig", kubeconfig: "/k", ctx: "c", prefix: "rlab-x-"},
		{name: "env prefix", env: map[string]string{"RLAB_NAMESPACE_PREFIX": "team-"}, args: []string{"--backend", "kubeconfig"}, backend: "kubeconfig", prefix: "team-"},
		{name: "kubeconfig without its backend", args: []string{"--kubeconfig", "/k"}, wantErr: "add --backend kubeconfig"},
		{name: "context without its backend", args: []string{"--backend", "kind", "--context", "c"}, wantErr: "add --backend kubeconfig"},
		{name: "bad prefix", args: []string{"--backend", "kubeconfig", "--namespace-prefix", "Alice"}, wantErr: `--namespace-prefix: namespace prefix "Alice" must end with a dash`},
		{name: "node image on kind", args: []string{"--backend", "kind", "--kind-image", "kindest/node:v1.36.0"}, backend: "kind", kindImg: "kindest/node:v1.36.0"},
		{name: "node image on envtest", args: []string{"--kind-image", "kindest/node:v1.36.0"}, wantErr: "only the kind backend has a node image; add --backend kind"},
		{name: "env node image on envtest", env: map[string]string{"RLAB_KIND_IMAGE": "x"}, backend: "envtest"},
		{name: "env node image on kind", env: map[string]string{"RLAB_KIND_IMAGE": "x"}, args: []string{"--backend", "kind"}, backend: "kind", kindImg: "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"RLAB_BACKEND", "RLAB_KIND_IMAGE", "RLAB_NAMESPACE_PREFIX"} {
				t.Setenv(k, tc.env[k])
			}
			f := &clusterFlags{}
			c := &cobra.Command{Use: "x"}
			f.register(c.Flags())
			if err := c.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			o := launch.Options{}
			err := f.apply(&o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("apply = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Backend.Name != tc.backend || o.KindImage != tc.kindImg {
				t.Errorf("backend %q, node image %q; want %q, %q", o.Backend, o.KindImage, tc.backend, tc.kindImg)
			}
			if o.Kubeconfig != tc.kubeconfig || o.Context != tc.ctx || o.NamespacePrefix != tc.prefix {
				t.Errorf("kubeconfig %q, context %q, prefix %q; want %q, %q, %q", o.Kubeconfig, o.Context, o.NamespacePrefix, tc.kubeconfig, tc.ctx, tc.prefix)
			}
		})
	}
}
