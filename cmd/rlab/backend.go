package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/kkloud/rlab/cmd/rlab/internal/launch"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/cluster"
)

// clusterFlags choose the cluster a sandbox runs on and the image its Echo
// pods run; every command that starts one takes them.
type clusterFlags struct {
	Backend   string
	KindImage string
	Image     string
	// The existing cluster (--backend kubeconfig) and the namespace prefix.
	Kubeconfig, Context, Prefix string
	// kindImageFlag is --kind-image as given on the command line (the
	// environment's default is not a mistake on envtest, the flag is).
	kindImageFlag *pflag.Flag
	fs            *pflag.FlagSet // where they were registered: validate tells a flag given as "" from one left out
}

func (f *clusterFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.Backend, "backend", os.Getenv("RLAB_BACKEND"),
		"cluster to run on: "+backend.Usage()+" (default "+backend.Default.Name+", or $RLAB_BACKEND)")
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "",
		"kubeconfig `FILE` of the existing cluster for --backend kubeconfig (default $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&f.Context, "context", "", "kubeconfig `CONTEXT` for --backend kubeconfig (default the current context)")
	fs.StringVar(&f.Prefix, "namespace-prefix", os.Getenv("RLAB_NAMESPACE_PREFIX"),
		"`PREFIX` of every namespace rlab uses on a shared cluster, e.g. rlab-alice- (default: rlab-<your user name>-, a classroom student's rlab-<student>-; or $RLAB_NAMESPACE_PREFIX)")
	fs.StringVar(&f.KindImage, "kind-image", os.Getenv("RLAB_KIND_IMAGE"),
		"kind node `IMAGE` (default: rlab's offline image if `rlab assets build --kind` made it, else kind's published one) (or $RLAB_KIND_IMAGE)")
	f.kindImageFlag = fs.Lookup("kind-image")
	fs.StringVar(&f.Image, "image", os.Getenv("RLAB_IMAGE"),
		"`IMAGE` every Echo pod runs, with http-echo's flags (default: "+echo.DefaultImage+
			", or on kind's offline node "+cluster.OfflineEchoServer+") (or $RLAB_IMAGE)")
}

// apply checks the flags and sets them on o: a wrong backend name fails
// before anything starts.
func (f clusterFlags) apply(o *launch.Options) error {
	b, err := backend.Parse(f.Backend)
	if err != nil {
		return err
	}
	if !b.NodeImage && f.kindImageFlag != nil && f.kindImageFlag.Changed {
		return fmt.Errorf("--kind-image %s: only the kind backend has a node image; add --backend kind", f.KindImage)
	}
	if !b.Shared && (f.Kubeconfig != "" || f.Context != "") {
		return fmt.Errorf("--kubeconfig and --context name an existing cluster; add --backend kubeconfig")
	}
	if _, err := style.ParsePrefix(f.Prefix); err != nil {
		return fmt.Errorf("--namespace-prefix: %w", err)
	}
	o.Backend, o.Image, o.NamespacePrefix = b, f.Image, f.Prefix
	if b.NodeImage {
		o.KindImage = f.KindImage
	}
	if b.Shared {
		o.Kubeconfig, o.Context = f.Kubeconfig, f.Context
	}
	return nil
}
