package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/proc"
)

// NodeName is the first fake Node kwok plays the kubelet for.
const NodeName = "rlab-node-1"

// Fake Nodes: a few with room for many Pods, so 500 Echoes per style fit (3
// styles × 500 × up to 2 replicas = 3000 Pods, plus the sample Echoes). Pods
// have no resource requests; only the pod count limits a node. More than one
// node so the scheduler spreads them, as on a real cluster.
const (
	NodeCount   = 4
	PodsPerNode = 1000
)

// NodeNames are the fake Nodes, NodeName first.
func NodeNames() []string {
	names := make([]string, NodeCount)
	for i := range names {
		names[i] = fmt.Sprintf("rlab-node-%d", i+1)
	}
	return names
}

// Controllers kube-controller-manager runs: two of the three envtest lacks
// (Deployments→ReplicaSets→Pods, namespace deletion), node lifecycle,
// which lifts the not-ready taint once kwok reports the Node Ready, and
// resource quota, which counts what a ResourceQuota holds (without it the
// apiserver refuses every create a quota covers: "status unknown for
// quota"), as a classroom's have (rlab classroom prepare). The
// third, garbage collection, runs in a kube-controller-manager of its own
// (GarbageCollector), which rlab restarts when a CRD is established after
// it started (gc.go).
const Controllers = "deployment,replicaset,nodelifecycle,namespace,resourcequota"

// GarbageCollector names the kube-controller-manager process that runs the
// garbage collector alone.
const GarbageCollector = "garbage-collector"

// Client limits of kube-controller-manager and kube-scheduler. Their defaults
// (20/30 and 50/100 requests per second) would make 3000 Pods take minutes;
// the apiserver on loopback is the real limit. kwok needs none: its clientset
// sets a fake always-allow rate limiter (sigs.k8s.io/kwok v0.8.0,
// pkg/utils/client/clientset.go).
const (
	controllerQPS   = "1000"
	controllerBurst = "2000"
)

// startPoll is how often start-up waits look: they are on the critical path.
const startPoll = 10 * time.Millisecond

// EnvtestOptions configures the envtest backend.
type EnvtestOptions struct {
	Assets string // directory with the control-plane binaries
	RunDir string // scratch: certs, etcd data, kubeconfig; removed by Stop
	LogDir string // one log file per component
	PIDDir string // live child pids, reaped by the next run after a crash
	// TempDir, if set, is the components' TMPDIR: a killed run's temp files
	// stay where the next run removes them.
	TempDir string
	Log     *slog.Logger
	// Progress, if set, is called as each start-up phase ends.
	Progress func(Phase)
	// CRDs are installed in Serve beside the Echo CRD, or instead of it
	// with NoEchoCRD: each is established and served before
	// kube-controller-manager starts, as the Echo CRD is (sim/testenv).
	CRDs      []*apiextensionsv1.CustomResourceDefinition
	NoEchoCRD bool
	// NoGarbageCollector runs no garbage collector: what envtest lacks,
	// for a test that must fail without it (lesson 22's check).
	NoGarbageCollector bool
	// SettleStopsNothing keeps the control plane up when Settle fails:
	// sim/testenv runs Settle behind the tests, which may well pass with a
	// Node still tainted, and reports the failure at Stop.
	SettleStopsNothing bool
}

// Envtest is the default backend: a real control plane from local binaries,
// the ones controller-runtime's envtest runs (etcd, kube-apiserver) and the
// ones it lacks (kube-controller-manager, kube-scheduler, kwok). It starts
// them itself: envtest starts etcd and the apiserver one after the other,
// runs each binary's --help first to probe its flags, and polls their health
// every 100 ms, which together cost about a second of a start.
type Envtest struct {
	opts EnvtestOptions

	phases
	mu       sync.Mutex
	core     []*proc.Child // etcd, kube-apiserver
	children []*proc.Child // the controllers
	logs     []*os.File
	logOf    map[string]*os.File // each component's, by name
	cfg      *rest.Config
	kubecfg  []byte
	version  string
	pki      pkiFiles
	// cs and health carry Serve's client and the controllers' health
	// endpoints to Complete.
	cs     kubernetes.Interface
	health []healthURL
	// seeded closes once rlab's head start on the bootstrap RBAC is over
	// (bootstrap.go); stopSeeding ends it early (Stop).
	seeded      <-chan struct{}
	stopSeeding context.CancelFunc
	// gc is the garbage collector's restarts (gc.go); stopping says Stop
	// has begun: nothing starts any more.
	gc       gcState
	stopping bool
}

