package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/cluster/clustertest"
	"github.com/kkloud/rlab/sim/fault"
	"github.com/kkloud/rlab/sim/simtest"
)

func TestFaultMatches(t *testing.T) {
	get := func(res string) call { return call{verb: "get", resource: res} }
	update := func(res string) call { return call{verb: "update", resource: res} }
	tests := []struct {
		fault string
		c     call
		want  bool
	}{
		{"conflict", update("echoes"), true},
		{"conflict", update("echoes/status"), true},
		{"conflict", call{verb: "create", resource: "deployments"}, false},
		{"conflict", update("leases"), false}, // the lease fault's
		{"conflict", update("events"), false},
		{"conflict,resources=echoes/status", update("echoes"), false},
		{"conflict,resources=echoes", update("echoes/status"), true},
		{"error", call{verb: "delete", resource: "deployments"}, true},
		{"error", get("deployments"), false},
		{"error,verbs=get", get("deployments"), true},
		{"latency:1s", get("configmaps"), true},
		{"latency:1s", call{verb: "get", resource: "discovery"}, false},
		{"latency:1s", call{verb: "get", resource: "/healthz"}, false},
		{"lease:1s", update("leases"), true},
		{"lease:1s", get("leases"), true},
		{"lease:1s", update("echoes"), false},
		{"crash", call{verb: "create", resource: "deployments"}, true},
		{"crash", get("deployments"), false},
	}
	for _, tc := range tests {
		t.Run(tc.fault+" "+tc.c.key(), func(t *testing.T) {
			f, err := fault.Parse(tc.fault)
			if err != nil {
				t.Fatal(err)
			}
			if got := matches(f, tc.c); got != tc.want {
				t.Errorf("%s matches %s = %v, want %v", tc.fault, tc.c.key(), got, tc.want)
			}
		})
	}
}

// TestFaultHits: every Nth, and a seeded probability that repeats.
func TestFaultHits(t *testing.T) {
	c := call{verb: "update", resource: "echoes"}
	hits := func(spec string, n int) []int {
		f, err := fault.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		a := arm(f)
		var out []int
		for i := 1; i <= n; i++ {
			if a.hit(c) {
				out = append(out, i)
			}
		}
		return out
	}
	if got := hits("conflict,n=3", 10); !slices.Equal(got, []int{3, 6, 9}) {
		t.Errorf("n=3 hit %v, want [3 6 9]", got)
	}
	if got := hits("crash,n=2", 10); !slices.Equal(got, []int{2}) {
		t.Errorf("crash n=2 hit %v, want [2]: once", got)
	}
	a, b := hits("conflict,p=0.5,seed=3", 200), hits("conflict,p=0.5,seed=3", 200)
	if !slices.Equal(a, b) {
		t.Error("the same seed hit different requests")
	}
	if len(a) < 70 || len(a) > 130 {
		t.Errorf("p=0.5 hit %d of 200", len(a))
	}
}

// faultFixture is a proxy in front of the real apiserver, as the admin (the
// faults do not depend on who the replica is), and a client through it.
type faultFixture struct {
	p      *Proxy
	events *sink
	ns     string
	admin  kubernetes.Interface
	cs     kubernetes.Interface // through the proxy
	cfg    *rest.Config
	kills  atomic.Int32
	onKill func()
}

