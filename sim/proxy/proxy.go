// Package proxy is the counting API proxy: one per operator replica, on
// loopback between that replica and the kube-apiserver. It counts the
// replica's requests by verb and resource, publishes one trace event per
// request and one per event a watch delivers (watch.go), and can partition
// the replica (refuse or hang its traffic) or slow it down. It serves only
// the holder of its random bearer token and talks to the apiserver as the
// replica's own identity (Options.Upstream).
//
// The proxy serves TLS, with a self-signed certificate made for it at Start
// and trusted by its kubeconfig. Plain HTTP would not do: clientcmd, which
// kubectl and client-go use to read kubeconfigs, drops the user's token when
// the server is not https, so every request would arrive without one.
package proxy

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/fault"
)

// Mode is how the proxy treats its replica's traffic.
type Mode int

const (
	// Normal forwards every request.
	Normal Mode = iota
	// Refuse answers every new request at once with 503 and a Status body
	// "partitioned by rlab", and ends open requests (watches included).
	Refuse
	// Hang holds every new request until the mode changes back or the client
	// gives up, and ends open requests (watches included).
	Hang
)

func (m Mode) String() string {
	switch m {
	case Normal:
		return "normal"
	case Refuse:
		return "refuse"
	case Hang:
		return "hang"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// PartitionMessage is the Status message of a refused request.
const PartitionMessage = "partitioned by rlab"

// Options configures a Proxy.
type Options struct {
	// Name is the replica name, e.g. "clientgo/a"; events carry Source
	// "proxy/"+Name.
	Name string
	// Upstream is the replica's own identity (client cert) to the real
	// apiserver.
	Upstream *rest.Config
	// Publish is called for every finished request (for a watch: once its
	// response headers arrive) and for every event a watch delivers. It
	// must not block; it is called from one goroutine of the proxy's own,
	// never from the request path. May be nil.
	Publish func(trace.Event)
	// Log may be nil.
	Log *slog.Logger
	// PassForeign forwards a request that carries credentials other than
	// the proxy's token (or none) with them, as it came, uncounted and
	// untraced, instead of refusing it: the student's proxy, whose
	// kubeconfig may serve as another tool's cluster (a classroom's
	// students, another rlab on this one), where those tools' own
	// identities must speak.
	PassForeign bool
	// Kill kills the replica behind this proxy: the crash fault's. Nil:
	// the proxy refuses that fault.
	Kill func() error
}

// queueSize bounds the events waiting for Publish; beyond it they are
// dropped and counted in a trace.Dropped event.
const queueSize = 1024

// closeWait bounds how long Close waits for open requests to return.
const closeWait = 5 * time.Second

var (
	errPartitioned = errors.New(PartitionMessage)
	errClosed      = errors.New("proxy closed")
	// errDisconnected ends a watch the disconnect fault (or a fault that
	// must see every watch) closes.
	errDisconnected = errors.New("watch closed by an rlab fault")
)

// Proxy is one replica's counting API proxy.
type Proxy struct {
	name   string
	source string
	token  string
	url    string
	caPEM  []byte
	log    *slog.Logger
	rp     *httputil.ReverseProxy
	// foreign forwards others' credentials untouched (Options.PassForeign).
	foreign *httputil.ReverseProxy
	srv     *http.Server

	// base is cancelled by Close; every epoch derives from it.
	base       context.Context
	cancelBase context.CancelFunc

	mu      sync.Mutex
	mode    Mode
	changed chan struct{} // closed and replaced on every mode change
	// epoch is cancelled when the mode leaves Normal: every forwarded request
	// holds the epoch it started in, so a partition ends them all.
	epoch       context.Context
	cancelEpoch context.CancelFunc
	latency     time.Duration
	counts      map[string]int
	total       int
	closed      bool
	inflight    sync.WaitGroup

	// events feeds publish; qmu guards sending against Close closing it.
	events  chan trace.Event
	qmu     sync.RWMutex
	qclosed bool
	dropped atomic.Int64
	pumped  chan struct{}

	watchEvents atomic.Int64 // see WatchEvents
	versions    versions     // the objects' last resourceVersions (unchanged.go)

	// faults are the faults on (fault.go), read once per request;
	// watches the open watches' cancels, for the faults that close them.
	faults  atomic.Pointer[faults]
	kill    func() error
	watches map[*exchange]context.CancelCauseFunc

	closeOnce sync.Once
	closeErr  error
}

// Start listens on 127.0.0.1:0 (loopback only; TLS with a certificate of
// its own, see the package comment) and serves until Close.
func Start(opts Options) (*Proxy, error) {
	if opts.Upstream == nil {
		return nil, errors.New("proxy: no upstream config")
	}
	logger := opts.Log
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("proxy", opts.Name)

	target, _, err := rest.DefaultServerUrlFor(opts.Upstream)
	if err != nil {
		return nil, fmt.Errorf("proxy %s: upstream url: %w", opts.Name, err)
	}
	transport, err := rest.TransportFor(opts.Upstream)
	if err != nil {
		return nil, fmt.Errorf("proxy %s: upstream transport: %w", opts.Name, err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("proxy %s: token: %w", opts.Name, err)
	}
	cert, caPEM, err := selfSigned()
	if err != nil {
		return nil, fmt.Errorf("proxy %s: certificate: %w", opts.Name, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy %s: listen: %w", opts.Name, err)
	}

	p := &Proxy{
		name:    opts.Name,
		source:  "proxy/" + opts.Name,
		token:   hex.EncodeToString(raw[:]),
		url:     "https://" + ln.Addr().String(),
		caPEM:   caPEM,
		log:     logger,
		changed: make(chan struct{}),
		counts:  map[string]int{},
		events:  make(chan trace.Event, queueSize),
		pumped:  make(chan struct{}),
		kill:    opts.Kill,
		watches: map[*exchange]context.CancelCauseFunc{},
	}
	p.base, p.cancelBase = context.WithCancel(context.Background())
	p.epoch, p.cancelEpoch = context.WithCancel(p.base)

	errLog := slog.NewLogLogger(logger.Handler(), slog.LevelDebug)
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// The replica's token is for this proxy only; upstream it is
			// the replica's client certificate that speaks.
			r.Out.Header.Del("Authorization")
		},
		Transport:      transport,
		FlushInterval:  -1, // watches stream event by event
		ModifyResponse: p.onResponse,
		ErrorHandler:   p.onError,
		ErrorLog:       errLog,
	}
	if opts.PassForeign {
		// The upstream's address and CA, none of its credentials.
		anon, err := rest.TransportFor(rest.AnonymousClientConfig(opts.Upstream))
		if err != nil {
			return nil, fmt.Errorf("proxy %s: upstream transport: %w", opts.Name, err)
		}
		p.foreign = &httputil.ReverseProxy{
			Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
			Transport:     anon,
			FlushInterval: -1,
			ErrorLog:      errLog,
		}
	}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ErrorLog:          errLog,
		BaseContext:       func(net.Listener) context.Context { return p.base },
	}

	go p.pump(opts.Publish)
	go func() {
		if err := p.srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("proxy serve", "err", err)
		}
	}()
	logger.Info("proxy started", "url", p.url, "upstream", target.String())
	return p, nil
}