// NewEnvtest returns an unstarted envtest backend.
func NewEnvtest(opts EnvtestOptions) *Envtest {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Envtest{opts: opts, phases: phases{log: opts.Log, progress: opts.Progress}}
}

// Type implements Cluster.
func (e *Envtest) Type() backend.Backend { return backend.Envtest }

// Detail implements Cluster: envtest is the pinned control plane itself.
func (e *Envtest) Detail() string { return "" }

// Config implements Cluster.
func (e *Envtest) Config() *rest.Config { return rest.CopyConfig(e.cfg) }

// Kubeconfig implements Cluster.
func (e *Envtest) Kubeconfig() []byte { return e.kubecfg }

// Version implements Cluster.
func (e *Envtest) Version() string { return e.version }

// Start implements Cluster: Serve, Ready, then Settle. On error everything
// started so far is stopped.
//
// The phases are the steps Start waits on, in order; other work overlaps
// them. etcd and the apiserver start together (the apiserver spends about a
// second building its handlers before it needs etcd). Once the apiserver
// serves, kube-scheduler, kwok and the Nodes start while the CRD installs;
// kube-controller-manager waits for the CRD, since its garbage collector
// discovers resource types at start and re-syncs only every 30 s, and for
// /healthz, which it polls once a second before it starts anything. The
// apiserver's post-start hooks (RBAC bootstrap among them) first try after a
// fixed second, and /healthz fails until they are done: Ready waits for
// them. The operators need of them only the discovery roles, which Serve
// makes (bootstrap.go).
func (e *Envtest) Start(ctx context.Context) error {
	if err := e.Serve(ctx); err != nil {
		return err
	}
	if err := e.Ready(ctx); err != nil {
		return err
	}
	return e.Settle(ctx)
}

var _ Phased = (*Envtest)(nil)

