package proxy

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/simtest"
)

const (
	testNS       = "echo-clientgo"
	testUA       = "rlab-proxy-test/1"
	testIdentity = "clientgo-a" // CN of the fake upstream's client cert
)

var echoGVR = schema.GroupVersionResource{Group: "kkloud.io", Version: "v1", Resource: "echoes"}

// ---- fake apiserver -------------------------------------------------------

// seenReq is one request as the upstream saw it.
type seenReq struct {
	method, path, query string
	auth, cn, ua        string
}

// fakeAPI is a TLS upstream that demands a client certificate and answers
// just enough of the Kubernetes API for client-go. Its watches send one
// ADDED event at once, then wait for release (then send MODIFIED and end) or
// for the request to be cancelled; a watch of secrets is refused (403).
type fakeAPI struct {
	srv      *httptest.Server
	mu       sync.Mutex
	seen     []seenReq
	release  chan struct{}
	relOnce  sync.Once
	watchEnd chan string // "released" or "cancelled", one per finished watch
}

func newFakeAPI(t testing.TB) (*fakeAPI, *rest.Config) {
	t.Helper()
	f := &fakeAPI{release: make(chan struct{}), watchEnd: make(chan string, 16)}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.EnableHTTP2 = true // as the real apiserver
	f.srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	f.srv.StartTLS()
	t.Cleanup(func() {
		f.releaseWatches()
		f.srv.Close()
	})
	certPEM, keyPEM := clientCert(t, testIdentity)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	return f, &rest.Config{
		Host:            f.srv.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM, CertData: certPEM, KeyData: keyPEM},
	}
}

func (f *fakeAPI) releaseWatches() { f.relOnce.Do(func() { close(f.release) }) }

func (f *fakeAPI) requests() []seenReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenReq(nil), f.seen...)
}