// URL is "https://127.0.0.1:PORT".
func (p *Proxy) URL() string { return p.url }

// CAData is the PEM certificate the proxy serves, for clients configured
// without Kubeconfig (rest.Config.TLSClientConfig.CAData).
func (p *Proxy) CAData() []byte { return append([]byte(nil), p.caPEM...) }

// Token is the bearer token the replica must present.
func (p *Proxy) Token() string { return p.token }

// Kubeconfig is a kubeconfig for the replica: this proxy and its
// certificate, its token, and namespace as the context's default.
func (p *Proxy) Kubeconfig(namespace string) ([]byte, error) {
	name := "rlab"
	if p.name != "" {
		name = "rlab-" + strings.ReplaceAll(p.name, "/", "-")
	}
	cfg := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{name: {Server: p.url, CertificateAuthorityData: p.CAData()}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {Token: p.token}},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: name, AuthInfo: name, Namespace: namespace}},
		CurrentContext: name,
	}
	b, err := clientcmd.Write(cfg)
	if err != nil {
		return nil, fmt.Errorf("proxy %s: kubeconfig: %w", p.name, err)
	}
	return b, nil
}

// SetMode switches the mode. Leaving Normal ends every open request, so
// watches break as they would on a real partition; hung requests re-check the
// new mode.
func (p *Proxy) SetMode(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setModeLocked(m)
}

