package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kkloud/rlab/sim/proc"
)

// NodeName is the fake Node kwok plays the kubelet for.
const NodeName = "rlab-node-1"

// Controllers kube-controller-manager runs: the three envtest lacks (garbage
// collection, Deployments→ReplicaSets→Pods, namespace deletion) and node
// lifecycle, which lifts the not-ready taint once kwok reports the Node Ready.
const Controllers = "garbagecollector,deployment,replicaset,nodelifecycle,namespace"

// EnvtestOptions configures the envtest backend.
type EnvtestOptions struct {
	Assets string // directory with the control-plane binaries
	Self   string // a binary that runs proc.MaybeRunWrapper (rlab, or a test binary)
	RunDir string // scratch: certs, etcd data, wrappers; removed by Stop
	LogDir string // one log file per component
	PIDDir string // live child pids, reaped by the next run after a crash
	Log    *slog.Logger
	// Progress, if set, is called as each start-up phase ends.
	Progress func(Phase)
}

// Envtest is the default backend: a real control plane from local binaries.
type Envtest struct {
	opts EnvtestOptions
	env  *envtest.Environment

	phases
	mu       sync.Mutex
	children []*proc.Child
	logs     []*os.File
	cfg      *rest.Config
	kubecfg  []byte
	version  string
}

// NewEnvtest returns an unstarted envtest backend.
func NewEnvtest(opts EnvtestOptions) *Envtest {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Envtest{opts: opts, phases: phases{log: opts.Log, progress: opts.Progress}}
}

// Name implements Backend.
func (e *Envtest) Name() string { return "envtest" }

// Detail implements Backend: envtest is the pinned control plane itself.
func (e *Envtest) Detail() string { return "" }

// Config implements Backend.
func (e *Envtest) Config() *rest.Config { return rest.CopyConfig(e.cfg) }

// Kubeconfig implements Backend.
func (e *Envtest) Kubeconfig() []byte { return e.kubecfg }

// Version implements Backend.
func (e *Envtest) Version() string { return e.version }

// Start implements Backend. On error everything started so far is stopped.
func (e *Envtest) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()
	for _, d := range []string{e.opts.RunDir, e.opts.LogDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("envtest dirs: %w", err)
		}
	}
	if err := e.step("apiserver+etcd", e.startAPIServer); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(e.cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if err := e.step("echo crd", func() error { return e.installCRD(ctx) }); err != nil {
		return err
	}
	var health []string
	if err := e.step("controllers", func() (err error) {
		health, err = e.startControllers()
		return err
	}); err != nil {
		return err
	}
	if err := e.step("node ready", func() error { return e.readyNode(ctx, cs) }); err != nil {
		return err
	}
	return e.step("controllers healthy", func() error { return e.waitHealthy(ctx, health) })
}

func (e *Envtest) logFile(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(e.opts.LogDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	e.mu.Lock()
	e.logs = append(e.logs, f)
	e.mu.Unlock()
	return f, nil
}

// startAPIServer starts etcd and kube-apiserver through envtest. envtest starts
// them in their own process group with no parent-death signal, so it is given
// wrapper scripts that add one (see proc.WriteWrapper).
func (e *Envtest) startAPIServer() error {
	wrapDir := filepath.Join(e.opts.RunDir, "bin")
	paths := map[string]string{}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		p, err := proc.WriteWrapper(wrapDir, name, e.opts.Self, filepath.Join(e.opts.Assets, name), e.opts.PIDDir)
		if err != nil {
			return err
		}
		paths[name] = p
	}
	apiLog, err := e.logFile("kube-apiserver")
	if err != nil {
		return err
	}
	etcdLog, err := e.logFile("etcd")
	if err != nil {
		return err
	}
	certDir := filepath.Join(e.opts.RunDir, "apiserver")
	dataDir := filepath.Join(e.opts.RunDir, "etcd")
	for _, d := range []string{certDir, dataDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("envtest dirs: %w", err)
		}
	}
	e.env = &envtest.Environment{
		ControlPlane: envtest.ControlPlane{
			APIServer: &envtest.APIServer{Path: paths["kube-apiserver"], CertDir: certDir, Out: apiLog, Err: apiLog},
			Etcd:      &envtest.Etcd{Path: paths["etcd"], DataDir: dataDir, Out: etcdLog, Err: etcdLog},
		},
		BinaryAssetsDirectory:    e.opts.Assets,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  10 * time.Second,
	}
	e.env.ControlPlane.KubectlPath = filepath.Join(e.opts.Assets, "kubectl")
	cfg, err := e.env.Start()
	if err != nil {
		return fmt.Errorf("envtest: %w", err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	e.cfg = cfg
	e.kubecfg = e.env.KubeConfig
	dc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	v, err := dc.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("server version: %w", err)
	}
	e.version = v.GitVersion
	return os.WriteFile(e.adminKubeconfig(), e.kubecfg, 0o600)
}

