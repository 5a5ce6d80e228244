package sandbox

import (
	"slices"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/cluster"
)

// TestReplicaArgsImage: every replica of every style is told the sandbox's
// image, so that all three build the same pods.
func TestReplicaArgsImage(t *testing.T) {
	for _, image := range []string{echo.DefaultImage, "rlab.local/echo-server:v1"} {
		s := &Sandbox{
			opts:        Options{Self: "/bin/rlab", ShellInterval: time.Second, Image: image},
			shellScript: "/run/echo-operator.sh", shellKubectl: "/run/bin/kubectl",
		}
		for _, st := range style.All() {
			for _, r := range Replicas(st) {
				t.Run(image+"/"+st.Source(r), func(t *testing.T) {
					_, args := s.replicaArgs(st, r, "/run/kubeconfig")
					i := slices.Index(args, "--image")
					if i < 0 || i+1 >= len(args) || args[i+1] != image {
						t.Fatalf("args %q, want --image %s", args, image)
					}
				})
			}
		}
	}
}

// kind has a default image of its own.
var _ workloadImager = (*cluster.Kind)(nil)

// kindLike is a backend with a default image of its own, as kind has.
type kindLike struct {
	cluster.Backend
	offline bool
}

func (k kindLike) WorkloadImage(fallback string) string {
	if k.offline {
		return cluster.OfflineEchoServer
	}
	return fallback
}

// TestWorkloadImage: an image asked for wins on every backend; none asked
// for is the backend's default, never empty.
func TestWorkloadImage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend cluster.Backend
		asked   string
		want    string
	}{
		{"envtest", &cluster.Envtest{}, "", echo.DefaultImage},
		{"envtest, asked", &cluster.Envtest{}, "nginx:1.27", "nginx:1.27"},
		{"kind online", kindLike{}, "", echo.DefaultImage},
		{"kind offline", kindLike{offline: true}, "", cluster.OfflineEchoServer},
		{"kind offline, asked", kindLike{offline: true}, "nginx:1.27", "nginx:1.27"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := workloadImage(tc.backend, tc.asked); got != tc.want {
				t.Errorf("workloadImage = %q, want %q", got, tc.want)
			}
		})
	}
}