// setModeLocked is SetMode with p.mu held.
func (p *Proxy) setModeLocked(m Mode) {
	if m == p.mode {
		return
	}
	old := p.mode
	p.mode = m
	if m != Normal {
		p.cancelEpoch()
		p.epoch, p.cancelEpoch = context.WithCancel(p.base)
	}
	close(p.changed)
	p.changed = make(chan struct{})
	p.log.Info("proxy mode", "from", old.String(), "to", m.String())
}

// Mode is the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// SetLatency sets the delay added before forwarding each request.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = max(d, 0)
}

// Latency is the delay added before forwarding each request.
func (p *Proxy) Latency() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latency
}

// Counts is a copy of the request counts by "verb resource", e.g.
// "list echoes", "watch deployments", "patch echoes/status".
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// Total is the number of requests counted.
func (p *Proxy) Total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total
}

// Close stops listening, ends open requests and waits (a bounded while) for
// them to return. Events already queued are still published.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		// Connections first, so that no request ended below can still
		// answer; then the context that ends hung, delayed and forwarded
		// requests.
		p.closeErr = p.srv.Close()
		p.cancelBase()
		done := make(chan struct{})
		go func() { p.inflight.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(closeWait):
			p.log.Warn("proxy close: requests still open", "after", closeWait)
		}
		p.qmu.Lock()
		p.qclosed = true
		close(p.events)
		p.qmu.Unlock()
		<-p.pumped
		p.log.Info("proxy closed", "total", p.Total())
	})
	return p.closeErr
}

// ctxKey keys the per-request state in the request context.
type ctxKey struct{}

// exchange is one request's state, shared by the handler and the
// ReverseProxy hooks, which run on the handler's goroutine.
type exchange struct {
	call      call
	start     time.Time
	userAgent string
	code      int  // set when the writer cannot know: 503 from a partition, -1 for nobody answered
	published bool // a watch is published when its headers arrive
	watch     bool
	// at is the fault set when the watch started (stale, unobserved,
	// disconnect), read once.
	at faults
	// body is an update's request body, kept to compare with the answer;
	// unchanged and differed are what the answer showed (unchanged.go).
	body      []byte
	unchanged bool
	differed  []string
}

// maxBody is the largest request body forwarded; the apiserver's own limit
// is 3 MiB.
const maxBody = 8 << 20

