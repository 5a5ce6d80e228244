// Package testenv is a test environment for other projects' Go tests, shaped
// like controller-runtime's envtest.Environment, that runs rlab's control
// plane instead of envtest's: besides etcd and kube-apiserver, a
// kube-controller-manager with the garbage collector, the namespace,
// Deployment and ReplicaSet controllers, kube-scheduler, and kwok's four
// Nodes, on which Pods are scheduled and become Ready. A test that deletes an
// owner sees its dependents collected; one that deletes a namespace sees it
// go. A kubebuilder project's suite_test.go switches by changing the import:
//
//	import envtest "github.com/kkloud/rlab/sim/testenv"
//	// instead of "sigs.k8s.io/controller-runtime/pkg/envtest"
//
// The binaries are rlab's (`rlab assets get`), found as Start says.
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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/cluster"
)

// needed are the binaries a test environment runs (kubectl is not).
var needed = []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok"}

// Environment is a control plane for one test binary. The fields that
// share a name with envtest.Environment's mean the same; those of envtest's
// that are missing here (ControlPlane, CRDInstallOptions,
// WebhookInstallOptions, UseExistingCluster, the download settings) have
// no counterpart.
type Environment struct {
	// CRDDirectoryPaths are directories (or files) of CRDs to install,
	// read as envtest reads them (.json, .yaml, .yml; several documents a
	// file).
	CRDDirectoryPaths []string
	// ErrorIfCRDPathMissing makes a path that does not exist an error.
	ErrorIfCRDPathMissing bool
	// CRDs are installed beside those read from CRDDirectoryPaths.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Scheme is accepted for envtest's sake and not used: CRDs are read
	// with their own.
	Scheme *runtime.Scheme
	// Config is set by Start: the cluster's admin (system:masters).
	Config *rest.Config
	// KubeConfig is set by Start: a kubeconfig for the same user.
	KubeConfig []byte
	// BinaryAssetsDirectory is looked in first for the binaries; it is used
	// only if it holds all of them (an envtest assets directory holds no
	// kube-controller-manager), and then $KUBEBUILDER_ASSETS, $RLAB_ASSETS
	// and rlab's cache are, in that order.
	BinaryAssetsDirectory string
	// ControlPlaneStartTimeout bounds Start (default 60 s).
	ControlPlaneStartTimeout time.Duration
	// EchoCRD also installs rlab's Echo CRD (echoes.kkloud.io).
	EchoCRD bool
	// Log receives the control plane's start-up steps; none if nil.
	Log *slog.Logger

	mu      sync.Mutex
	backend *cluster.Envtest
	root    string
	settled chan error // Settle's outcome, after Start returned
	cancel  context.CancelFunc
}

// Start starts the control plane, installs the CRDs, and returns once the
// apiserver is healthy and kube-controller-manager runs: the garbage
// collector discovered every CRD installed. The Nodes' not-ready taints are
// lifted a moment later (a Pod created at once is scheduled then).
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
	b := cluster.NewEnvtest(cluster.EnvtestOptions{
		Assets:    dir,
		RunDir:    filepath.Join(root, "run"),
		LogDir:    filepath.Join(root, "logs"),
		PIDDir:    filepath.Join(root, "pids"),
		TempDir:   root,
		Log:       te.Log,
		CRDs:      crds,
		NoEchoCRD: !te.EchoCRD,
	})
	timeout := te.ControlPlaneStartTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	logs := filepath.Join(root, "logs")
	if err := b.Serve(ctx); err != nil {
		return nil, fmt.Errorf("testenv: start: %w (component logs in %s)", err, logs)
	}
	if err := b.Ready(ctx); err != nil {
		_ = b.Stop()
		return nil, fmt.Errorf("testenv: start: %w (component logs in %s)", err, logs)
	}
	sctx, scancel := context.WithCancel(context.Background())
	settled := make(chan error, 1)
	go func() { settled <- b.Settle(sctx) }()
	te.mu.Lock()
	te.backend, te.root, te.settled, te.cancel = b, root, settled, scancel
	te.mu.Unlock()
	te.Config = b.Config()
	te.KubeConfig = b.Kubeconfig()
	return te.Config, nil
}

// Stop stops every process Start started and removes its files. After a
// failed settle (a Node never untainted) the logs are kept and the error
// says where.
func (te *Environment) Stop() error {
	te.mu.Lock()
	b, root, settled, cancel := te.backend, te.root, te.settled, te.cancel
	te.backend = nil
	te.mu.Unlock()
	if b == nil {
		return nil
	}
	cancel()
	settleErr := <-settled
	if errors.Is(settleErr, context.Canceled) {
		settleErr = nil
	}
	if err := errors.Join(settleErr, b.Stop()); err != nil {
		return fmt.Errorf("testenv: stop: %w (component logs in %s)", err, filepath.Join(root, "logs"))
	}
	if err := os.RemoveAll(root); err != nil {
		return fmt.Errorf("testenv: stop: %w", err)
	}
	return nil
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

// assetsDir is the first of BinaryAssetsDirectory, $KUBEBUILDER_ASSETS,
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
		{"BinaryAssetsDirectory", te.BinaryAssetsDirectory},
		{"$KUBEBUILDER_ASSETS", os.Getenv("KUBEBUILDER_ASSETS")},
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