// kindFor is what the fake returns for a resource.
var kindFor = map[string][2]string{
	"configmaps": {"v1", "ConfigMap"},
	"leases":     {"coordination.k8s.io/v1", "Lease"},
	"echoes":     {"kkloud.io/v1", "Echo"},
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	s := seenReq{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, auth: r.Header.Get("Authorization"), ua: r.UserAgent()}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		s.cn = r.TLS.PeerCertificates[0].Subject.CommonName
	}
	f.mu.Lock()
	f.seen = append(f.seen, s)
	f.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/version":
		fmt.Fprint(w, `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`)
		return
	case "/api":
		fmt.Fprint(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`)
		return
	case "/apis":
		fmt.Fprint(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`)
		return
	case "/healthz":
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "ok")
		return
	}
	info, err := requestInfo.NewRequestInfo(r)
	if err != nil || !info.IsResourceRequest {
		http.NotFound(w, r)
		return
	}
	if info.Verb == "watch" && info.Resource == "secrets" {
		// A refused watch: its Status is a JSON line like a watch event.
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintln(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"Forbidden","code":403}`)
		return
	}
	gvk := kindFor[info.Resource]
	obj := func(name string) string {
		return fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q,"namespace":%q,"resourceVersion":"7"}}`,
			gvk[0], gvk[1], name, info.Namespace)
	}
	switch info.Verb {
	case "get", "patch":
		fmt.Fprint(w, obj(info.Name))
	case "list":
		fmt.Fprintf(w, `{"apiVersion":%q,"kind":"%sList","metadata":{"resourceVersion":"7"},"items":[]}`, gvk[0], gvk[1])
	case "create", "update":
		body, _ := io.ReadAll(r.Body)
		if info.Verb == "create" {
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = w.Write(body)
	case "delete":
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}`)
	case "watch":
		w.WriteHeader(http.StatusOK)
		event := func(typ string) {
			fmt.Fprintf(w, `{"type":%q,"object":%s}`+"\n", typ, obj("one"))
			w.(http.Flusher).Flush()
		}
		event("ADDED")
		select {
		case <-f.release:
			event("MODIFIED")
			f.watchEnd <- "released"
		case <-r.Context().Done():
			f.watchEnd <- "cancelled"
		}
	default:
		http.Error(w, "unexpected verb "+info.Verb, http.StatusMethodNotAllowed)
	}
}

// clientCert is a self-signed client certificate for cn, PEM encoded.
func clientCert(t testing.TB, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// ---- fixture --------------------------------------------------------------

// sink records what a proxy publishes.
type sink struct{ simtest.EventLog }

// matching returns the recorded events match accepts.
func (s *sink) matching(match func(trace.Event) bool) []trace.Event {
	var out []trace.Event
	for _, e := range s.All() {
		if match(e) {
			out = append(out, e)
		}
	}
	return out
}

// isCall matches the api.request events of one verb and resource.
func isCall(verb, resource string) func(trace.Event) bool {
	return func(e trace.Event) bool {
		return e.Kind == trace.APIRequest && e.Verb() == verb && e.Resource() == resource
	}
}

// waitEvents polls until at least n events match, and returns them.
func (s *sink) waitEvents(t *testing.T, n int, match func(trace.Event) bool) []trace.Event {
	t.Helper()
	var got []trace.Event
	simtest.Eventually(t, 10*time.Second, fmt.Sprintf("%d matching events", n), simtest.True(func() bool {
		got = s.matching(match)
		return len(got) >= n
	}))
	return got
}

type fixture struct {
	api    *fakeAPI
	p      *Proxy
	events *sink
	cfg    *rest.Config // client-go through the proxy, from its kubeconfig
	cs     kubernetes.Interface
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	api, up := newFakeAPI(t)
	fx := &fixture{api: api, events: &sink{}}
	t.Cleanup(func() { fx.events.CheckSchema(t) }) // after Close: every event delivered
	p, err := Start(Options{Name: "clientgo/a", Upstream: up, Publish: fx.events.Publish, Log: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	fx.p = p
	fx.cfg = clientConfig(t, p, testNS)
	fx.cs = kubernetes.NewForConfigOrDie(fx.cfg)
	return fx
}

// clientConfig is a client-go config built from the proxy's kubeconfig, as a
// replica would build it.
func clientConfig(t *testing.T, p *Proxy, ns string) *rest.Config {
	t.Helper()
	kc, err := p.Kubeconfig(ns)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.UserAgent = testUA
	cfg.QPS, cfg.Burst = 1000, 1000
	cfg.ContentType = "application/json" // the fake echoes bodies back
	return cfg
}

// httpClient is a plain HTTP client that trusts the proxy's certificate.
func httpClient(t testing.TB, p *Proxy) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.CAData()) {
		t.Fatal("proxy CA data is not PEM")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// raw sends one plain HTTP request to the proxy.
func raw(t *testing.T, client *http.Client, method, url, auth string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("User-Agent", testUA)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res
}

// startWatch opens a client-go watch on ConfigMaps through the proxy and
// waits for the fake's first event, so the stream is known to be open.
func (fx *fixture) startWatch(t *testing.T) watch.Interface {
	t.Helper()
	w, err := fx.cs.CoreV1().ConfigMaps(testNS).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	nextEvent(t, w, watch.Added, "first")
	return w
}

// nextEvent waits for the client's next watch event, which must be of type
// want.
func nextEvent(t *testing.T, w watch.Interface, want watch.EventType, which string) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok || ev.Type != want {
			t.Fatalf("%s watch event = %v (open %v), want %s", which, ev.Type, ok, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s watch event", which)
	}
}

// watchEnds waits for the client's watch channel to close.
func watchEnds(t *testing.T, w watch.Interface, why string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("watch still open after %s", why)
		}
	}
}

// upstreamWatchEnds waits for the fake to report how its watch ended.
func (f *fakeAPI) upstreamWatchEnds(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-f.watchEnd:
		if got != want {
			t.Fatalf("upstream watch ended %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("upstream watch did not end")
	}
}

type result struct {
	err  error
	took time.Duration
}

// getAsync runs a client-go GET of ConfigMap name in the background.
func (fx *fixture) getAsync(ctx context.Context, name string) <-chan result {
	out := make(chan result, 1)
	go func() {
		start := time.Now()
		_, err := fx.cs.CoreV1().ConfigMaps(testNS).Get(ctx, name, metav1.GetOptions{})
		out <- result{err, time.Since(start)}
	}()
	return out
}

func waitResult(t *testing.T, ch <-chan result, what string) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: no answer", what)
		return result{}
	}
}

// upstreamGets counts the GETs of ConfigMap name the upstream saw.
func (f *fakeAPI) upstreamGets(name string) int {
	n := 0
	for _, r := range f.requests() {
		if r.method == http.MethodGet && strings.HasSuffix(r.path, "/configmaps/"+name) {
			n++
		}
	}
	return n
}

// ---- tests ----------------------------------------------------------------

func TestClassify(t *testing.T) {
	tests := []struct {
		method, url string
		key         string
		ns, object  string
	}{
		{"GET", "/api", "get discovery", "", ""},
		{"GET", "/apis", "get discovery", "", ""},
		{"GET", "/api/v1", "get discovery", "", ""},
		{"GET", "/apis/apps/v1", "get discovery", "", ""},
		{"GET", "/version", "get discovery", "", ""},
		{"GET", "/openapi/v3/apis/apps/v1", "get discovery", "", ""},
		{"GET", "/healthz", "get /healthz", "", ""},
		{"GET", "/api/v1/namespaces/ns/configmaps", "list configmaps", "ns", ""},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true&resourceVersion=5", "watch configmaps", "ns", ""},
		{"GET", "/api/v1/watch/namespaces/ns/configmaps", "watch configmaps", "ns", ""},
		{"GET", "/api/v1/namespaces/ns/configmaps/x", "get configmaps", "ns", "ConfigMap/x"},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments?watch=1&fieldSelector=metadata.name%3Decho-hello", "watch deployments", "ns", "Deployment/echo-hello"},
		{"POST", "/apis/kkloud.io/v1/namespaces/ns/echoes", "create echoes", "ns", ""},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/echo-operator", "update leases", "ns", "Lease/echo-operator"},
		{"PATCH", "/apis/kkloud.io/v1/namespaces/ns/echoes/hello/status", "patch echoes/status", "ns", "Echo/hello"},
		{"DELETE", "/api/v1/namespaces/ns/pods/p", "delete pods", "ns", "Pod/p"},
		{"DELETE", "/api/v1/namespaces/ns/pods", "deletecollection pods", "ns", ""},
		{"GET", "/api/v1/nodes", "list nodes", "", ""},
		{"GET", "/apis/widgets.example/v1/gizmos/g", "get gizmos", "", "gizmos/g"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			c := classify(httptest.NewRequest(tt.method, tt.url, nil))
			if c.key() != tt.key || c.namespace != tt.ns || c.object != tt.object {
				t.Fatalf("classify = %q ns %q object %q, want %q ns %q object %q",
					c.key(), c.namespace, c.object, tt.key, tt.ns, tt.object)
			}
		})
	}
}

func TestKubeconfig(t *testing.T) {
	fx := newFixture(t)
	kc, err := fx.p.Kubeconfig("echo-runtime")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		t.Fatalf("no current context in\n%s", kc)
	}
	cluster := cfg.Clusters[ctx.Cluster]
	if got := cluster.Server; got != fx.p.URL() || !strings.HasPrefix(got, "https://127.0.0.1:") {
		t.Errorf("server = %q, want %q on loopback", got, fx.p.URL())
	}
	if !bytes.Equal(cluster.CertificateAuthorityData, fx.p.CAData()) {
		t.Error("kubeconfig does not trust the proxy's certificate")
	}
	if got := cfg.AuthInfos[ctx.AuthInfo].Token; got != fx.p.Token() || len(got) != 64 {
		t.Errorf("token = %q, want the proxy's 64-hex token", got)
	}
	if ctx.Namespace != "echo-runtime" {
		t.Errorf("namespace = %q", ctx.Namespace)
	}
	other := newFixture(t)
	if other.p.Token() == fx.p.Token() {
		t.Error("two proxies share a token")
	}
}

func TestUnauthorizedIsNotForwarded(t *testing.T) {
	fx := newFixture(t)
	url := fx.p.URL() + "/api/v1/namespaces/" + testNS + "/configmaps/x"
	client := httpClient(t, fx.p)
	tests := []struct {
		name, auth string
		want       int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"wrong token", "Bearer " + strings.Repeat("0", 64), http.StatusUnauthorized},
		{"token with extra", "Bearer " + fx.p.Token() + "0", http.StatusUnauthorized},
		{"token without scheme", fx.p.Token(), http.StatusUnauthorized},
		{"basic auth", "Basic " + fx.p.Token(), http.StatusUnauthorized},
		{"right token", "Bearer " + fx.p.Token(), http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(fx.api.requests())
			res := raw(t, client, http.MethodGet, url, tt.auth)
			if res.StatusCode != tt.want {
				t.Fatalf("status = %d, want %d", res.StatusCode, tt.want)
			}
			forwarded := len(fx.api.requests()) - before
			if tt.want == http.StatusUnauthorized && (forwarded != 0 || fx.p.Total() != 0) {
				t.Fatalf("401 request forwarded %d times, counted %d", forwarded, fx.p.Total())
			}
			if tt.want == http.StatusOK && forwarded != 1 {
				t.Fatalf("forwarded %d times, want 1", forwarded)
			}
		})
	}
	if got := fx.p.Counts(); len(got) != 1 || got["get configmaps"] != 1 {
		t.Errorf("counts = %v, want only the authorized get", got)
	}
	evs := fx.events.waitEvents(t, 1, isCall("get", "configmaps"))
	if n := len(fx.events.All()); n != 1 || len(evs) != 1 {
		t.Errorf("%d events published, want 1 (401s are not events)", n)
	}
}

func TestCountsAndEvents(t *testing.T) {
	fx := newFixture(t)
	ctx := t.Context()
	dyn := dynamic.NewForConfigOrDie(fx.cfg)
	cms := fx.cs.CoreV1().ConfigMaps(testNS)
	tests := []struct {
		name        string
		do          func() error
		verb, res   string
		ns, object  string
		wantCode    int
		wantForward int // requests the upstream sees
	}{
		{"version", func() error { _, err := fx.cs.Discovery().ServerVersion(); return err },
			"get", "discovery", "", "", 200, 1},
		{"api groups", func() error { return fx.cs.Discovery().RESTClient().Get().AbsPath("/apis").Do(ctx).Error() },
			"get", "discovery", "", "", 200, 1},
		{"healthz", func() error { return fx.cs.Discovery().RESTClient().Get().AbsPath("/healthz").Do(ctx).Error() },
			"get", "/healthz", "", "", 200, 1},
		{"get", func() error { _, err := cms.Get(ctx, "x", metav1.GetOptions{}); return err },
			"get", "configmaps", testNS, "ConfigMap/x", 200, 1},
		{"list", func() error { _, err := cms.List(ctx, metav1.ListOptions{}); return err },
			"list", "configmaps", testNS, "", 200, 1},
		{"create", func() error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{})
			return err
		}, "create", "configmaps", testNS, "ConfigMap/new", 201, 1}, // named from its body
		{"delete", func() error { return cms.Delete(ctx, "x", metav1.DeleteOptions{}) },
			"delete", "configmaps", testNS, "ConfigMap/x", 200, 1},
		{"update lease", func() error {
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "echo-operator", Namespace: testNS}}
			_, err := fx.cs.CoordinationV1().Leases(testNS).Update(ctx, l, metav1.UpdateOptions{})
			return err
		}, "update", "leases", testNS, "Lease/echo-operator", 200, 1},
		{"patch status", func() error {
			_, err := dyn.Resource(echoGVR).Namespace(testNS).Patch(ctx, "hello", types.MergePatchType,
				[]byte(`{"status":{"readyReplicas":2}}`), metav1.PatchOptions{}, "status")
			return err
		}, "patch", "echoes/status", testNS, "Echo/hello", 200, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := tt.verb + " " + tt.res
			before, seen := fx.p.Counts()[key], len(fx.api.requests())
			evBefore := len(fx.events.matching(isCall(tt.verb, tt.res)))
			if err := tt.do(); err != nil {
				t.Fatal(err)
			}
			if got := fx.p.Counts()[key]; got != before+1 {
				t.Fatalf("counts[%q] = %d, want %d (all: %v)", key, got, before+1, fx.p.Counts())
			}
			if got := len(fx.api.requests()) - seen; got != tt.wantForward {
				t.Fatalf("upstream saw %d requests, want %d", got, tt.wantForward)
			}
			evs := fx.events.waitEvents(t, evBefore+1, isCall(tt.verb, tt.res))
			e := evs[len(evs)-1]
			if e.Source != "proxy/clientgo/a" || e.Kind != trace.APIRequest || e.Namespace != tt.ns || e.Object != tt.object {
				t.Errorf("event = %+v, want source proxy/clientgo/a ns %q object %q", e, tt.ns, tt.object)
			}
			r, _ := e.Request()
			if r.Code != tt.wantCode {
				t.Errorf("code = %d, want %d", r.Code, tt.wantCode)
			}
			if r.LatencyMS < 0 {
				t.Errorf("latency_ms = %v, want >= 0", r.LatencyMS)
			}
			if r.UserAgent != testUA {
				t.Errorf("user_agent = %q", r.UserAgent)
			}
		})
	}
	if want := len(tests); fx.p.Total() != want {
		t.Errorf("total = %d, want %d", fx.p.Total(), want)
	}
	// The replica's token never leaves the proxy; upstream it is the
	// replica's certificate that speaks.
	for _, r := range fx.api.requests() {
		if r.auth != "" || r.cn != testIdentity || r.ua != testUA {
			t.Errorf("upstream saw %s %s with Authorization %q, cert CN %q, UA %q", r.method, r.path, r.auth, r.cn, r.ua)
		}
	}
}

func TestWatchStreams(t *testing.T) {
	fx := newFixture(t)
	w := fx.startWatch(t) // the first event arrived while the upstream is still writing
	select {
	case how := <-fx.api.watchEnd:
		t.Fatalf("upstream watch ended (%s) before the client saw its first event", how)
	default:
	}
	// Published at response-header time, while the watch is still open.
	evs := fx.events.waitEvents(t, 1, isCall("watch", "configmaps"))
	if code := evs[0].Code(); code != 200 || evs[0].Namespace != testNS {
		t.Errorf("watch event = %+v", evs[0])
	}

	fx.api.releaseWatches()
	nextEvent(t, w, watch.Modified, "second")
	fx.api.upstreamWatchEnds(t, "released")
	watchEnds(t, w, "the upstream ended it")

	if got := fx.p.Counts()["watch configmaps"]; got != 1 {
		t.Errorf("counts[watch configmaps] = %d", got)
	}
	// Events are delivered in order, so a later request's event proves the
	// watch was not published a second time at its end.
	if _, err := fx.cs.CoreV1().ConfigMaps(testNS).Get(t.Context(), "x", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	fx.events.waitEvents(t, 1, isCall("get", "configmaps"))
	if n := len(fx.events.matching(isCall("watch", "configmaps"))); n != 1 {
		t.Errorf("%d watch events, want 1", n)
	}
}

func TestRefuse(t *testing.T) {
	fx := newFixture(t)
	w := fx.startWatch(t)

	fx.p.SetMode(Refuse)
	if fx.p.Mode() != Refuse {
		t.Fatalf("mode = %v", fx.p.Mode())
	}
	watchEnds(t, w, "Refuse")
	fx.api.upstreamWatchEnds(t, "cancelled")

	seen := len(fx.api.requests())
	start := time.Now()
	_, err := fx.cs.CoreV1().ConfigMaps(testNS).Get(t.Context(), "x", metav1.GetOptions{})
	if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), PartitionMessage) {
		t.Fatalf("get while refused: %v, want 503 %q", err, PartitionMessage)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("refused after %s, want at once", took)
	}
	if got := len(fx.api.requests()) - seen; got != 0 {
		t.Errorf("refused request reached the upstream %d times", got)
	}
	if got := fx.p.Counts()["get configmaps"]; got != 1 {
		t.Errorf("refused get counted %d times, want 1", got)
	}
	ev := fx.events.waitEvents(t, 1, isCall("get", "configmaps"))[0]
	if code := ev.Code(); code != 503 {
		t.Errorf("refused event code = %v", code)
	}

	fx.p.SetMode(Normal)
	if _, err := fx.cs.CoreV1().ConfigMaps(testNS).Get(t.Context(), "x", metav1.GetOptions{}); err != nil {
		t.Fatalf("get after Normal: %v", err)
	}
}

func TestHang(t *testing.T) {
	fx := newFixture(t)
	w := fx.startWatch(t)

	fx.p.SetMode(Hang)
	watchEnds(t, w, "Hang")
	fx.api.upstreamWatchEnds(t, "cancelled")

	t.Run("held until Normal", func(t *testing.T) {
		res := fx.getAsync(t.Context(), "held")
		simtest.Eventually(t, 10*time.Second, "held request counted", simtest.True(func() bool { return fx.p.Counts()["get configmaps"] == 1 }))
		select {
		case r := <-res:
			t.Fatalf("hung request answered: %v", r.err)
		default:
		}
		if n := fx.api.upstreamGets("held"); n != 0 {
			t.Fatalf("hung request reached the upstream %d times", n)
		}
		fx.p.SetMode(Normal)
		if r := waitResult(t, res, "request after Normal"); r.err != nil {
			t.Fatalf("held request: %v", r.err)
		}
		if n := fx.api.upstreamGets("held"); n != 1 {
			t.Fatalf("upstream saw the held request %d times, want 1", n)
		}
		ev := fx.events.waitEvents(t, 1, func(e trace.Event) bool { return e.Object == "ConfigMap/held" })[0]
		if code := ev.Code(); code != 200 {
			t.Errorf("held event code = %v", code)
		}
	})

	t.Run("abandoned by the client", func(t *testing.T) {
		fx.p.SetMode(Hang)
		ctx, cancel := context.WithCancel(t.Context())
		res := fx.getAsync(ctx, "abandoned")
		simtest.Eventually(t, 10*time.Second, "abandoned request counted", simtest.True(func() bool { return fx.p.Counts()["get configmaps"] == 2 }))
		cancel()
		if r := waitResult(t, res, "abandoned request"); r.err == nil {
			t.Fatal("abandoned request succeeded")
		}
		ev := fx.events.waitEvents(t, 1, func(e trace.Event) bool { return e.Object == "ConfigMap/abandoned" })[0]
		if r, ok := ev.Request(); !ok || r.Code != 0 {
			t.Errorf("abandoned event code = %#v, want 0", r.Code)
		}
		if n := fx.api.upstreamGets("abandoned"); n != 0 {
			t.Errorf("abandoned request reached the upstream %d times", n)
		}
	})

	t.Run("hang then refuse", func(t *testing.T) {
		fx.p.SetMode(Hang)
		res := fx.getAsync(t.Context(), "refused")
		simtest.Eventually(t, 10*time.Second, "request counted", simtest.True(func() bool { return fx.p.Counts()["get configmaps"] == 3 }))
		fx.p.SetMode(Refuse)
		if r := waitResult(t, res, "refused"); !apierrors.IsServiceUnavailable(r.err) {
			t.Fatalf("hung then refused: %v, want 503", r.err)
		}
		fx.p.SetMode(Normal)
	})
}

func TestLatency(t *testing.T) {
	fx := newFixture(t)
	for _, d := range []time.Duration{0, 300 * time.Millisecond} {
		t.Run(d.String(), func(t *testing.T) {
			fx.p.SetLatency(d)
			name := "lat-" + d.String()
			r := waitResult(t, fx.getAsync(t.Context(), name), "get")
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.took < d {
				t.Errorf("request took %s, want at least %s", r.took, d)
			}
			ev := fx.events.waitEvents(t, 1, func(e trace.Event) bool { return e.Object == "ConfigMap/"+name })[0]
			if ms := trace.As[trace.Request](ev).LatencyMS; ms < float64(d.Milliseconds()) {
				t.Errorf("latency_ms = %v, want >= %d", ms, d.Milliseconds())
			}
		})
	}
	// A refused request is answered at once, without the delay.
	fx.p.SetLatency(time.Minute)
	fx.p.SetMode(Refuse)
	r := waitResult(t, fx.getAsync(t.Context(), "x"), "refused")
	if !apierrors.IsServiceUnavailable(r.err) || r.took > 2*time.Second {
		t.Errorf("refused with latency: %v after %s", r.err, r.took)
	}
}

func TestClose(t *testing.T) {
	fx := newFixture(t)
	w := fx.startWatch(t)
	fx.p.SetLatency(time.Minute)
	delayed := fx.getAsync(t.Context(), "delayed")
	simtest.Eventually(t, 10*time.Second, "delayed request counted", simtest.True(func() bool { return fx.p.Counts()["get configmaps"] == 1 }))

	if err := fx.p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	watchEnds(t, w, "Close")
	fx.api.upstreamWatchEnds(t, "cancelled")
	if r := waitResult(t, delayed, "delayed request"); r.err == nil {
		t.Error("request open at Close succeeded")
	}
	if n := fx.api.upstreamGets("delayed"); n != 0 {
		t.Errorf("request open at Close reached the upstream %d times", n)
	}
	ev := fx.events.waitEvents(t, 1, func(e trace.Event) bool { return e.Object == "ConfigMap/delayed" })[0]
	if code := ev.Code(); code != 0 {
		t.Errorf("delayed event code = %v, want 0", code)
	}

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, fx.p.URL()+"/version", nil)
	req.Header.Set("Authorization", "Bearer "+fx.p.Token())
	if res, err := httpClient(t, fx.p).Do(req); err == nil {
		_ = res.Body.Close()
		t.Errorf("proxy still serving after Close: %s", res.Status)
	}
	if err := fx.p.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// TestPublishNeverBlocks: a Publish that blocks must not hold up requests.
func TestPublishNeverBlocks(t *testing.T) {
	_, up := newFakeAPI(t)
	unblock := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(unblock) }) }
	rec := &simtest.EventLog{}
	p, err := Start(Options{Name: "runtime/b", Upstream: up, Publish: func(e trace.Event) {
		<-unblock
		rec.Publish(e)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release(); _ = p.Close() })

	const n = queueSize + 50 // more than the queue holds
	url, client := p.URL()+"/version", httpClient(t, p)
	for range n {
		if res := raw(t, client, http.MethodGet, url, "Bearer "+p.Token()); res.StatusCode != 200 {
			t.Fatalf("status %d", res.StatusCode)
		}
	}
	if p.Total() != n {
		t.Fatalf("total = %d, want %d", p.Total(), n)
	}
	release()
	if err := p.Close(); err != nil { // Close delivers what is queued
		t.Fatal(err)
	}
	requests, dropped := 0, 0
	for _, e := range rec.All() {
		switch e.Kind {
		case trace.APIRequest:
			requests++
		case trace.Dropped:
			c := trace.As[trace.Loss](e).Count
			dropped += int(c)
		}
		if e.Source != "proxy/runtime/b" {
			t.Errorf("source = %q", e.Source)
		}
	}
	if requests+dropped != n || dropped == 0 {
		t.Errorf("%d events published and %d reported dropped, want %d in all with some dropped", requests, dropped, n)
	}
}

func TestStartNeedsUpstream(t *testing.T) {
	if _, err := Start(Options{Name: "x"}); err == nil {
		t.Fatal("Start without Upstream succeeded")
	}
}

// The JSON round trip the trace takes keeps the fields readable.
func TestEventJSON(t *testing.T) {
	fx := newFixture(t)
	if _, err := fx.cs.CoreV1().ConfigMaps(testNS).Get(t.Context(), "x", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	e := fx.events.waitEvents(t, 1, isCall("get", "configmaps"))[0]
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back trace.Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if code := back.Code(); code != 200 || back.Verb() != "get" || back.Object != "ConfigMap/x" {
		t.Errorf("round trip = %+v", back)
	}
}

// With PassForeign, a request that does not carry the proxy's token is
// forwarded with the credentials it came with (none of the upstream's),
// and neither counted nor traced; the proxy's own token still speaks as
// the upstream's identity. Without it, such a request is refused
// (TestUnauthorizedIsNotForwarded).
func TestPassForeign(t *testing.T) {
	type seen struct{ auth, cn string }
	var (
		mu  sync.Mutex
		got []seen
	)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{auth: r.Header.Get("Authorization")}
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			s.cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"}}`)
	}))
	up.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	up.StartTLS()
	t.Cleanup(up.Close)
	certPEM, keyPEM := clientCert(t, testIdentity)
	cfg := &rest.Config{Host: up.URL, TLSClientConfig: rest.TLSClientConfig{
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw}), CertData: certPEM, KeyData: keyPEM}}
	events := &sink{}
	p, err := Start(Options{Name: "you", Upstream: cfg, Publish: events.Publish, Log: testLogger(t), PassForeign: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	client := httpClient(t, p)
	url := p.URL() + "/api/v1/namespaces/" + testNS + "/configmaps/x"
	tests := []struct {
		name, auth string
		want       seen
		counted    int
	}{
		{"the proxy's token", "Bearer " + p.Token(), seen{cn: testIdentity}, 1},
		{"a ServiceAccount's token", "Bearer sa-token", seen{auth: "Bearer sa-token"}, 0},
		{"no credentials", "", seen{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			before := p.Total()
			if res := raw(t, client, http.MethodGet, url, tt.auth); res.StatusCode != http.StatusOK {
				t.Fatalf("status = %d, want 200", res.StatusCode)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 || got[0] != tt.want {
				t.Errorf("upstream saw %+v, want one request as %+v", got, tt.want)
			}
			if n := p.Total() - before; n != tt.counted {
				t.Errorf("counted %d, want %d", n, tt.counted)
			}
		})
	}
	events.waitEvents(t, 1, isCall("get", "configmaps"))
	if n := len(events.All()); n != 1 {
		t.Errorf("%d events, want 1: only the proxy's own token's request", n)
	}
}
