package controller

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kkloudv1 "example.com/echo/api/v1"
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
	// TODO(lesson 22, step 1): start a testenv.Environment (import
	// "github.com/kkloud/rlab/sim/testenv") whose CRDDirectoryPaths holds
	// filepath.Join("..", "..", "config", "crd", "bases"), with
	// ErrorIfCRDPathMissing; make k8sClient with client.New from the
	// *rest.Config its Start returns (client.Options{Scheme:
	// scheme.Scheme}); and defer its Stop.
	return m.Run()
}
