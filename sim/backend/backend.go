// Package backend names the kinds of cluster a sandbox runs on and says what
// each can do, so that callers test a trait rather than a name. Package
// cluster runs them; this one only describes them.
package backend

import (
	"cmp"
	"fmt"
	"strings"

	kindversion "sigs.k8s.io/kind/pkg/cmd/kind/version"

	"github.com/kkloud/rlab/sim/assets"
)

// Backend is a kind of cluster. The zero Backend stands for Default, as an
// options struct that names none means; compare Backends with ==.
type Backend struct {
	// Name is what the user types (--backend, $RLAB_BACKEND, a lesson's
	// backends), e.g. "envtest".
	Name string
	// Summary says in a few words what it is, for --help.
	Summary string
	// LocalControlPlane: rlab runs the control plane itself, from the
	// binaries it builds (sim/assets); on the others it needs only kubectl,
	// for the shell operator.
	LocalControlPlane bool
	// RealKubelets: Pods are real containers on a real node, and answer
	// HTTP; envtest's are kwok's fake kubelet's, with nothing in them.
	RealKubelets bool
	// NodeImage: the cluster runs a node image rlab picks (--kind-image),
	// which may hold the Echo image preloaded.
	NodeImage bool
	// Shared: the cluster is someone else's, used by others too. A sandbox
	// works in its namespace prefix's namespaces, marks those it creates
	// (sim/tenancy) and removes them itself.
	Shared bool
}

// The backends, and the one used when none is named.
var (
	Envtest = Backend{Name: "envtest", Summary: "local binaries, no Docker", LocalControlPlane: true}
	Kind    = Backend{Name: "kind", Summary: "real kubelet and containers; needs Docker", RealKubelets: true, NodeImage: true}
	// Kubeconfig's cluster may well have real kubelets; rlab cannot tell.
	Kubeconfig = Backend{Name: "kubeconfig", Summary: "an existing cluster, shared", Shared: true}

	Default = Envtest
)

// All are the backends in the order the screen and --help list them.
func All() []Backend { return []Backend{Envtest, Kind, Kubeconfig} }

// Names are All's names.
func Names() []string {
	var names []string
	for _, b := range All() {
		names = append(names, b.Name)
	}
	return names
}

// Parse finds a backend by name; "" is Default.
func Parse(name string) (Backend, error) {
	if name == "" {
		return Default, nil
	}
	for _, b := range All() {
		if b.Name == name {
			return b, nil
		}
	}
	return Backend{}, fmt.Errorf("unknown backend %q: use %s", name, oneOf(Names(), "or"))
}

// oneOf lists names as prose: "a, b or c".
func oneOf(names []string, or string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + or + " " + names[len(names)-1]
}

// Usage lists every backend with its summary, for --help: "envtest (…),
// kind (…) or kubeconfig (…)".
func Usage() string {
	var all []string
	for _, b := range All() {
		all = append(all, fmt.Sprintf("%s (%s)", b.Name, b.Summary))
	}
	return oneOf(all, "or")
}

// String is the name.
func (b Backend) String() string { return cmp.Or(b, Default).Name }

// KindVersion is the kind library rlab creates clusters with.
func KindVersion() string { return "v" + kindversion.Version() }

// Label names the backend on the screen once its cluster runs, before the
// version it reports: kind with its own version, which is not the version
// of the Kubernetes it runs.
func (b Backend) Label() string {
	switch b = cmp.Or(b, Default); b {
	case Kind:
		return "kind " + KindVersion() + " · Kubernetes"
	case Kubeconfig:
		return "existing cluster · Kubernetes"
	}
	return b.Name
}

// Title names the backend before it starts, with the Kubernetes version it
// will run if that is known: envtest's is the control plane built here;
// kind's depends on the node image it picks.
func (b Backend) Title() string {
	switch cmp.Or(b, Default) {
	case Kind:
		return "kind " + KindVersion()
	case Kubeconfig:
		return "an existing cluster"
	}
	return Envtest.Name + " " + assets.KubeVersion
}
