package proxy

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/cluster/clustertest"
	"github.com/kkloud/rlab/sim/simtest"
)

// TestRealUnchangedWrites: through the proxy, against the real apiserver,
// in each content type client-go speaks, an update that sends a Deployment
// spec without the apiserver's defaults changes nothing and is traced as
// unchanged, naming the defaults it left out; a patch that sets what is
// there is unchanged too; an update or a patch that changes something is
// not.
func TestRealUnchangedWrites(t *testing.T) {
	simtest.NeedsControlPlane(t)
	<-real.ready
	if real.err != nil {
		t.Fatal(real.err)
	}
	admin := kubernetes.NewForConfigOrDie(real.env.Config())
	for _, ct := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		t.Run(ct, func(t *testing.T) {
			ns := clustertest.Namespace(t, admin, "unchanged")
			events := &sink{}
			p, err := Start(Options{Name: "clientgo/a", Upstream: real.env.Config(), Publish: events.Publish, Log: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close() })
			cfg := clientConfig(t, p, ns)
			cfg.ContentType = ct
			cs := kubernetes.NewForConfigOrDie(cfg)
			deps := cs.AppsV1().Deployments(ns)

			// The whole spec, as the kubebuilder book builds one: no strategy,
			// no revisionHistoryLimit, no terminationMessagePath.
			spec := func(n int32) appsv1.DeploymentSpec {
				labels := map[string]string{"app": "echo"}
				return appsv1.DeploymentSpec{Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "echo", Image: "echo:1"}}}}}
			}
			cms := cs.CoreV1().ConfigMaps(ns)
			if _, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "book"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err = deps.Create(t.Context(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "book"}, Spec: spec(1)}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// update sets the spec on the latest Deployment, as an operator
			// does on what its cache holds; the deployment controller writes
			// the status meanwhile, so a conflict is tried again.
			update := func(n int32) error {
				return retry.RetryOnConflict(retry.DefaultRetry, func() error {
					cur, err := deps.Get(t.Context(), "book", metav1.GetOptions{})
					if err != nil {
						return err
					}
					cur.Spec = spec(n)
					_, err = deps.Update(t.Context(), cur, metav1.UpdateOptions{})
					return err
				})
			}
			steps := []struct {
				name      string
				write     func() error
				verb      string
				unchanged bool
				differed  []string // among the fields named
			}{
				{name: "update with the whole spec again", verb: "update", unchanged: true,
					differed: []string{"spec.progressDeadlineSeconds", "spec.revisionHistoryLimit", "spec.strategy"},
					write:    func() error { return update(1) }},
				{name: "update that scales", verb: "update", write: func() error { return update(2) }},
				// A patch is judged against the version the proxy last saw:
				// kubectl apply's get, here. A ConfigMap, which no controller
				// writes between the two.
				{name: "patch with what is there", verb: "patch", unchanged: true, write: func() error {
					if _, err := cms.Get(t.Context(), "book", metav1.GetOptions{}); err != nil {
						return err
					}
					_, err := cms.Patch(t.Context(), "book", types.MergePatchType, []byte(`{"data":{"k":"v"}}`), metav1.PatchOptions{})
					return err
				}},
				{name: "patch that changes", verb: "patch", write: func() error {
					_, err := cms.Patch(t.Context(), "book", types.MergePatchType, []byte(`{"data":{"k":"w"}}`), metav1.PatchOptions{})
					return err
				}},
			}
			for i, s := range steps {
				if err := s.write(); err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				// The last write answered 2xx is the step's (a refused one was
				// tried again).
				ok := func(e trace.Event) bool {
					q, ok := e.Request()
					return ok && (q.Verb == "update" || q.Verb == "patch") && q.Code/100 == 2
				}
				writes := events.waitEvents(t, i+1, ok)
				q, _ := writes[len(writes)-1].Request()
				t.Logf("%s: %s unchanged=%v differed=%q", s.name, q.Verb, q.Unchanged, q.Differed)
				if q.Verb != s.verb || q.Unchanged != s.unchanged {
					t.Errorf("%s: traced %s unchanged=%v, want %s unchanged=%v", s.name, q.Verb, q.Unchanged, s.verb, s.unchanged)
				}
				for _, f := range s.differed {
					if !slices.ContainsFunc(q.Differed, func(d string) bool { return d == f || strings.HasSuffix(d, " more") }) {
						t.Errorf("%s: differed %q, want it to name %s", s.name, q.Differed, f)
					}
				}
				if !s.unchanged && len(q.Differed) > 0 {
					t.Errorf("%s: differed %q on a write that changed something", s.name, q.Differed)
				}
			}
		})
	}
}

// TestDifferedFields: the fields an unchanged update names are where what
// was sent and what came back differ, outermost first, bounded, leaving out
// what the apiserver sets on every write and the part of the object the
// request did not write.
func TestDifferedFields(t *testing.T) {
	tests := []struct {
		name         string
		sent, answer string
		subresource  bool
		want         []string
	}{
		{name: "same", sent: `{"spec":{"a":1}}`, answer: `{"spec":{"a":1}}`},
		{name: "a default left out", sent: `{"spec":{"a":1}}`, answer: `{"spec":{"a":1,"strategy":{"type":"RollingUpdate"}}}`,
			want: []string{"spec.strategy"}},
		{name: "in a list", sent: `{"spec":{"c":[{"name":"x"}]}}`, answer: `{"spec":{"c":[{"name":"x","policy":"File"}]}}`,
			want: []string{"spec.c[0].policy"}},
		{name: "bookkeeping is not a difference",
			sent:   `{"apiVersion":"apps/v1","metadata":{"name":"d","resourceVersion":"1"},"spec":{}}`,
			answer: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","resourceVersion":"1","managedFields":[{}],"generation":2,"uid":"u","creationTimestamp":"t"},"spec":{}}`},
		{name: "status is not the writer's", sent: `{"spec":{},"status":{}}`, answer: `{"spec":{},"status":{"ready":"1/1"}}`},
		{name: "a status write leaves out the spec", subresource: true,
			sent: `{"spec":{},"status":{"ready":"1/1"}}`, answer: `{"spec":{"x":1},"status":{"ready":"1/1","y":2}}`, want: []string{"status.y"}},
		{name: "sent empty", sent: `{"spec":{"strategy":{}}}`, answer: `{"spec":{"strategy":{"type":"RollingUpdate"}}}`, want: []string{"spec.strategy"}},
		{name: "sent but not kept", sent: `{"spec":{"a":1,"b":2}}`, answer: `{"spec":{"a":1}}`, want: []string{"spec.b"}},
		{name: "bounded", sent: `{"spec":{"z":0}}`, answer: `{"spec":{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"z":0}}`,
			want: []string{"spec.a", "spec.b", "spec.c", "spec.d", "2 more"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := differedFields([]byte(tt.sent), []byte(tt.answer), tt.subresource)
			if !slices.Equal(got, tt.want) {
				t.Errorf("differedFields = %q, want %q", got, tt.want)
			}
		})
	}
}