func (e *Envtest) adminKubeconfig() string { return filepath.Join(e.opts.RunDir, "admin.kubeconfig") }

// installCRD creates the Echo CRD and waits until it is Established, before
// kube-controller-manager starts: the garbage collector discovers resource
// types at start and only re-syncs every 30 s.
func (e *Envtest) installCRD(ctx context.Context) error {
	return installEchoCRD(ctx, e.cfg, e.poll)
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startControllers starts kube-controller-manager, kube-scheduler and kwok as
// children of rlab and returns the health URLs of the first two.
func (e *Envtest) startControllers() ([]string, error) {
	kc := e.adminKubeconfig()
	kwokCfg := filepath.Join(e.opts.RunDir, "kwok.yaml")
	if err := os.WriteFile(kwokCfg, []byte(kwokConfig()), 0o600); err != nil {
		return nil, fmt.Errorf("kwok config: %w", err)
	}
	// Both serve /healthz on loopback only, and it is the only way to know
	// they have started their controllers. The admin kubeconfig doubles as
	// their delegated authn/authz config.
	serving := func(name string) ([]string, string, error) {
		port, err := freePort()
		if err != nil {
			return nil, "", err
		}
		return []string{
			"--kubeconfig=" + kc,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--cert-dir=" + filepath.Join(e.opts.RunDir, name),
			"--authentication-kubeconfig=" + kc,
			"--authorization-kubeconfig=" + kc,
		}, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), nil
	}
	kcmArgs, kcmHealth, err := serving("kube-controller-manager")
	if err != nil {
		return nil, err
	}
	kcmArgs = append(kcmArgs,
		"--controllers="+Controllers,
		"--use-service-account-credentials=false",
	)
	schedArgs, schedHealth, err := serving("kube-scheduler")
	if err != nil {
		return nil, err
	}
	procs := []struct {
		name string
		args []string
	}{
		{"kube-controller-manager", kcmArgs},
		{"kube-scheduler", schedArgs},
		{"kwok", []string{"--kubeconfig=" + kc, "--config=" + kwokCfg}},
	}
	for _, p := range procs {
		lf, err := e.logFile(p.name)
		if err != nil {
			return nil, err
		}
		c, err := proc.Start(e.opts.PIDDir, p.name, filepath.Join(e.opts.Assets, p.name), p.args, lf)
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		e.children = append(e.children, c)
		e.mu.Unlock()
	}
	return []string{kcmHealth, schedHealth}, nil
}

// exited returns an error naming the first child that has exited, with where
// to find its log: a component that dies at start-up must not look like a hang.
func (e *Envtest) exited() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.children {
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
	return poll(ctx, timeout, what, e.exited, cond)
}

// readyNode registers the fake Node and waits until kwok has marked it Ready
// and node lifecycle has lifted the not-ready taint the apiserver put on it.
func (e *Envtest) readyNode(ctx context.Context, cs kubernetes.Interface) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{FakeNodeAnnotation: "fake"},
			Labels:      map[string]string{"kubernetes.io/hostname": NodeName, "type": "kwok"},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node: %w", err)
	}
	return e.poll(ctx, 60*time.Second, "node "+NodeName+" Ready and untainted", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return NodeReady(n), nil
	})
}

func (e *Envtest) waitHealthy(ctx context.Context, urls []string) error {
	client := &http.Client{
		Timeout: 2 * time.Second,
		// Self-signed serving certs on loopback; only the answer matters.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec
	}
	for _, u := range urls {
		err := e.poll(ctx, 60*time.Second, u, func(ctx context.Context) (bool, error) {
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
	}
	return nil
}

// Stop implements Backend: controllers first (so they do not log errors
// against a vanishing apiserver), then apiserver and etcd, then the files.
func (e *Envtest) Stop() error {
	e.mu.Lock()
	children := e.children
	e.children = nil
	logs := e.logs
	e.logs = nil
	e.mu.Unlock()

	var errs []error
	var wg sync.WaitGroup
	var emu sync.Mutex
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
	if e.env != nil {
		if err := e.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("envtest stop: %w", err))
		}
		e.env = nil
	}
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
