package proxy

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/cluster/clustertest"
	"github.com/kkloud/rlab/sim/simtest"
)

// real is the one control plane of this package. It starts in the
// background while the fake-upstream tests run; TestRealControlPlane waits.
var real struct {
	env   *clustertest.Env
	ready chan struct{}
	err   error
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if code, fast := simtest.FastMain(m); fast {
		return code
	}
	real.ready = make(chan struct{})
	go func() {
		defer close(real.ready)
		real.env, real.err = clustertest.Start(context.Background(), "proxy-test")
	}()
	code := m.Run()
	<-real.ready // never stop a backend that is still starting
	if real.env != nil {
		if err := real.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return code
}

// TestRealControlPlane runs a client-go informer and kubectl through the
// proxy against the real kube-apiserver.
func TestRealControlPlane(t *testing.T) {
	simtest.NeedsControlPlane(t)
	<-real.ready
	if real.err != nil {
		t.Fatal(real.err)
	}
	admin := kubernetes.NewForConfigOrDie(real.env.Config())
	ns := clustertest.Namespace(t, admin, "proxy")

	upstream := configMapReader(t, admin, ns)

	events := &sink{}
	t.Cleanup(func() { events.CheckSchema(t) }) // after Close: every event delivered
	p, err := Start(Options{Name: "clientgo/a", Upstream: upstream, Publish: events.Publish, Log: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	cfg := clientConfig(t, p, ns)
	cfg.ContentType = "" // the real apiserver speaks every format
	cs := kubernetes.NewForConfigOrDie(cfg)

	// An informer through the proxy sees objects created behind its back.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().ConfigMaps().Informer()
	var mu sync.Mutex
	added := map[string]bool{}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			mu.Lock()
			added[cm.Name] = true
			mu.Unlock()
		}
	}}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	t.Cleanup(factory.Shutdown) // after cancel, waits for the informer
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync through the proxy")
	}
	seen := func(name string) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return added[name] }
	}
	create := func(name string) {
		t.Helper()
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("direct")
	simtest.Eventually(t, 20*time.Second, "informer sees ConfigMap/direct", simtest.True(seen("direct")))

	counts := p.Counts()
	t.Logf("counts after informer sync: %v", counts)
	if counts["watch configmaps"] < 1 {
		t.Errorf("counts = %v, want a watch of configmaps", counts)
	}
	// client-go 0.37 has WatchListClient on: the informer streams its initial
	// list over the watch when the server allows it, and LISTs otherwise.
	// A plain List through the proxy is counted as a list either way.
	if _, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := p.Counts()["list configmaps"]; got < 1 {
		t.Errorf("list configmaps = %d after a List", got)
	}
	wev := events.waitEvents(t, 1, isCall("watch", "configmaps"))[0]
	if code := wev.Code(); code != 200 || wev.Namespace != ns || wev.Source != "proxy/clientgo/a" {
		t.Errorf("watch event = %+v", wev)
	}

	// Upstream it is the replica's identity that speaks, not anyone else's:
	// it may not write, and the refusal is counted like any request.
	_, err = cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nope"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("create through the proxy as a reader: %v, want Forbidden", err)
	}
	fev := events.waitEvents(t, 1, isCall("create", "configmaps"))[0]
	if code := fev.Code(); code != 403 || p.Counts()["create configmaps"] != 1 {
		t.Errorf("forbidden create: event %+v, counts %v", fev, p.Counts())
	}

	// kubectl works from the kubeconfig alone, namespace included.
	kcBytes, err := p.Kubeconfig(ns)
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, kcBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), filepath.Join(real.env.Assets, "kubectl"), "--kubeconfig", kc, "get", "configmaps", "-o", "name")
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl through the proxy: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(out.String(), "configmap/direct") {
		t.Errorf("kubectl get configmaps = %q", out.String())
	}
	kev := events.waitEvents(t, 1, func(e trace.Event) bool {
		return isCall("list", "configmaps")(e) && strings.HasPrefix(trace.As[trace.Request](e).UserAgent, "kubectl")
	})[0]
	if kev.Namespace != ns {
		t.Errorf("kubectl list event = %+v", kev)
	}

	// A partition ends the informer's watch and refuses its retries; once
	// healed, it watches again and catches up.
	watches := p.Counts()["watch configmaps"]
	p.SetMode(Refuse)
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "direct", metav1.GetOptions{}); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("get while refused: %v, want 503", err)
	}
	simtest.Eventually(t, 30*time.Second, "informer retries and is refused", simtest.True(func() bool {
		for _, e := range events.matching(isCall("watch", "configmaps")) {
			if c := e.Code(); c == 503 {
				return true
			}
		}
		for _, e := range events.matching(isCall("list", "configmaps")) {
			if c := e.Code(); c == 503 {
				return true
			}
		}
		return false
	}))
	create("during-partition")
	p.SetMode(Normal)
	simtest.Eventually(t, 30*time.Second, "informer sees ConfigMap/during-partition after the partition", simtest.True(seen("during-partition")))
	if got := p.Counts()["watch configmaps"]; got <= watches {
		t.Errorf("watch configmaps = %d, want more than %d after the partition", got, watches)
	}
}

// configMapReader is the replica's own least-privilege identity in ns: it
// may read ConfigMaps there and nothing else.
func configMapReader(t *testing.T, admin kubernetes.Interface, ns string) *rest.Config {
	t.Helper()
	id, err := cluster.ServiceAccount(t.Context(), real.env.Config(), ns, "proxy-test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().Roles(ns).Create(t.Context(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "configmap-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "configmap-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmap-reader"},
		Subjects:   []rbacv1.Subject{id.Subject},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return id.Config
}

