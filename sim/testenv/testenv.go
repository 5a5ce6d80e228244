// Package testenv is a test environment for other projects' Go tests, shaped
// like controller-runtime's envtest.Environment, that runs rlab's control
// plane instead of envtest's: besides etcd and kube-apiserver, two
// kube-controller-managers (one with the namespace, Deployment, ReplicaSet
// and node lifecycle controllers, one with the garbage collector alone),
// kube-scheduler, and kwok's four Nodes, on which Pods are scheduled and
// become Ready. A test that deletes an owner sees its dependents collected;
// one that deletes a namespace sees it go; a CRD a test applies gets
// garbage collection too (rlab restarts the garbage collector for it). A
// kubebuilder project's controller suite (suite_test.go) switches by
// changing one import:
//
//	import envtest "github.com/kkloud/rlab/sim/testenv"
//	// instead of "sigs.k8s.io/controller-runtime/pkg/envtest"
//
// A webhook suite does not: there is no WebhookInstallOptions. The binaries
// are rlab's (`rlab assets get`), found as Environment.BinaryAssetsDirectory
// says.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/cluster"
)

// NoGarbageCollectorEnv, set to anything, starts no garbage collector, as
// envtest: rlab's lesson 22 runs a student's tests so to see that one of
// them needs it.
const NoGarbageCollectorEnv = "RLAB_TESTENV_NO_GC"

// needed are the binaries a test environment runs (kubectl is not).
var needed = []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok"}

// Environment is a control plane for one test binary. Its fields are
// envtest.Environment's (controller-runtime v0.25.2) where they share a
// name, with the differences each says; envtest's ControlPlane,
// CRDInstallOptions, WebhookInstallOptions, UseExistingCluster, the download
// settings, ControlPlaneStopTimeout and AttachControlPlaneOutput have no
// counterpart.
type Environment struct {
	// CRDDirectoryPaths are directories (or files) of CRDs to install,
	// read as envtest reads them (.json, .yaml, .yml; several documents a
	// file).
	CRDDirectoryPaths []string
	// ErrorIfCRDPathMissing makes a path that does not exist an error.
	ErrorIfCRDPathMissing bool
	// CRDs are installed beside those read from CRDDirectoryPaths; Start
	// sets it to all it installed.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Scheme, if nil, is set to client-go's scheme.Scheme, as envtest
	// does; nothing here uses it.
	Scheme *runtime.Scheme
	// Config is set by Start: the cluster's admin (system:masters), 1,000
	// requests a second (burst 2,000), as envtest's.
	Config *rest.Config
	// KubeConfig, if empty, is set by Start: a kubeconfig for Config.
	KubeConfig []byte
	// BinaryAssetsDirectory is where the binaries are, used only if it
	// holds every one this package runs. As with envtest,
	// $KUBEBUILDER_ASSETS comes first; then this, $RLAB_ASSETS and rlab's
	// cache. setup-envtest's directory (a kubebuilder Makefile sets
	// KUBEBUILDER_ASSETS to it) has no kube-controller-manager: it is
	// passed over.
	BinaryAssetsDirectory string
	// ControlPlaneStartTimeout bounds the whole Start (default 60 s);
	// envtest's bounds each process (default 20 s).
	ControlPlaneStartTimeout time.Duration
	// EchoCRD also installs rlab's Echo CRD (echoes.kkloud.io).
	EchoCRD bool
	// Log receives the control plane's start-up steps; none if nil.
	Log *slog.Logger

	mu      sync.Mutex
	backend *cluster.Envtest
	root    string
	settled chan error // Settle's failure, nil if none, once it is over
	cancel  context.CancelFunc
}

