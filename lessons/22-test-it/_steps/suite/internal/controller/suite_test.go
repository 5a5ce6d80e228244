package controller

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kkloudv1 "example.com/echo/api/v1"
	"github.com/kkloud/rlab/sim/testenv"
)

// k8sClient talks to the tests' control plane: TestMain makes it.
var k8sClient client.Client

// TestMain runs once for the package: it starts a control plane, installs
// the project's CRDs, runs the tests, and stops the control plane.
func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if err := kkloudv1.AddToScheme(scheme.Scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env := &testenv.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	if k8sClient, err = client.New(cfg, client.Options{Scheme: scheme.Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