func newFaultFixture(t *testing.T, contentType string) *faultFixture {
	t.Helper()
	simtest.NeedsControlPlane(t)
	<-real.ready
	if real.err != nil {
		t.Fatal(real.err)
	}
	fx := &faultFixture{events: &sink{}}
	fx.admin = kubernetes.NewForConfigOrDie(real.env.Config())
	fx.ns = clustertest.Namespace(t, fx.admin, "fault")
	t.Cleanup(func() { fx.events.CheckSchema(t) })
	p, err := Start(Options{Name: "clientgo/a", Upstream: real.env.Config(), Publish: fx.events.Publish, Log: testLogger(t),
		Kill: func() error {
			fx.kills.Add(1)
			if fx.onKill != nil {
				fx.onKill()
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	fx.p = p
	kc, err := p.Kubeconfig(fx.ns)
	if err != nil {
		t.Fatal(err)
	}
	fx.cfg, err = clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	fx.cfg.QPS, fx.cfg.Burst = 1000, 1000
	fx.cfg.ContentType = contentType
	fx.cs = kubernetes.NewForConfigOrDie(fx.cfg)
	return fx
}

func (fx *faultFixture) set(t *testing.T, spec string) {
	t.Helper()
	setFault(t, fx.p, spec)
}

// setFault turns the fault spec on at p.
func setFault(t *testing.T, p *Proxy, spec string) {
	t.Helper()
	f, err := fault.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetFault(f); err != nil {
		t.Fatal(err)
	}
}

func (fx *faultFixture) injected(fault string) []trace.Event {
	return fx.events.matching(func(e trace.Event) bool {
		return e.Kind == trace.FaultInjected && trace.As[trace.Injection](e).Fault == fault
	})
}

func (fx *faultFixture) configMap(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := fx.admin.CoreV1().ConfigMaps(fx.ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// TestFaultConflict: every 2nd update is answered 409 by the proxy, as
// client-go's apierrors.IsConflict reads it, and never reaches the apiserver.
func TestFaultConflict(t *testing.T) {
	fx := newFaultFixture(t, "application/json")
	fx.configMap(t, "c")
	fx.set(t, "conflict,n=2")
	var codes []string
	for i := 1; i <= 4; i++ {
		cm, err := fx.cs.CoreV1().ConfigMaps(fx.ns).Get(t.Context(), "c", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["v"] = fmt.Sprint(i)
		_, err = fx.cs.CoreV1().ConfigMaps(fx.ns).Update(t.Context(), cm, metav1.UpdateOptions{})
		switch {
		case err == nil:
			codes = append(codes, "ok")
		case apierrors.IsConflict(err) && strings.Contains(err.Error(), "injected by rlab"):
			codes = append(codes, "conflict")
		default:
			t.Fatalf("update %d: %v", i, err)
		}
	}
	if want := []string{"ok", "conflict", "ok", "conflict"}; !slices.Equal(codes, want) {
		t.Errorf("updates = %v, want %v", codes, want)
	}
	cm, err := fx.admin.CoreV1().ConfigMaps(fx.ns).Get(t.Context(), "c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["v"] != "3" {
		t.Errorf("the apiserver has v=%s, want 3: the refused updates must not reach it", cm.Data["v"])
	}
	got := fx.events.waitEvents(t, 2, func(e trace.Event) bool { return e.Kind == trace.FaultInjected })
	for _, e := range got {
		if trace.As[trace.Injection](e).Fault != "conflict" || e.Code() != 409 || e.Object != "ConfigMap/c" || e.Namespace != fx.ns {
			t.Errorf("fault.injected = %+v", e)
		}
	}
	if n := len(fx.events.waitEvents(t, 2, func(e trace.Event) bool { return isCall("update", "configmaps")(e) && e.Code() == 409 })); n != 2 {
		t.Errorf("%d api.request update configmaps 409, want 2", n)
	}
}

// TestFaultError: a 500 the client gets as an internal error, and a 429
// with Retry-After that client-go waits out and retries by itself.
func TestFaultError(t *testing.T) {
	fx := newFaultFixture(t, "application/json")
	create := func(name string) error {
		_, err := fx.cs.CoreV1().ConfigMaps(fx.ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}
	fx.set(t, "error,n=2,code=500,verbs=create")
	if err := create("e1"); err != nil {
		t.Fatal(err)
	}
	if err := create("e2"); !apierrors.IsInternalError(err) {
		t.Fatalf("second create: %v, want an internal error", err)
	}
	if _, err := fx.admin.CoreV1().ConfigMaps(fx.ns).Get(t.Context(), "e2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("e2 upstream: %v, want not found", err)
	}

	fx.set(t, "error,n=2,code=429,retry-after=1s,verbs=create") // counts from 0 again
	if err := create("t1"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := create("t2"); err != nil {
		t.Fatalf("a create answered 429 with Retry-After: %v; client-go retries it", err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("the retried create took %s, want at least the 1s Retry-After", took)
	}
	var codes []int
	for _, e := range fx.events.matching(isCall("create", "configmaps")) {
		codes = append(codes, e.Code())
	}
	if want := []int{201, 500, 201, 429, 201}; !slices.Equal(codes, want) {
		t.Errorf("create codes = %v, want %v", codes, want)
	}
}

// TestFaultLatencyAndLease: latency holds only the verbs it names; lease
// only Lease requests.
func TestFaultLatencyAndLease(t *testing.T) {
	fx := newFaultFixture(t, "application/json")
	fx.configMap(t, "l")
	timed := func(do func() error) time.Duration {
		start := time.Now()
		if err := do(); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	get := func() error {
		_, err := fx.cs.CoreV1().ConfigMaps(fx.ns).Get(t.Context(), "l", metav1.GetOptions{})
		return err
	}
	list := func() error {
		_, err := fx.cs.CoreV1().ConfigMaps(fx.ns).List(t.Context(), metav1.ListOptions{})
		return err
	}
	lease := func() error {
		_, err := fx.cs.CoordinationV1().Leases(fx.ns).Get(t.Context(), "nobody", metav1.GetOptions{})
		return err
	}
	fx.set(t, "latency:400ms,verbs=get")
	if d := timed(get); d < 400*time.Millisecond {
		t.Errorf("get took %s under latency:400ms,verbs=get", d)
	}
	fx.set(t, "lease:600ms")
	if d := timed(lease); d < 600*time.Millisecond || d >= time.Second {
		t.Errorf("a Lease get took %s, want the lease fault's 600ms and not the latency's 400ms more: Leases are the lease fault's alone", d)
	}
	fx.p.ClearFault(fault.Latency)
	timed(list)
	if got := fx.injected("latency"); len(got) != 1 || got[0].Verb() != "get" || got[0].Resource() != "configmaps" {
		t.Errorf("latency injections = %+v, want the one get of a ConfigMap", got)
	}
	if n := len(fx.injected("lease")); n != 1 {
		t.Errorf("%d lease injections, want 1", n)
	}
	if got := fx.p.Faults(); len(got) != 1 || got[0].Kind != fault.Lease {
		t.Errorf("faults on = %v, want the lease fault alone", got)
	}
}

// TestFaultPartition refuses every request for its duration, and ends by
// itself.
func TestFaultPartition(t *testing.T) {
	fx := newFaultFixture(t, "application/json")
	fx.set(t, "partition:1s")
	_, err := fx.cs.CoreV1().ConfigMaps(fx.ns).List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), PartitionMessage) {
		t.Fatalf("list during the partition: %v", err)
	}
	simtest.Eventually(t, 10*time.Second, "the partition ends by itself", simtest.True(func() bool {
		_, err := fx.cs.CoreV1().ConfigMaps(fx.ns).List(t.Context(), metav1.ListOptions{})
		return err == nil
	}))
	if fx.p.Mode() != Normal || len(fx.p.Faults()) != 0 {
		t.Errorf("after the partition: mode %s, faults %v", fx.p.Mode(), fx.p.Faults())
	}
	var on []bool
	for _, e := range fx.events.waitEvents(t, 2, func(e trace.Event) bool { return e.Kind == trace.FaultSet }) {
		on = append(on, trace.As[trace.FaultSwitch](e).On)
	}
	if !slices.Equal(on, []bool{true, false}) {
		t.Errorf("fault.set on = %v, want [true false]", on)
	}
}

// TestFaultCrash kills the replica as its 2nd write succeeds: the write is
// in the apiserver when the kill comes, and the fault is off after.
func TestFaultCrash(t *testing.T) {
	fx := newFaultFixture(t, "application/json")
	var upstream error
	fx.onKill = func() {
		_, upstream = fx.admin.CoreV1().ConfigMaps(fx.ns).Get(context.Background(), "k2", metav1.GetOptions{})
	}
	fx.set(t, "crash,n=2")
	for i := 1; i <= 3; i++ {
		if _, err := fx.cs.CoreV1().ConfigMaps(fx.ns).Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("k%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if i == 1 && fx.kills.Load() != 0 {
			t.Fatal("killed after the first write")
		}
	}
	if n := fx.kills.Load(); n != 1 {
		t.Fatalf("killed %d times, want once", n)
	}
	if upstream != nil {
		t.Errorf("when the kill came, the second write was not in the apiserver: %v", upstream)
	}
	if len(fx.p.Faults()) != 0 {
		t.Errorf("faults on after the crash: %v", fx.p.Faults())
	}
	got := fx.events.waitEvents(t, 1, func(e trace.Event) bool { return e.Kind == trace.FaultInjected })
	if e := got[0]; trace.As[trace.Injection](e).Fault != "crash" || e.Resource() != "configmaps" || e.Verb() != "create" || e.Code() != 201 {
		t.Errorf("fault.injected = %+v", e)
	}
	if err := (&Proxy{}).SetFault(fault.Fault{Kind: fault.Crash}); err == nil {
		t.Error("a proxy without Kill took the crash fault")
	}
}

// seen records what an informer through the proxy delivers, and when.
type seen struct {
	mu  sync.Mutex
	at  map[string]time.Time // "ADD c" → first time
	log []string
}

func (s *seen) add(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at == nil {
		s.at = map[string]time.Time{}
	}
	if _, ok := s.at[what]; !ok {
		s.at[what] = time.Now()
	}
	s.log = append(s.log, what)
}

func (s *seen) when(what string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.at[what]
	return at, ok
}

// informer runs a ConfigMap informer through the proxy until the test ends.
func (fx *faultFixture) informer(t *testing.T) *seen {
	t.Helper()
	s := &seen{}
	f := informers.NewSharedInformerFactoryWithOptions(fx.cs, 0, informers.WithNamespace(fx.ns))
	inf := f.Core().V1().ConfigMaps().Informer()
	name := func(o any) string {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			return cm.Name + "=" + cm.Data["v"]
		}
		return "?"
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { s.add("ADD " + name(o)) },
		UpdateFunc: func(_, o any) { s.add("UPDATE " + name(o)) },
		DeleteFunc: func(o any) { s.add("DELETE " + name(o)) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced) {
		t.Fatal("informer never synced")
	}
	return s
}

func (fx *faultFixture) watches() int { return len(fx.events.matching(isCall("watch", "configmaps"))) }

// TestFaultStale: under stale:1s an informer (protobuf, client-go's default
// for built-in types) gets each event at least 1s late; cleared, it gets
// the next one unheld.
func TestFaultStale(t *testing.T) {
	fx := newFaultFixture(t, "")
	s := fx.informer(t)
	simtest.Eventually(t, 10*time.Second, "the informer's watch", simtest.True(func() bool { return fx.watches() >= 1 }))
	fx.set(t, "stale:1s")
	simtest.Eventually(t, 20*time.Second, "the watch resumes through the fault", simtest.True(func() bool { return fx.watches() >= 2 }))
	if len(fx.injected("disconnect")) < 1 {
		t.Error("turning stale on closed no watch")
	}
	created := time.Now()
	fx.configMap(t, "late")
	simtest.Eventually(t, 20*time.Second, "the informer sees ConfigMap late", simtest.True(func() bool { _, ok := s.when("ADD late=0"); return ok }))
	if at, _ := s.when("ADD late=0"); at.Sub(created) < time.Second {
		t.Errorf("the informer saw it %s after the create, want at least 1s", at.Sub(created))
	}
	held := fx.events.waitEvents(t, 1, func(e trace.Event) bool {
		return e.Kind == trace.FaultInjected && trace.As[trace.Injection](e).Fault == "stale" && e.Object == "ConfigMap/late"
	})
	if d := trace.As[trace.Injection](held[0]).DelayMS; d < 1000 || trace.As[trace.Injection](held[0]).Type != "ADDED" {
		t.Errorf("stale injection = %+v", held[0])
	}

	fx.p.ClearFault(fault.Stale)
	fx.configMap(t, "now")
	simtest.Eventually(t, 20*time.Second, "the informer sees ConfigMap now", simtest.True(func() bool { _, ok := s.when("ADD now=0"); return ok }))
	if n := len(fx.events.matching(func(e trace.Event) bool { return e.Kind == trace.FaultInjected && e.Object == "ConfigMap/now" })); n != 0 {
		t.Errorf("ConfigMap/now was held %d times after the fault was cleared", n)
	}
}

// TestFaultUnobserved: of three quick updates of one object, the watch
// (JSON) delivers only the last; events of another object keep their place,
// and resourceVersions stay in order.
func TestFaultUnobserved(t *testing.T) {
	fx := newFaultFixture(t, "application/json")
	fx.configMap(t, "a")
	fx.configMap(t, "b")
	fx.set(t, "unobserved:3s") // room for four round trips on a loaded machine
	list, err := fx.cs.CoreV1().ConfigMaps(fx.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := fx.cs.CoreV1().ConfigMaps(fx.ns).Watch(t.Context(), metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	update := func(name, v string) {
		cm, err := fx.admin.CoreV1().ConfigMaps(fx.ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["v"] = v
		if _, err := fx.admin.CoreV1().ConfigMaps(fx.ns).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update("a", "1")
	update("b", "1")
	update("a", "2")
	update("a", "3")
	var got []string
	var rvs []string
	timeout := time.After(20 * time.Second)
	for len(got) < 2 {
		select {
		case ev := <-w.ResultChan():
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				t.Fatalf("watch event %s %T", ev.Type, ev.Object)
			}
			got = append(got, fmt.Sprintf("%s %s=%s", ev.Type, cm.Name, cm.Data["v"]))
			rvs = append(rvs, cm.ResourceVersion)
		case <-timeout:
			t.Fatalf("watch delivered %v", got)
		}
	}
	if want := []string{"MODIFIED b=1", "MODIFIED a=3"}; !slices.Equal(got, want) {
		t.Errorf("watch delivered %v, want %v", got, want)
	}
	if !rvLess(rvs[0], rvs[1]) {
		t.Errorf("resourceVersions %v out of order", rvs)
	}
	dropped := fx.events.waitEvents(t, 2, func(e trace.Event) bool {
		return e.Kind == trace.FaultInjected && trace.As[trace.Injection](e).Fault == "unobserved"
	})
	for _, e := range dropped {
		if e.Object != "ConfigMap/a" || trace.As[trace.Injection](e).Type != string(watch.Modified) {
			t.Errorf("dropped %+v, want a's first two updates", e)
		}
	}
}

// rvLess compares two etcd resourceVersions (decimal strings).
func rvLess(a, b string) bool { return len(a) < len(b) || (len(a) == len(b) && a < b) }

// TestFaultDisconnect: the open watch is closed mid-flight and the
// informer resumes; with a duration, every new watch is closed after it.
func TestFaultDisconnect(t *testing.T) {
	fx := newFaultFixture(t, "")
	s := fx.informer(t)
	simtest.Eventually(t, 10*time.Second, "the informer's watch", simtest.True(func() bool { return fx.watches() >= 1 }))
	fx.set(t, "disconnect")
	simtest.Eventually(t, 20*time.Second, "the informer watches again", simtest.True(func() bool { return fx.watches() >= 2 }))
	if len(fx.p.Faults()) != 0 {
		t.Errorf("a bare disconnect stays on: %v", fx.p.Faults())
	}
	fx.configMap(t, "after")
	simtest.Eventually(t, 20*time.Second, "the informer sees what came after", simtest.True(func() bool { _, ok := s.when("ADD after=0"); return ok }))

	fx.set(t, "disconnect:300ms")
	n := fx.watches()
	simtest.Eventually(t, 30*time.Second, "two watches more, each closed", simtest.True(func() bool { return fx.watches() >= n+2 }))
	fx.p.ClearFault(fault.Disconnect)
	if got := len(fx.injected("disconnect")); got < 3 {
		t.Errorf("%d disconnect injections, want at least 3", got)
	}
	if _, lost := s.when("DELETE after=0"); lost {
		t.Error("the informer lost an object over the disconnects")
	}
}

// BenchmarkFaultLayer is a GET through the proxy with no fault ever set,
// and with a fault on that does not touch it (the layer's whole cost: the
// set read and the match).
func BenchmarkFaultLayer(b *testing.B) {
	for _, tc := range []struct {
		name  string
		fault string
	}{{"off", ""}, {"on-unmatched", "conflict,p=1"}} {
		b.Run(tc.name, func(b *testing.B) {
			_, up := newFakeAPI(b)
			p, err := Start(Options{Name: "clientgo/a", Upstream: up})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			if tc.fault != "" {
				f, err := fault.Parse(tc.fault)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.SetFault(f); err != nil {
					b.Fatal(err)
				}
			}
			client := httpClient(b, p)
			url := p.URL() + "/api/v1/namespaces/" + testNS + "/configmaps/x"
			b.ResetTimer()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("Authorization", "Bearer "+p.Token())
				res, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body) // drained, the connection is reused
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Fatalf("status %d", res.StatusCode)
				}
			}
		})
	}
}

// BenchmarkFaultCheck is the fault layer alone on a request's path, with
// no fault ever set, and with one on that does not touch the request.
func BenchmarkFaultCheck(b *testing.B) {
	for _, tc := range []struct {
		name  string
		fault string
	}{{"off", ""}, {"on-unmatched", "conflict,p=1"}} {
		b.Run(tc.name, func(b *testing.B) {
			p := &Proxy{}
			if tc.fault != "" {
				f, err := fault.Parse(tc.fault)
				if err != nil {
					b.Fatal(err)
				}
				p.faults.Store(&faults{f.Kind: arm(f)})
			}
			x := &exchange{call: call{verb: "get", resource: "deployments", namespace: "ns", object: "Deployment/d"}}
			ctx := context.Background()
			for b.Loop() {
				if !p.beforeForward(ctx, nil, x) {
					b.Fatal("a fault touched the request")
				}
			}
		})
	}
}

// TestFaultPartitionTimers: a partition however short ends by itself, and
// one replaced by a longer one does not heal the proxy when the first
// would have ended.
func TestFaultPartitionTimers(t *testing.T) {
	fx := newFixture(t)
	set := func(spec string) { t.Helper(); setFault(t, fx.p, spec) }
	for range 50 {
		set("partition:1ns")
	}
	simtest.Eventually(t, 10*time.Second, "the short partitions end", simtest.True(func() bool {
		return fx.p.Mode() == Normal && len(fx.p.Faults()) == 0
	}))
	set("partition:50ms")
	set("partition:1m")
	if err := simtest.Poll(t.Context(), 300*time.Millisecond, simtest.True(func() bool { return fx.p.Mode() == Normal })); err == nil {
		t.Fatal("the replaced partition's timer healed the proxy")
	}
	if got := fx.p.Faults(); len(got) != 1 || got[0].String() != "partition:1m0s" {
		t.Errorf("faults = %v, want partition:1m0s", got)
	}
	fx.p.ClearFault(fault.Partition)
	if fx.p.Mode() != Normal || len(fx.p.Faults()) != 0 {
		t.Errorf("after ClearFault: mode %s, faults %v", fx.p.Mode(), fx.p.Faults())
	}
}