// testLogger keeps the proxy's debug log and prints it if the test fails.
func testLogger(t testing.TB) *slog.Logger {
	t.Helper()
	var buf simtest.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("proxy log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// roundTripperFunc adapts a function to http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRealWatchEvents: a client-go watch through the proxy, in each content
// type the real apiserver streams, sees ADDED, MODIFIED and DELETED of a
// ConfigMap, and the proxy publishes each as an api.watch_event.
func TestRealWatchEvents(t *testing.T) {
	simtest.NeedsControlPlane(t)
	<-real.ready
	if real.err != nil {
		t.Fatal(real.err)
	}
	admin := kubernetes.NewForConfigOrDie(real.env.Config())
	ns := clustertest.Namespace(t, admin, "watch")
	upstream := configMapReader(t, admin, ns)

	const (
		jsonStream  = "application/json"
		protoStream = "application/vnd.kubernetes.protobuf;stream=watch"
	)
	tests := []struct {
		name        string
		contentType string // rest.Config ContentType and AcceptContentTypes; "" is client-go's default
		want        []string
	}{
		{"client-go default", "", []string{jsonStream, protoStream}},
		{"json", "application/json", []string{jsonStream}},
		{"protobuf", "application/vnd.kubernetes.protobuf", []string{protoStream}},
	}
	streamed := map[string]bool{}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			events := &sink{}
			t.Cleanup(func() { events.CheckSchema(t) }) // after Close
			p, err := Start(Options{Name: "clientgo/a", Upstream: upstream, Publish: events.Publish, Log: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close() })
			cfg := clientConfig(t, p, ns)
			cfg.ContentType, cfg.AcceptContentTypes = tc.contentType, tc.contentType
			// The media type the watch really streamed, as the client got it.
			var mu sync.Mutex
			var wire []string
			cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
				return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
					res, err := next.RoundTrip(r)
					if err == nil && r.URL.Query().Get("watch") == "true" {
						mu.Lock()
						wire = append(wire, res.Header.Get("Content-Type"))
						mu.Unlock()
					}
					return res, err
				})
			})
			cs := kubernetes.NewForConfigOrDie(cfg)

			w, err := cs.CoreV1().ConfigMaps(ns).Watch(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			mu.Lock()
			if len(wire) != 1 || !slices.Contains(tc.want, wire[0]) {
				t.Fatalf("watch streamed %q, want one of %q", wire, tc.want)
			}
			streamed[wire[0]] = true
			t.Logf("watch streams %s", wire[0])
			mu.Unlock()
			requests := p.Total()

			// What the client itself got, to compare with what the proxy saw.
			name := fmt.Sprintf("watched-%d", i)
			var cmu sync.Mutex
			var client []string
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				for ev := range w.ResultChan() {
					if cm, ok := ev.Object.(*corev1.ConfigMap); ok && cm.Name == name {
						cmu.Lock()
						client = append(client, string(ev.Type))
						cmu.Unlock()
					}
				}
			}()
			clientSaw := func(n int) func() bool {
				return func() bool { cmu.Lock(); defer cmu.Unlock(); return len(client) >= n }
			}

			cm, err := admin.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			simtest.Eventually(t, 20*time.Second, "client sees ADDED", simtest.True(clientSaw(1)))
			cm.Data["k"] = "w"
			if _, err := admin.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			simtest.Eventually(t, 20*time.Second, "client sees MODIFIED", simtest.True(clientSaw(2)))
			if err := admin.CoreV1().ConfigMaps(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			simtest.Eventually(t, 20*time.Second, "client sees DELETED", simtest.True(clientSaw(3)))

			want := []string{"ADDED", "MODIFIED", "DELETED"}
			cmu.Lock()
			if !slices.Equal(client, want) {
				t.Errorf("client saw %v, want %v", client, want)
			}
			cmu.Unlock()
			var got []string
			simtest.Eventually(t, 20*time.Second, "api.watch_event ADDED, MODIFIED, DELETED", simtest.True(func() bool {
				got = got[:0]
				for _, e := range events.matching(isWatchEvent) {
					if e.Object != "ConfigMap/"+name {
						continue
					}
					if e.Namespace != ns || e.Resource() != "configmaps" || e.Source != "proxy/clientgo/a" {
						t.Errorf("watch event = %+v", e)
					}
					got = append(got, trace.As[trace.WatchEvent](e).Type)
				}
				return len(got) >= len(want)
			}))
			if !slices.Equal(got, want) {
				t.Errorf("api.watch_event types of ConfigMap/%s = %v, want %v", name, got, want)
			}
			if p.Total() != requests {
				t.Errorf("total = %d after the watch delivered events, want %d: they are not requests", p.Total(), requests)
			}

			// Close ends the watch and delivers what is queued: every
			// counted event was published, each once.
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			<-drained
			if n, all := p.WatchEvents(), len(events.matching(isWatchEvent)); n < 3 || n != all {
				t.Errorf("WatchEvents = %d, %d api.watch_event events published; want the same, at least 3", n, all)
			}
		})
	}
	if !streamed[jsonStream] || !streamed[protoStream] {
		t.Errorf("watches streamed %v, want both JSON and protobuf", streamed)
	}
}
