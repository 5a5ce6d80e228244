package testenv

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kkloud/rlab/sim/simtest"
)

// BenchmarkStartVersusEnvtest starts this package's Environment and
// controller-runtime's envtest.Environment in turn, each with the same CRD
// directory and the same kube-apiserver and etcd, and reports the median
// time of each Start and their ratio:
//
//	go test -run '^$' -bench StartVersusEnvtest -benchtime 8x ./sim/testenv/
//
// envtest's Start returns once the apiserver serves, the default namespace
// exists and the CRDs are installed; this one once every component is
// healthy and the Nodes take Pods, so it has more to wait for.
func BenchmarkStartVersusEnvtest(b *testing.B) {
	simtest.NeedsControlPlane(b)
	crds := []string{filepath.Join("testdata", "crd")}
	probe := &Environment{}
	dir, err := probe.assetsDir()
	if err != nil {
		b.Fatal(err)
	}
	// envtest looks at $KUBEBUILDER_ASSETS before BinaryAssetsDirectory.
	b.Setenv("KUBEBUILDER_ASSETS", dir)
	var ours, theirs []time.Duration
	for i := 0; b.Loop(); i++ {
		runOurs := func() {
			te := &Environment{CRDDirectoryPaths: crds, ErrorIfCRDPathMissing: true}
			began := time.Now()
			if _, err := te.Start(); err != nil {
				b.Fatal(err)
			}
			ours = append(ours, time.Since(began))
			if err := te.Stop(); err != nil {
				b.Fatal(err)
			}
		}
		runTheirs := func() {
			te := &envtest.Environment{CRDDirectoryPaths: crds, ErrorIfCRDPathMissing: true, BinaryAssetsDirectory: dir}
			began := time.Now()
			if _, err := te.Start(); err != nil {
				b.Fatal(err)
			}
			theirs = append(theirs, time.Since(began))
			if err := te.Stop(); err != nil {
				b.Fatal(err)
			}
		}
		// Alternated: each goes first every other round.
		if i%2 == 0 {
			runOurs()
			runTheirs()
		} else {
			runTheirs()
			runOurs()
		}
	}
	mo, mt := median(ours), median(theirs)
	b.ReportMetric(mo.Seconds(), "rlab-start-s")
	b.ReportMetric(mt.Seconds(), "envtest-start-s")
	b.ReportMetric(mo.Seconds()/mt.Seconds(), "ratio")
	b.Logf("rlab testenv: %v", ours)
	b.Logf("controller-runtime envtest: %v", theirs)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
