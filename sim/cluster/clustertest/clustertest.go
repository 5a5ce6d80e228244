// Package clustertest starts a real envtest backend for the tests of other
// packages, the same way everywhere.
package clustertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/sim/simtest"

	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/cluster"
)

// Env is a started backend and the temporary directory holding its state.
type Env struct {
	*cluster.Envtest
	Root   string // run dir, logs, pids
	Assets string // the control-plane binaries
}

// Start finds the control plane (an error names the command that builds it:
// tests fail rather than skip) and starts a backend under a new temp dir
// named after prefix.
func Start(ctx context.Context, prefix string) (*Env, error) {
	dir, err := assets.Find(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("these tests need the control plane: %w", err)
	}
	// Short paths: unix socket names in the run dir must fit 108 bytes.
	root, err := os.MkdirTemp("", "rlab-"+prefix+"-")
	if err != nil {
		return nil, err
	}
	b := cluster.NewEnvtest(cluster.EnvtestOptions{
		Assets: dir,
		RunDir: filepath.Join(root, "run"),
		LogDir: filepath.Join(root, "logs"),
		PIDDir: filepath.Join(root, "pids"),
	})
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		return nil, fmt.Errorf("start envtest backend: %w (logs in %s)", err, filepath.Join(root, "logs"))
	}
	return &Env{Envtest: b, Root: root, Assets: dir}, nil
}

// Stop stops the backend and removes its directory; after an unclean stop
// the logs stay for a look.
func (e *Env) Stop() error {
	if err := e.Envtest.Stop(); err != nil {
		return fmt.Errorf("stop envtest backend: %w (logs in %s)", err, filepath.Join(e.Root, "logs"))
	}
	return os.RemoveAll(e.Root)
}

// Main is the body of TestMain for a package whose tests share one backend:
//
//	func TestMain(m *testing.M) { os.Exit(clustertest.Main(m, "world-test", setup)) }
//
// It starts the backend, gives it to use, runs the tests and stops the
// backend. Without the control plane the tests fail: they are the proof that
// the sandbox works, never skipped. In the fast tier (go test -short) no
// backend starts and use is not called: each test that needs it says so
// (simtest.NeedsControlPlane).
func Main(m *testing.M, prefix string, use func(*Env)) int {
	if code, fast := simtest.FastMain(m); fast {
		return code
	}
	env, err := Start(context.Background(), prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	use(env)
	return m.Run()
}

// Namespace creates a namespace "<prefix>-<random>" for one test and
// deletes it when the test ends.
func Namespace(t testing.TB, cs kubernetes.Interface, prefix string) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// StatusSticks writes status.observedGeneration of a new Echo in a fresh
// namespace through the status subresource and reads it back, until it
// stays: an Echo CRD older than this rlab's prunes it.
func StatusSticks(t *testing.T, cs kubernetes.Interface, dyn dynamic.Interface) {
	t.Helper()
	ns := Namespace(t, cs, "crdstatus")
	echoes := dyn.Resource(echov1.Resource).Namespace(ns)
	u, err := echov1.NewEcho(ns, "hello", "hi", 1).ToUnstructured()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := echoes.Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The apiserver may take a moment to serve the updated schema.
	simtest.Eventually(t, 10*time.Second, "status.observedGeneration kept", func(ctx context.Context) (bool, error) {
		e, err := echoes.Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if err := unstructured.SetNestedField(e.Object, e.GetGeneration(), "status", "observedGeneration"); err != nil {
			return false, err
		}
		if _, err := echoes.UpdateStatus(ctx, e, metav1.UpdateOptions{}); err != nil {
			return false, err
		}
		e, err = echoes.Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		g, found, err := unstructured.NestedInt64(e.Object, "status", "observedGeneration")
		return found && g == e.GetGeneration(), err
	})
}
