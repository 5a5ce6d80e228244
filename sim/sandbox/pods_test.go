package sandbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/simtest"
)

// TestPodsAnswer: on kind (of its own or shared) an Echo's pods are real containers. Each answers
// HTTP with the Echo's message, and after a message edit the pods of the new
// template answer with the new one.
func TestPodsAnswer(t *testing.T) {
	simtest.NeedsControlPlane(t)
	if !realPods {
		t.Skip("envtest's pods are kwok's and nothing listens in them; this runs in make test's kind passes")
	}
	const name = "answers"
	ctx := t.Context()
	if err := sb.Student().CreateEcho(ctx, name, "first answer", 2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Student().DeleteEcho(context.Background(), name) })
	for _, st := range style.All() {
		eventually(t, 2*time.Minute, st.String()+" 2/2", converged(st, name, 2, "first answer"))
		simtest.Eventually(t, time.Minute, st.String()+" pods answer the message", podsAnswer(st, name, 2, "first answer"))
	}
	if err := sb.Student().SetMessage(ctx, name, "second answer"); err != nil {
		t.Fatal(err)
	}
	for _, st := range style.All() {
		eventually(t, 2*time.Minute, st.String()+" new message 2/2", converged(st, name, 2, "second answer"))
		simtest.Eventually(t, 2*time.Minute, st.String()+" new pods answer the new message", podsAnswer(st, name, 2, "second answer"))
	}
}

// podsAnswer is true once exactly want Ready pods of Echo name run in st's
// namespace (old ones gone) and each answers msg on its port.
func podsAnswer(st style.Style, name string, want int, msg string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		pods, err := sb.Admin().Kube().CoreV1().Pods(sb.Namespace(st)).List(ctx, metav1.ListOptions{LabelSelector: echo.LabelKey + "=" + name})
		if err != nil {
			return false, err
		}
		if len(pods.Items) != want {
			return false, fmt.Errorf("%d pods, want %d", len(pods.Items), want)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || !podReady(&p) {
				return false, fmt.Errorf("pod %s not Ready yet", p.Name)
			}
			body, err := sb.Admin().Kube().CoreV1().Pods(sb.Namespace(st)).ProxyGet("http", p.Name, "5678", "/", nil).DoRaw(ctx)
			if err != nil {
				return false, fmt.Errorf("pod %s: %w", p.Name, err)
			}
			if got := strings.TrimSpace(string(body)); got != msg {
				return false, fmt.Errorf("pod %s answers %q, want %q", p.Name, got, msg)
			}
		}
		return true, nil
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
