package sandbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/simtest"
)

// TestNotControlledByUs: the one Step 4 rule of all three styles. A
// Deployment named like an Echo's, that the Echo does not control, is never
// taken over: it keeps its spec and has no owner, the reconcile fails (and
// is retried), and a Warning Event on the Echo says why.
func TestNotControlledByUs(t *testing.T) {
	simtest.NeedsControlPlane(t)
	const name = "squatter"
	ctx := t.Context()
	// A Deployment made by hand in every style's namespace, owned by nobody.
	for _, st := range style.All() {
		theirs := echo.DesiredDeployment(&echov1.Echo{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: sb.Namespace(st)},
			Spec:       echov1.EchoSpec{Message: "made by hand", Replicas: ptr.To[int32](1)},
		}, nil, "by-hand", sb.Cluster().Image())
		theirs.OwnerReferences = nil
		if _, err := sb.Admin().Kube().AppsV1().Deployments(sb.Namespace(st)).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = sb.Student().DeleteEcho(ctx, name)
		for _, st := range style.All() {
			_ = sb.Admin().Kube().AppsV1().Deployments(sb.Namespace(st)).Delete(ctx, echo.DeploymentName(name), metav1.DeleteOptions{})
		}
	})
	if err := sb.Student().CreateEcho(ctx, name, "mine?", 2); err != nil {
		t.Fatal(err)
	}

	for _, st := range style.All() {
		t.Run(st.String(), func(t *testing.T) {
			simtest.Eventually(t, time.Minute, "a Warning "+echo.ReasonNotControlled+" Event on Echo "+name, func(ctx context.Context) (bool, error) {
				evs, err := sb.Admin().Kube().CoreV1().Events(sb.Namespace(st)).List(ctx, metav1.ListOptions{
					FieldSelector: "involvedObject.name=" + name + ",reason=" + echo.ReasonNotControlled})
				if err != nil {
					return false, err
				}
				for _, ev := range evs.Items {
					if ev.Type == corev1.EventTypeWarning && ev.InvolvedObject.Kind == echov1.Kind {
						return true, nil
					}
				}
				return false, fmt.Errorf("%d matching Events", len(evs.Items))
			})
			// The operator has reconciled (and failed) at least once: had it
			// written the Deployment, it would have by now.
			waitEvent(t, st.String()+" reconcile.end error for "+name, func(e trace.Event) bool {
				return e.Kind == trace.ReconcileEnd && e.Namespace == sb.Namespace(st) && e.Object == "Echo/"+name &&
					trace.As[trace.Reconcile](e).Result == trace.ResultError
			})
			d := deployment(t, st, name)
			if len(d.OwnerReferences) != 0 {
				t.Errorf("the Deployment was taken over: ownerReferences %+v", d.OwnerReferences)
			}
			if ptr.Deref(d.Spec.Replicas, 0) != 1 || d.Labels[echo.ManagedByKey] != "by-hand" {
				t.Errorf("the Deployment was changed: replicas %d, managed-by %q", ptr.Deref(d.Spec.Replicas, 0), d.Labels[echo.ManagedByKey])
			}
			if got := getEcho(t, st, name).Status.Ready; got != "" {
				t.Errorf("status.ready = %q, want none written", got)
			}
		})
	}
}