// Start starts the control plane, installs the CRDs before the
// controllers, and returns once the apiserver is healthy, every component
// runs and the default namespace exists, as envtest waits for it. The
// Nodes' not-ready taints are lifted a moment later (a Pod created at once
// is scheduled then). If Start fails, the components' logs stay in the
// directory its error names; nothing else does.
func (te *Environment) Start() (*rest.Config, error) {
	crds, err := te.readCRDs()
	if err != nil {
		return nil, err
	}
	dir, err := te.assetsDir()
	if err != nil {
		return nil, err
	}
	// Short paths: unix socket names in the run dir must fit 108 bytes.
	root, err := os.MkdirTemp("", "rlab-testenv-")
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	logs, tmp := filepath.Join(root, "logs"), filepath.Join(root, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	b := cluster.NewEnvtest(cluster.EnvtestOptions{
		Assets:    dir,
		RunDir:    filepath.Join(root, "run"),
		LogDir:    logs,
		PIDDir:    filepath.Join(root, "pids"),
		TempDir:   tmp,
		Log:       te.Log,
		CRDs:      crds,
		NoEchoCRD: !te.EchoCRD,
		// Settle runs behind the tests (Start).
		SettleStopsNothing: true,
		NoGarbageCollector: os.Getenv(NoGarbageCollectorEnv) != "",
	})
	timeout := te.ControlPlaneStartTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := te.start(ctx, b); err != nil {
		_ = b.Stop()
		// The logs say why; nothing else is kept.
		for _, d := range []string{"run", "pids", "tmp"} {
			_ = os.RemoveAll(filepath.Join(root, d))
		}
		return nil, fmt.Errorf("testenv: start: %w (the components' logs are kept in %s)", err, logs)
	}
	// Behind the tests: the Nodes untainted (a Pod created before is
	// scheduled then) and every component's /healthz. A failure is said at
	// once and again by Stop; it stops nothing.
	sctx, scancel := context.WithCancel(context.Background())
	settled := make(chan error, 1)
	go func() {
		err := b.Settle(sctx)
		if err != nil && sctx.Err() == nil {
			err = fmt.Errorf("the control plane did not settle: %w", err)
			te.warn(err, logs)
		} else {
			err = nil
		}
		settled <- err
	}()
	te.mu.Lock()
	te.backend, te.root, te.settled, te.cancel = b, root, settled, scancel
	te.mu.Unlock()
	cfg := b.Config()
	cfg.QPS, cfg.Burst = 1000, 2000
	te.Config = cfg
	if len(te.KubeConfig) == 0 {
		te.KubeConfig = b.Kubeconfig()
	}
	if te.Scheme == nil {
		te.Scheme = scheme.Scheme
	}
	te.CRDs = crds
	return te.Config, nil
}

// Stop stops every process Start started and removes its files. A
// component that exited during the tests is an error naming it; then, or
// if a component would not stop, the logs are kept where the error says.
func (te *Environment) Stop() error {
	te.mu.Lock()
	b, root, settled, cancel := te.backend, te.root, te.settled, te.cancel
	te.backend = nil
	te.mu.Unlock()
	if b == nil {
		return nil
	}
	died := b.Exited()
	cancel()
	if err := errors.Join(died, <-settled, b.Stop()); err != nil {
		if died != nil {
			err = fmt.Errorf("during the tests: %w", err)
		}
		return fmt.Errorf("testenv: stop: %w (the components' logs are kept in %s)", err, filepath.Join(root, "logs"))
	}
	if err := os.RemoveAll(root); err != nil {
		return fmt.Errorf("testenv: stop: %w", err)
	}
	return nil
}

// start runs the backend's first two phases and waits for the default
// namespace.
func (te *Environment) start(ctx context.Context, b *cluster.Envtest) error {
	if err := b.Serve(ctx); err != nil {
		return err
	}
	if err := b.Ready(ctx); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(b.Config())
	if err != nil {
		return err
	}
	return cluster.Poll(ctx, 30*time.Second, "the default namespace", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		return err == nil, err
	})
}

// warn says err where the tests' output shows it: te.Log, else stderr.
func (te *Environment) warn(err error, logs string) {
	if te.Log != nil {
		te.Log.Error("testenv", "err", err, "logs", logs)
		return
	}
	fmt.Fprintf(os.Stderr, "testenv: %v (the components' logs: %s)\n", err, logs)
}

// readCRDs reads CRDDirectoryPaths as envtest does and adds CRDs.
func (te *Environment) readCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	o := envtest.CRDInstallOptions{
		Paths:              te.CRDDirectoryPaths,
		CRDs:               te.CRDs,
		ErrorIfPathMissing: te.ErrorIfCRDPathMissing,
	}
	if err := envtest.ReadCRDFiles(&o); err != nil {
		return nil, fmt.Errorf("testenv: read CRDs: %w", err)
	}
	return o.CRDs, nil
}

// assetsDir is the first of $KUBEBUILDER_ASSETS, BinaryAssetsDirectory,
// $RLAB_ASSETS and rlab's cache that holds every binary needed. A
// kubebuilder Makefile points KUBEBUILDER_ASSETS at setup-envtest's
// directory, which has no kube-controller-manager: it is passed over.
func (te *Environment) assetsDir() (string, error) {
	cache, _ := assets.Dir(func(k string) string {
		if k == "HOME" || k == "XDG_CACHE_HOME" {
			return os.Getenv(k)
		}
		return ""
	})
	places := []struct{ what, dir string }{
		{"$KUBEBUILDER_ASSETS", os.Getenv("KUBEBUILDER_ASSETS")},
		{"BinaryAssetsDirectory", te.BinaryAssetsDirectory},
		{"$RLAB_ASSETS", os.Getenv("RLAB_ASSETS")},
		{"rlab's cache", cache},
	}
	var tried []string
	for _, p := range places {
		if p.dir == "" {
			continue
		}
		dir, err := assets.FindOnly(func(k string) string {
			if k == "RLAB_ASSETS" {
				return p.dir
			}
			return ""
		}, needed...)
		if err == nil {
			return dir, nil
		}
		var missing *assets.MissingError
		if !errors.As(err, &missing) {
			return "", fmt.Errorf("testenv: %w", err)
		}
		tried = append(tried, fmt.Sprintf("%s %s lacks %s", p.what, p.dir, strings.Join(missing.Missing, ", ")))
	}
	return "", fmt.Errorf("testenv: rlab's control plane %s is not installed: %s; get it with `rlab assets get`",
		assets.KubeVersion, strings.Join(tried, "; "))
}
