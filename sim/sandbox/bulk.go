package sandbox

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/style"
)

// SetLabel marks the Echoes CreateEchoes made, with their prefix as value,
// so that DeleteEchoes (or `kubectl delete ec -l`) removes them together.
const SetLabel = "rlab.kkloud.io/set"

// SetName is the name of Echo i (from 1) of the set prefix: prefix-001.
func SetName(prefix string, i int) string { return fmt.Sprintf("%s-%03d", prefix, i) }

// CreateEchoes (rlab's own, for lessons and rlab bench) creates Echoes
// prefix-001 … prefix-<count> in the namespace of each of styles the
// sandbox runs (nil: every style) at once, from several connections, as
// `kubectl apply -f` of one big file would. Each says "<message> <i>".
func (a *Admin) CreateEchoes(ctx context.Context, styles []style.Style, prefix string, count, replicas int, message string) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := 1; i <= count; i++ {
		for _, st := range a.sc.running(styles) {
			g.Go(func() error {
				u := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": echov1.GroupVersion.String(), "kind": echov1.Kind,
					"metadata": map[string]any{"name": SetName(prefix, i), "namespace": a.sc.namespace(st),
						"labels": map[string]any{SetLabel: prefix}},
					"spec": map[string]any{"message": fmt.Sprintf("%s %d", message, i), "replicas": int64(replicas)},
				}}
				_, err := a.sc.echoes(a.admin, st).Create(ctx, u, metav1.CreateOptions{FieldManager: "rlab"})
				return err
			})
		}
	}
	return g.Wait()
}

// DeleteEchoes deletes every Echo of the set prefix in the namespace of
// each of styles the sandbox runs (nil: every style); the garbage collector
// removes their Deployments.
func (a *Admin) DeleteEchoes(ctx context.Context, styles []style.Style, prefix string) error {
	return inStyles(a.sc.running(styles), func(st style.Style) error {
		return a.sc.echoes(a.admin, st).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: SetLabel + "=" + prefix})
	})
}
