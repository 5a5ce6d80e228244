package proxy

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/simtest"
)

// TestForbiddenBodyComesBack: the apiserver refuses a create before reading
// its body. Streamed through the proxy, such a request once (1 in 300, 200 KB
// bodies) left the client waiting for a response body forever; the proxy now
// reads bodies whole before forwarding. Each request must come back Forbidden.
func TestForbiddenBodyComesBack(t *testing.T) {
	simtest.NeedsControlPlane(t)
	<-real.ready
	if real.err != nil {
		t.Fatal(real.err)
	}
	id, err := cluster.ServiceAccount(t.Context(), real.env.Config(), "default", "forbidden-body") // may do nothing at all
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(Options{Name: "forbidden/a", Upstream: id.Config})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	kc, err := p.Kubeconfig("default")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	// The same ServiceAccount's token through a student's proxy (admin
	// behind it), passed through as a foreign credential.
	you, err := Start(Options{Name: "you", Upstream: real.env.Config(), PassForeign: true})
	if err != nil {
		t.Fatal(err)
	}
	defer you.Close()
	foreign := rest.CopyConfig(id.Config)
	foreign.Host, foreign.TLSClientConfig = you.URL(), rest.TLSClientConfig{CAData: you.CAData()}
	tests := []struct {
		name string
		size int
		cfg  *rest.Config
	}{
		{"small", 100, cfg}, {"over one HTTP/2 window", 200_000, cfg},
		{"passed through, small", 100, foreign}, {"passed through, over one HTTP/2 window", 200_000, foreign},
	}
	for _, tc := range tests {
		cs := kubernetes.NewForConfigOrDie(tc.cfg)
		t.Run(tc.name, func(t *testing.T) {
			for i := range 20 {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{GenerateName: "x-"},
					Data:       map[string]string{"v": strings.Repeat("x", tc.size)},
				}, metav1.CreateOptions{})
				cancel()
				if !apierrors.IsForbidden(err) {
					t.Fatalf("request %d: %v, want Forbidden", i, err)
				}
			}
		})
	}
}