// ServeHTTP authenticates, applies the mode and latency, and forwards.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.authorized(r) {
		if p.foreign != nil {
			var code int
			if readBody(w, r, &code) {
				p.foreign.ServeHTTP(w, r) // someone else's identity speaks
			}
			return
		}
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, errClosed.Error())
		return
	}
	p.inflight.Add(1)
	c := classify(r)
	p.counts[c.key()]++
	p.total++
	p.mu.Unlock()
	defer p.inflight.Done()

	x := &exchange{call: c, start: time.Now(), userAgent: r.UserAgent(), watch: c.verb == "watch"}
	sw := &statusWriter{ResponseWriter: w}
	// Deferred so that a request the ReverseProxy aborts mid-body (it panics
	// with http.ErrAbortHandler) is still published.
	defer func() {
		if x.published {
			return
		}
		code := x.code
		if code == 0 {
			code = sw.code
		}
		p.publish(x, code)
	}()

	if !readBody(sw, r, &x.code) {
		return
	}
	if (c.verb == "update" || (c.verb == "create" && c.object == "")) && r.GetBody != nil {
		if b, err := r.GetBody(); err == nil {
			x.body, _ = io.ReadAll(b)
		}
	}
	if c.verb == "create" && c.object == "" {
		// A create names its object in the body, not the path: named here,
		// its attempts join the updates of the same object.
		x.call.object = createdName(c, x.body)
		x.body = nil
	}
	if !p.beforeForward(r.Context(), sw, x) {
		if x.code < 0 {
			panic(http.ErrAbortHandler) // the client left while a fault held it
		}
		return
	}

	epoch, err := p.admit(r.Context())
	if err != nil {
		switch {
		case errors.Is(err, errPartitioned):
			x.code = http.StatusServiceUnavailable
			writeStatus(sw, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, PartitionMessage)
		default:
			// The client gave up, or the proxy is closing: nobody is
			// left to answer, and code 0 says so. Aborting drops the
			// connection instead of letting net/http send an empty 200.
			x.code = -1
			panic(http.ErrAbortHandler)
		}
		return
	}

	// The forwarded request ends with the client, or with the epoch it
	// started in (a partition or Close).
	ctx, cancel := context.WithCancelCause(context.WithValue(r.Context(), ctxKey{}, x))
	defer cancel(nil)
	stop := context.AfterFunc(epoch, func() {
		if p.base.Err() != nil {
			cancel(errClosed)
		} else {
			cancel(errPartitioned)
		}
	})
	defer stop()
	if x.watch {
		defer p.openWatch(x, cancel)()
	}
	p.rp.ServeHTTP(sw, r.WithContext(ctx))
}

// readBody reads the whole request body before it is forwarded, and says
// whether to go on; if not, it has answered, and set *code. Streamed
// through, a body the apiserver answers without reading (a 403 is decided
// before the body) could leave the forwarded HTTP/2 stream waiting on flow
// control, and the client waiting for a response body that never ends.
func readBody(w http.ResponseWriter, r *http.Request, code *int) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		*code = -1
		panic(http.ErrAbortHandler) // the client went away mid-body
	}
	if len(body) > maxBody {
		*code = http.StatusRequestEntityTooLarge
		writeStatus(w, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge, "request body over 8 MiB")
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return true
}

// admit waits out the mode and the latency. It returns the epoch to forward
// in, or errPartitioned if the request is refused, or an error if the client
// gave up or the proxy closed while it waited.
func (p *Proxy) admit(ctx context.Context) (context.Context, error) {
	delayed := false
	for {
		p.mu.Lock()
		mode, changed, epoch, latency := p.mode, p.changed, p.epoch, p.latency
		p.mu.Unlock()
		switch {
		case mode == Refuse:
			return nil, errPartitioned
		case mode == Hang:
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-p.base.Done():
				return nil, errClosed
			}
		case !delayed && latency > 0:
			delayed = true
			t := time.NewTimer(latency)
			select {
			case <-t.C:
				continue // the mode may have changed meanwhile
			case <-ctx.Done():
				t.Stop()
				return nil, context.Cause(ctx)
			case <-p.base.Done():
				t.Stop()
				return nil, errClosed
			}
		default:
			return epoch, nil
		}
	}
}

// authorized is true for "Authorization: Bearer <token>", compared in
// constant time.
func (p *Proxy) authorized(r *http.Request) bool {
	const prefix = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(h[len(prefix):])), []byte(p.token)) == 1
}