// Serve is Start's first phase: the apiserver serves, the Echo CRD is
// established and the Nodes are Ready. On error everything started so far
// is stopped.
func (e *Envtest) Serve(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()
	e.begin()
	for _, d := range []string{e.opts.RunDir, e.opts.LogDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("envtest dirs: %w", err)
		}
	}
	if err := e.step("apiserver+etcd", func() error { return e.startAPIServer(ctx) }); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(e.cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	e.cs = cs
	nodes := make(chan error, 1)
	step := "echo crd"
	if e.opts.NoEchoCRD {
		step = "crds"
	}
	if err := e.step(step, func() error {
		// The scheduler and kwok need only a serving apiserver: let them
		// load while the CRD installs.
		h, err := e.startControllers("kube-scheduler", "kwok")
		if err != nil {
			return err
		}
		e.mu.Lock()
		e.health = append(e.health, h...)
		e.mu.Unlock()
		go func() { nodes <- e.createNodes(ctx, cs) }()
		// The roles the operators' discovery needs first, waited for;
		// the rest of the hook's objects behind them, for Ready. Both are
		// a head start on the hook, which makes whatever is missing: a
		// failure is logged, not fatal. They run on a context of their own
		// (Stop ends it), since Serve's may end before Ready.
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		e.mu.Lock()
		e.stopSeeding = cancel
		e.mu.Unlock()
		seeded := make(chan struct{})
		done := make(chan struct{})
		e.seeded = done
		go func() {
			defer close(done)
			err := seedBootstrap(sctx, cs, bootstrapRoles(), 1)
			close(seeded)
			if err != nil {
				e.opts.Log.Warn("no head start on the apiserver's discovery roles", "err", err)
				return
			}
			e.mark("rlab", "discovery roles made")
			e.seedRest(sctx, cs)
		}()
		if err := e.installCRD(ctx); err != nil {
			return err
		}
		select {
		case <-seeded:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}); err != nil {
		return err
	}
	return e.step("nodes ready", func() error {
		if err := <-nodes; err != nil {
			return err
		}
		return e.readyNodes(ctx, cs, false)
	})
}

// seedRest makes the rest of the hook's objects from the copy of an earlier
// start of the same binaries, if there is one.
func (e *Envtest) seedRest(ctx context.Context, cs kubernetes.Interface) {
	objs, ok := loadBootstrap(e.opts.Assets)
	if !ok {
		return
	}
	if err := seedBootstrap(ctx, cs, objs, 8); err != nil {
		e.opts.Log.Warn("no head start on the apiserver's bootstrap RBAC", "err", err)
		return
	}
	e.mark("rlab", fmt.Sprintf("bootstrap RBAC made: %d objects, as the hook made them on an earlier start", objs.count()))
}

// Ready is the second of Start's three phases, after Serve: the apiserver
// healthy (/healthz, its post-start hooks done) and every component running,
// kube-controller-manager now too. It is what kwokctl's --wait waits for.
// On error, unless ctx ended, everything is stopped.
func (e *Envtest) Ready(ctx context.Context) (err error) {
	defer func() {
		// Cancelled, it leaves stopping to its caller, which stops the
		// operators before the control plane.
		if err != nil && ctx.Err() == nil {
			_ = e.Stop()
		}
	}()
	cs := e.cs
	if cs == nil {
		return errors.New("envtest: Ready before Serve")
	}
	if e.seeded != nil {
		select {
		case <-e.seeded:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := e.step("apiserver healthy", func() error { return e.apiserverHealthy(ctx, cs) }); err != nil {
		return err
	}
	if err := e.step("controllers", func() error {
		names := []string{"kube-controller-manager", GarbageCollector}
		if e.opts.NoGarbageCollector {
			names = names[:1]
		}
		h, err := e.startControllers(names...)
		e.mu.Lock()
		e.health = append(h, e.health...)
		e.mu.Unlock()
		return err
	}); err != nil {
		return err
	}
	if !e.opts.NoGarbageCollector {
		e.watchCRDs()
	}
	return nil
}

// Settle is the last of Start's phases, after Ready: the Nodes untainted
// (kube-controller-manager's node lifecycle) and every component healthy.
// On error, unless ctx ended or SettleStopsNothing, everything is stopped.
func (e *Envtest) Settle(ctx context.Context) (err error) {
	defer func() {
		// Cancelled, it leaves stopping to its caller, which stops the
		// operators before the control plane.
		if err != nil && ctx.Err() == nil && !e.opts.SettleStopsNothing {
			_ = e.Stop()
		}
	}()
	cs := e.cs
	if err := saveBootstrap(ctx, cs, e.opts.Assets); err != nil {
		e.opts.Log.Warn("no copy of the bootstrap RBAC for the next start", "err", err)
	}
	if err := e.step("nodes untainted", func() error { return e.readyNodes(ctx, cs, true) }); err != nil {
		return err
	}
	if err := e.step("healthy", func() error { return e.waitHealthy(ctx, cs) }); err != nil {
		return err
	}
	e.mu.Lock()
	all := append(e.core[:len(e.core):len(e.core)], e.children...)
	e.mu.Unlock()
	e.noteCPU(all)
	return nil
}

// healthURL is a controller's /healthz.
type healthURL struct{ name, url string }

func (e *Envtest) logFile(name string, restart bool) (*os.File, error) {
	// New at each start of rlab; a component restarted (the garbage
	// collector) goes on writing to the file its earlier run had open.
	e.mu.Lock()
	defer e.mu.Unlock()
	if f := e.logOf[name]; restart && f != nil {
		return f, nil
	}
	f, err := os.OpenFile(filepath.Join(e.opts.LogDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	e.logs = append(e.logs, f)
	if e.logOf == nil {
		e.logOf = map[string]*os.File{}
	}
	e.logOf[name] = f
	return f, nil
}

// start runs one component as a child of rlab (its own process group, killed
// if rlab dies), output to its log file.
func (e *Envtest) start(name string, args []string, core bool) error {
	return e.startAs(name, name, args, core, false)
}

// startAs starts binary as the component name; restarted, it adds to the
// log of its earlier run.
func (e *Envtest) startAs(name, binary string, args []string, core, restart bool) error {
	lf, err := e.logFile(name, restart)
	if err != nil {
		return err
	}
	var env []string // nil: rlab's own
	if e.opts.TempDir != "" {
		env = append(os.Environ(), "TMPDIR="+e.opts.TempDir)
	}
	if name == "kube-apiserver" {
		if env == nil {
			env = os.Environ()
		}
		env = append(env, apiserverGC...)
	}
	c, err := proc.StartCmd(e.opts.PIDDir, proc.Cmd{Name: name, Path: filepath.Join(e.opts.Assets, binary), Args: args, Env: env, Stdout: lf, Stderr: lf})
	if err != nil {
		return err
	}
	e.mu.Lock()
	if core {
		e.core = append(e.core, c)
	} else {
		e.children = append(e.children, c)
	}
	e.mu.Unlock()
	e.mark(name, fmt.Sprintf("started (pid %d)", c.PID()))
	return nil
}

// apiserverGC lets kube-apiserver start without collecting garbage: it
// allocates about 300 MB in its first two seconds, and its collections
// then cost 0.15 to 0.25 s of the time to /healthz (medians of 8 starts
// alternated with the default, 2 cores). The limit makes it collect from
// there on. The price is memory at rest: it climbs toward the limit (580 MB
// resident after a minute) where the default rests at 270 to 365 MB. At 400 MiB it rested at 465 MB, but with 1,500 Echoes
// and their pods (a live heap of 221 MB) it collected 135 times where the
// default did 72, and used 129 s of CPU against 97; at 600 MiB, 36 times
// and 79 s (652 MB resident, the default's 610).
var apiserverGC = []string{"GOGC=off", "GOMEMLIMIT=600MiB"}

// startAPIServer starts etcd and kube-apiserver at once and returns when the
// apiserver answers an admin's request. Their ports are picked free but only
// bound a moment (about a second, for the apiserver) later; if one was taken
// meanwhile (the apiserver's own etcd clients take ephemeral ports), they
// start again on new ones, as envtest did.
func (e *Envtest) startAPIServer(ctx context.Context) error {
	pk, err := newPKI()
	if err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	if e.pki, err = pk.write(filepath.Join(e.opts.RunDir, "pki")); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		err := e.tryAPIServer(ctx, pk)
		if err == nil || attempt == 3 || !e.portClash() {
			return err
		}
		e.opts.Log.Info("port taken, starting etcd and kube-apiserver again", "err", err)
		e.stopCore()
		if err := os.RemoveAll(filepath.Join(e.opts.RunDir, "etcd")); err != nil {
			return fmt.Errorf("etcd data: %w", err)
		}
	}
}

// portClash tells whether etcd or the apiserver died of a port in use.
func (e *Envtest) portClash() bool {
	for _, name := range []string{"etcd", "kube-apiserver"} {
		b, err := os.ReadFile(filepath.Join(e.opts.LogDir, name+".log"))
		if err == nil && strings.Contains(string(b), "address already in use") {
			return true
		}
	}
	return false
}

// stopCore kills etcd and the apiserver: their data is thrown away, and the
// apiserver's graceful shutdown takes about a second.
func (e *Envtest) stopCore() []error {
	e.mu.Lock()
	core := e.core
	e.core = nil
	e.mu.Unlock()
	var errs []error
	for _, c := range core {
		if err := c.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, proc.ErrExited) {
			errs = append(errs, fmt.Errorf("kill %s: %w", c.Name, err))
		}
	}
	for _, c := range core {
		if err := c.Stop(5 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func (e *Envtest) tryAPIServer(ctx context.Context, pk *pki) error {
	var ports [3]int
	for i := range ports {
		var err error
		if ports[i], err = freePort(); err != nil {
			return err
		}
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	apiPort := strconv.Itoa(ports[2])
	if err := e.start("etcd", []string{
		"--data-dir=" + filepath.Join(e.opts.RunDir, "etcd"),
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		// Scratch data, removed by Stop.
		"--unsafe-no-fsync=true",
		// One member: the first election needs no real timeout. With the
		// defaults (100 ms ticks, 1 s) it took about 0.3 s.
		"--heartbeat-interval=10",
		"--election-timeout=100",
	}, true); err != nil {
		return err
	}
	// envtest's flags, less its probes.
	if err := e.start("kube-apiserver", []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--secure-port=" + apiPort,
		"--tls-cert-file=" + e.pki.servingCert,
		"--tls-private-key-file=" + e.pki.servingKey,
		"--client-ca-file=" + e.pki.ca,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		// No token volume in Pods: no kubelet would mount it.
		"--disable-admission-plugins=ServiceAccount",
		"--service-account-issuer=https://127.0.0.1:" + apiPort,
		"--service-account-key-file=" + e.pki.saKey,
		"--service-account-signing-key-file=" + e.pki.saKey,
		// Measured and left out, no gain beyond noise on 2 cores:
		// --enable-priority-and-fairness=false, and --runtime-config
		// dropping batch, autoscaling, certificates and flowcontrol.
	}, true); err != nil {
		return err
	}
	e.cfg = &rest.Config{
		Host: "https://127.0.0.1:" + apiPort,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: pk.ca.cert, CertData: pk.admin.cert, KeyData: pk.admin.key,
		},
		QPS: 200, Burst: 400,
	}
	kc, err := kubeconfig(e.cfg)
	if err != nil {
		return err
	}
	e.kubecfg = kc
	if err := os.WriteFile(e.adminKubeconfig(), e.kubecfg, 0o600); err != nil {
		return fmt.Errorf("admin kubeconfig: %w", err)
	}
	probe := rest.CopyConfig(e.cfg)
	probe.Timeout = 2 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(probe)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	err = e.poll(ctx, 60*time.Second, "kube-apiserver to serve", func(context.Context) (bool, error) {
		v, err := dc.ServerVersion()
		if err != nil {
			return false, err
		}
		e.version = v.GitVersion
		return true, nil
	})
	if err == nil {
		e.mark("kube-apiserver", "serving (/version answered)")
	}
	return err
}

// kubeconfig is cfg's admin identity as a kubeconfig file, with the names
// envtest gave it.
func kubeconfig(cfg *rest.Config) ([]byte, error) {
	const name = "envtest"
	c := clientcmdapi.NewConfig()
	c.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	c.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	c.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	c.CurrentContext = name
	b, err := clientcmd.Write(*c)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return b, nil
}

func (e *Envtest) adminKubeconfig() string { return filepath.Join(e.opts.RunDir, "admin.kubeconfig") }

// installCRD creates the Echo CRD (unless NoEchoCRD) and the project's
// (CRDs), and waits until they are Established and served, before the
// garbage collector starts: it discovers resource types at start and
// otherwise only every 30 s.
func (e *Envtest) installCRD(ctx context.Context) error {
	own := make(chan error, 1)
	go func() {
		if len(e.opts.CRDs) == 0 {
			own <- nil
			return
		}
		err := installCRDs(ctx, e.cfg, e.opts.CRDs, e.poll)
		if err == nil {
			e.mark("rlab", fmt.Sprintf("%d CRDs of the project's established and listed", len(e.opts.CRDs)))
		}
		own <- err
	}()
	var err error
	if !e.opts.NoEchoCRD {
		err = installEchoCRDMarked(ctx, e.cfg, e.poll, func(what string) { e.mark("rlab", what) })
	}
	return errors.Join(err, <-own)
}

// freePort is a loopback port free now, for a component to bind a moment
// later. It is chosen below the kernel's ephemeral ports (32768 and up on
// Linux, 49152 on macOS): one of those can be handed to any outgoing
// connection, or a listener on :0, between this check and the bind (seen:
// kube-scheduler exiting on a taken port while other sandboxes ran). (A
// variable: a test hands out a taken one.)
var freePort = func() (int, error) {
	for range 100 {
		port := lowPorts[0] + rand.IntN(lowPorts[1]-lowPorts[0])
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lowPorts are where freePort looks first: registered ports below every
// common ephemeral range.
var lowPorts = [2]int{20000, 32768}

// servingArgs are the flags of kube-controller-manager and kube-scheduler,
// on a port of their own, and the health URL there. They serve /healthz on
// loopback only, and it is the only way to know they have started their
// controllers. The admin kubeconfig doubles as their delegated authn/authz
// config. Given a certificate, they skip generating RSA keys for one.
func (e *Envtest) servingArgs() ([]string, string, error) {
	kc := e.adminKubeconfig()
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	return []string{
		"--kubeconfig=" + kc,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + e.pki.servingCert,
		"--tls-private-key-file=" + e.pki.servingKey,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--kube-api-qps=" + controllerQPS,
		"--kube-api-burst=" + controllerBurst,
	}, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), nil
}

// startControllers starts the named components (kube-controller-manager,
// the garbage collector, kube-scheduler, kwok) as children of rlab and
// returns the health URLs of those that serve one.
func (e *Envtest) startControllers(names ...string) ([]healthURL, error) {
	kc := e.adminKubeconfig()
	var health []healthURL
	for _, name := range names {
		var args []string
		switch name {
		case GarbageCollector:
			h, err := e.startGC(context.Background(), false)
			if err != nil {
				return health, err
			}
			health = append(health, h)
			continue
		case "kube-controller-manager", "kube-scheduler":
			a, h, err := e.servingArgs()
			if err != nil {
				return health, err
			}
			args = a
			health = append(health, healthURL{name, h})
			if name == "kube-controller-manager" {
				args = append(args,
					"--controllers="+Controllers,
					"--use-service-account-credentials=false",
					// Twice the default workers: thousands of Pods at once.
					"--concurrent-deployment-syncs=10",
					"--concurrent-replicaset-syncs=10",
				)
			}
		case "kwok":
			cfg := filepath.Join(e.opts.RunDir, "kwok.yaml")
			if err := os.WriteFile(cfg, []byte(kwokConfig()), 0o600); err != nil {
				return health, fmt.Errorf("kwok config: %w", err)
			}
			args = []string{"--kubeconfig=" + kc, "--config=" + cfg}
		default:
			return health, fmt.Errorf("unknown component %q", name)
		}
		if err := e.start(name, args, false); err != nil {
			return health, err
		}
	}
	return health, nil
}

// Exited names the first component that has exited, with where its log
// is; nil while every one runs. A garbage collector rlab restarts on
// purpose does not count.
func (e *Envtest) Exited() error { return e.exited() }

// exited returns an error naming the first child that has exited, with where
// to find its log: a component that dies at start-up must not look like a hang.
func (e *Envtest) exited() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range append(e.core[:len(e.core):len(e.core)], e.children...) {
		select {
		case <-c.Done():
			return fmt.Errorf("%s exited (%v); see %s", c.Name, c.Err(), filepath.Join(e.opts.LogDir, c.Name+".log"))
		default:
		}
	}
	return nil
}

// poll calls cond until it is true, ctx ends, a child dies or timeout passes.
func (e *Envtest) poll(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	return pollEvery(ctx, startPoll, timeout, what, e.exited, cond)
}

// createNodes registers the fake Nodes, all at once, after the namespace
// of their Leases: kwok takes a Node's Lease before it marks the Node Ready
// (the heartbeat-with-lease stage), and when kube-node-lease is not there
// yet it tries again a second later. The apiserver's system namespaces
// controller makes it too, a moment after serving; whichever comes second
// finds it there.
func (e *Envtest) createNodes(ctx context.Context, cs kubernetes.Interface) error {
	lease := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, lease, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", corev1.NamespaceNodeLease, err)
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1000"),
		corev1.ResourceMemory: resource.MustParse("4Ti"),
		corev1.ResourcePods:   *resource.NewQuantity(PodsPerNode, resource.DecimalSI),
	}
	var wg sync.WaitGroup
	errs := make([]error, NodeCount)
	for i, name := range NodeNames() {
		wg.Go(func() {
			node := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{
					Name:        name,
					Annotations: map[string]string{FakeNodeAnnotation: "fake"},
					Labels:      map[string]string{"kubernetes.io/hostname": name, "type": "kwok"},
				},
				Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
			}
			if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				errs[i] = fmt.Errorf("create node %s: %w", name, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	e.mark("rlab", fmt.Sprintf("%d Nodes created", NodeCount))
	return nil
}

// readyNodes waits until kwok has marked every fake Node Ready and, if
// untainted, node lifecycle has lifted the not-ready taint the apiserver's
// TaintNodesByCondition admission put on it. It watches the Nodes: the
// event that makes the last one ready ends the wait.
func (e *Envtest) readyNodes(ctx context.Context, cs kubernetes.Interface, untainted bool) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	want := NodeNames()
	var (
		condition = map[string]bool{} // kwok says Ready
		ready     = map[string]bool{} // and no not-ready taint: NodeReady
		last      string              // what is missing, for the error
	)
	count := func(m map[string]bool) int {
		n := 0
		for _, name := range want {
			if m[name] {
				n++
			}
		}
		return n
	}
	see := func(n *corev1.Node) bool {
		c := condition[n.Name]
		condition[n.Name] = nodeCondition(n)
		ready[n.Name] = NodeReady(n)
		if !untainted && !c && condition[n.Name] && count(condition) == len(want) {
			e.mark("kwok", fmt.Sprintf("all %d Nodes Ready", len(want)))
		}
		last = fmt.Sprintf("%d of %d Nodes Ready, %d of them untainted", count(condition), len(want), count(ready))
		if !untainted {
			return count(condition) == len(want)
		}
		return count(ready) == len(want)
	}
	done := func() {
		if untainted {
			e.mark("kube-controller-manager", fmt.Sprintf("all %d Nodes untainted (node lifecycle)", len(want)))
		}
	}
	alive := time.NewTicker(100 * time.Millisecond) // a dead kwok must not look like a hang
	defer alive.Stop()
	for {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list Nodes: %w", err)
		}
		for i := range list.Items {
			if see(&list.Items[i]) {
				done()
				return nil
			}
		}
		w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			return fmt.Errorf("watch Nodes: %w", err)
		}
	events:
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					break events // the watch ended: list again
				}
				if n, isNode := ev.Object.(*corev1.Node); isNode && see(n) {
					w.Stop()
					done()
					return nil
				}
			case <-alive.C:
				if err := e.exited(); err != nil {
					w.Stop()
					return err
				}
			case <-ctx.Done():
				w.Stop()
				return fmt.Errorf("waiting for %d Nodes Ready and untainted: %s: %w", len(want), last, ctx.Err())
			}
		}
		w.Stop()
	}
}

// nodeCondition tells whether n's Ready condition is True (kwok's part of
// NodeReady).
func nodeCondition(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// apiserverHealthy waits until the apiserver's /healthz answers ok: its
// post-start hooks are done, the RBAC bootstrap among them, whose first try
// comes a fixed second after the apiserver serves (wait.Poll in
// pkg/registry/rbac/rest/storage_rbac.go). kube-controller-manager starts
// after it: it looks at /healthz itself, once a second (WaitForAPIServer
// in k8s.io/controller-manager), and would otherwise lose up to a second
// between the hooks ending and its next look.
func (e *Envtest) apiserverHealthy(ctx context.Context, cs kubernetes.Interface) error {
	// Verbose, to mark when each post-start hook is done: the timeline
	// then shows which of them /healthz waited for.
	done := map[string]bool{}
	err := e.poll(ctx, 60*time.Second, "kube-apiserver /healthz", func(ctx context.Context) (bool, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/healthz").Param("verbose", "1").DoRaw(ctx)
		for _, line := range strings.Split(string(body), "\n") {
			hook, ok := strings.CutPrefix(line, "[+]poststarthook/")
			if hook, _, _ = strings.Cut(hook, " "); ok && !done[hook] {
				done[hook] = true
				e.mark("kube-apiserver", "hook "+hook+" done")
			}
		}
		return err == nil, err
	})
	if err == nil {
		e.mark("kube-apiserver", "healthy (/healthz: post-start hooks done)")
	}
	return err
}

// waitHealthy waits for the apiserver's readiness (its post-start hooks: RBAC
// roles, the default namespace) and for the controllers' health endpoints.
func (e *Envtest) waitHealthy(ctx context.Context, cs kubernetes.Interface) error {
	err := e.poll(ctx, 60*time.Second, "kube-apiserver /readyz", func(ctx context.Context) (bool, error) {
		if err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
			return false, err
		}
		_, err := cs.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		return err == nil, err
	})
	if err != nil {
		return err
	}
	e.mark("kube-apiserver", "ready (/readyz, default namespace)")
	e.mu.Lock()
	names := make([]string, len(e.health))
	for i, h := range e.health {
		names[i] = h.name
	}
	e.mu.Unlock()
	for _, n := range names {
		if err := e.componentHealthy(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// componentHealthy waits for component name's /healthz, at the URL it has
// at each try: a restarted garbage collector serves on a new port.
func (e *Envtest) componentHealthy(ctx context.Context, name string) error {
	client := &http.Client{
		Timeout: 2 * time.Second,
		// Our own serving cert on loopback; only the answer matters.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec
	}
	defer client.CloseIdleConnections()
	err := e.poll(ctx, 60*time.Second, name+" /healthz", func(ctx context.Context) (bool, error) {
		e.mu.Lock()
		i := slices.IndexFunc(e.health, func(h healthURL) bool { return h.name == name })
		var u string
		if i >= 0 {
			u = e.health[i].url
		}
		e.mu.Unlock()
		if u == "" {
			return false, fmt.Errorf("%s serves no /healthz", name)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return false, err
		}
		res, err := client.Do(req)
		if err != nil {
			return false, err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return false, fmt.Errorf("%s: %s", u, res.Status)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	e.mark(name, "healthy (/healthz)")
	return nil
}

// Stop implements Cluster: controllers first (so they do not log errors
// against a vanishing apiserver), then apiserver and etcd, killed outright
// (see stopCore), then the files.
func (e *Envtest) Stop() error {
	e.stopWatchingCRDs()
	e.mu.Lock()
	if e.stopSeeding != nil {
		e.stopSeeding()
	}
	children := e.children
	e.children = nil
	logs := e.logs
	e.logs, e.logOf = nil, nil
	e.mu.Unlock()

	var errs []error
	var emu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range children {
		wg.Go(func() {
			if err := c.Stop(5 * time.Second); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		})
	}
	wg.Wait()
	errs = append(errs, e.stopCore()...)
	for _, f := range logs {
		_ = f.Close()
	}
	if e.opts.RunDir != "" {
		if err := os.RemoveAll(e.opts.RunDir); err != nil {
			errs = append(errs, fmt.Errorf("remove run dir: %w", err))
		}
	}
	return errors.Join(errs...)
}