// onResponse runs when upstream response headers arrive: a watch is
// published now, as it may stay open for minutes, and its body is wrapped to
// count the events it delivers.
func (p *Proxy) onResponse(res *http.Response) error {
	x, ok := res.Request.Context().Value(ctxKey{}).(*exchange)
	if ok && x.watch && !x.published {
		x.published = true
		p.publish(x, res.StatusCode)
	}
	if ok && x.watch && res.StatusCode == http.StatusOK {
		p.countWatch(x, res)
	}
	if ok && !x.watch && res.StatusCode/100 == 2 && tracksVersion(x.call) {
		x.unchanged, x.differed = p.unchangedWrite(x, res)
	}
	if ok && fault.IsWrite(x.call.verb) {
		p.afterWrite(x, res.StatusCode)
	}
	return nil
}

// onError answers a request that got no upstream response.
func (p *Proxy) onError(w http.ResponseWriter, r *http.Request, err error) {
	x, _ := r.Context().Value(ctxKey{}).(*exchange)
	cause := context.Cause(r.Context())
	switch {
	case errors.Is(cause, errPartitioned):
		if x != nil {
			x.code = http.StatusServiceUnavailable
		}
		writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, PartitionMessage)
	case errors.Is(cause, errClosed) || errors.Is(cause, errDisconnected) || r.Context().Err() != nil:
		// Nobody to answer: the client left or the proxy is closing.
		if x != nil {
			x.code = -1
		}
		p.log.Debug("proxy request ended", "err", err, "cause", cause)
		panic(http.ErrAbortHandler) // see ServeHTTP
	default:
		p.log.Warn("proxy upstream error", "err", err, "path", r.URL.Path)
		if x != nil {
			x.code = http.StatusBadGateway
		}
		writeStatus(w, http.StatusBadGateway, metav1.StatusReasonServiceUnavailable, "rlab proxy: upstream: "+err.Error())
	}
}

// publish queues the event of one request; it never blocks.
func (p *Proxy) publish(x *exchange, code int) {
	if code < 0 {
		code = 0
	}
	latency := float64(time.Since(x.start).Microseconds()) / 1000
	p.log.Debug("api request", "verb", x.call.verb, "resource", x.call.resource,
		"ns", x.call.namespace, "object", x.call.object, "code", code, "latency_ms", latency)
	req := trace.Request{Verb: x.call.verb, Resource: x.call.resource, Code: code, LatencyMS: latency, UserAgent: x.userAgent,
		Unchanged: x.unchanged, Differed: x.differed}
	p.enqueue(req.Event(time.Now(), p.source, x.call.namespace, x.call.object))
}

func (p *Proxy) enqueue(e trace.Event) {
	p.qmu.RLock()
	defer p.qmu.RUnlock()
	if p.qclosed {
		return
	}
	select {
	case p.events <- e:
	default:
		p.dropped.Add(1)
	}
}

// pump calls publish for each queued event, off the request path, and
// reports drops once there is room again.
func (p *Proxy) pump(publish func(trace.Event)) {
	defer close(p.pumped)
	for e := range p.events {
		if publish == nil {
			continue
		}
		publish(e)
		if n := p.dropped.Swap(0); n > 0 {
			publish(trace.Event{Time: time.Now(), Source: p.source, Kind: trace.Dropped,
				Payload: trace.Loss{Count: int(n)}})
		}
	}
}

// writeStatus writes a metav1.Status, which client-go turns into a typed
// error (apierrors.IsServiceUnavailable, ...).
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	writeStatusObject(w, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  msg,
		Reason:   reason,
		Code:     int32(code),
	})
}

// writeStatusObject writes st with its code.
func writeStatusObject(w http.ResponseWriter, st *metav1.Status) {
	body, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(body)
}

// statusWriter remembers the final status code. Unwrap lets
// http.ResponseController (used by ReverseProxy to flush) reach the real
// writer.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.code = code // 1xx are interim
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// selfSigned makes the proxy's serving certificate for 127.0.0.1, valid for
// a year; it lives as long as the proxy and is trusted only by its
// kubeconfig.
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "rlab-proxy"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
