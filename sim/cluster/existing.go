package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/tenancy"
)

// ExistingOptions configures the kubeconfig backend.
type ExistingOptions struct {
	// Path is the kubeconfig file; "" uses $KUBECONFIG or ~/.kube/config.
	Path string
	// Context is the context to use; "" is the file's current context.
	Context string
	// Prefix starts every namespace rlab creates; "" derives it from the
	// user (see tenancy.DefaultPrefix).
	Prefix style.Prefix
	Log    *slog.Logger
	// Progress, if set, is called as each start-up phase ends.
	Progress func(Phase)
}

// Existing is a cluster that someone else runs, reached through a kubeconfig:
// rlab starts nothing in it but its own namespaces' objects, and needs no
// more than the rights `rlab classroom prepare` grants a student once the
// Echo CRD exists.
type Existing struct {
	phases
	opts    ExistingOptions
	cfg     *rest.Config
	kubecfg []byte
	version string
	user    string
	context string
	prefix  style.Prefix
}

// NewExisting returns an unstarted kubeconfig backend.
func NewExisting(opts ExistingOptions) *Existing {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Existing{opts: opts, phases: phases{log: opts.Log, progress: opts.Progress}}
}

// Type implements Cluster.
func (e *Existing) Type() backend.Backend { return backend.Kubeconfig }

// Detail implements Cluster: the context and who rlab acts as.
func (e *Existing) Detail() string {
	return fmt.Sprintf("context %s · as %s · namespaces %s*", e.context, e.user, e.prefix)
}

// Config implements Cluster: the kubeconfig's identity, not necessarily an
// administrator.
func (e *Existing) Config() *rest.Config { return rest.CopyConfig(e.cfg) }

// Kubeconfig implements Cluster: the chosen context alone, self-contained.
func (e *Existing) Kubeconfig() []byte { return e.kubecfg }

// Version implements Cluster.
func (e *Existing) Version() string { return e.version }

// User is who the apiserver says rlab acts as.
func (e *Existing) User() string { return e.user }

// Prefix is the namespace prefix: the one asked for, or the user's.
func (e *Existing) Prefix() style.Prefix { return e.prefix }

// Start implements Cluster: it connects, learns who it is, and makes sure the
// Echo CRD is served (installing it if the user may).
func (e *Existing) Start(ctx context.Context) error {
	if err := e.step("connect", func() error { return e.connect(ctx) }); err != nil {
		return err
	}
	installed := false
	if err := e.step("echo crd", func() (err error) {
		installed, err = e.ensureCRD(ctx)
		return err
	}); err != nil {
		return err
	}
	if !installed {
		return nil
	}
	// The garbage collector learns of a new CRD only at its next re-sync.
	return e.step("gc watches echo", func() error { return e.probeGC(ctx) })
}

// connect loads the kubeconfig, asks the apiserver its version and who the
// credentials belong to.
func (e *Existing) connect(ctx context.Context) error {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = e.opts.Path
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: e.opts.Context})
	raw, err := cc.RawConfig()
	if err != nil {
		return fmt.Errorf("read kubeconfig: %w", err)
	}
	e.context = e.opts.Context
	if e.context == "" {
		e.context = raw.CurrentContext
	}
	if _, ok := raw.Contexts[e.context]; !ok {
		return fmt.Errorf("kubeconfig %s has no context %q", describePath(rules), e.context)
	}
	if e.cfg, err = cc.ClientConfig(); err != nil {
		return fmt.Errorf("kubeconfig %s, context %s: %w", describePath(rules), e.context, err)
	}
	e.cfg.QPS, e.cfg.Burst = 50, 100
	if e.kubecfg, err = standalone(raw, e.context); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(e.cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("reach the apiserver of context %s at %s: %w", e.context, e.cfg.Host, err)
	}
	e.version = v.GitVersion
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("ask the apiserver who context %s is: %w", e.context, err)
	}
	e.user = review.Status.UserInfo.Username
	e.prefix = e.opts.Prefix
	if e.prefix == "" {
		e.prefix = tenancy.DefaultPrefix(e.user)
	}
	e.opts.Log.Info("connected", "context", e.context, "server", e.cfg.Host, "user", e.user, "prefix", e.prefix)
	return nil
}

func describePath(r *clientcmd.ClientConfigLoadingRules) string {
	if r.ExplicitPath != "" {
		return r.ExplicitPath
	}
	return strings.Join(r.Precedence, ":")
}

// standalone is the context ctx of raw as a kubeconfig of its own, with
// certificates and keys inlined, for `rlab env` to hand out.
func standalone(raw clientcmdapi.Config, ctx string) ([]byte, error) {
	cfg := raw.DeepCopy()
	cfg.CurrentContext = ctx
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubeconfig context %s: %w", ctx, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubeconfig context %s: %w", ctx, err)
	}
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %s: %w", ctx, err)
	}
	return b, nil
}

// ErrNoCRD says the Echo CRD is missing and the user may not install it.
var ErrNoCRD = errors.New("the Echo CRD is not installed")

// ensureCRD returns whether it installed the CRD. A served Echo resource is
// enough: discovery is open to every authenticated user, reading CRDs is not.
func (e *Existing) ensureCRD(ctx context.Context) (installed bool, err error) {
	dc, err := discovery.NewDiscoveryClientForConfig(e.cfg)
	if err != nil {
		return false, fmt.Errorf("discovery client: %w", err)
	}
	if served(dc) {
		return false, nil
	}
	crd, err := echov1.CRD()
	if err != nil {
		return false, err
	}
	err = installEchoCRD(ctx, e.cfg, Poll)
	if apierrors.IsForbidden(err) {
		return false, fmt.Errorf("%w in context %s and %s may not install it: an administrator must run\n"+
			"  rlab classroom prepare --students N     (the CRD plus a namespace set and kubeconfig per student)\n"+
			"or just the CRD:\n"+
			"  rlab crd | kubectl apply -f -\n"+
			"(CRD %s; the apiserver said: %v)", ErrNoCRD, e.context, e.user, crd.Name, err)
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// served says whether the apiserver serves the Echo resource.
func served(dc discovery.DiscoveryInterface) bool {
	list, err := dc.ServerResourcesForGroupVersion(echov1.GroupVersion.String())
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == echov1.Plural {
			return true
		}
	}
	return false
}

// probeGC runs the garbage-collector probe in a namespace of the prefix's
// own, removed afterwards, so that nothing outside the prefix is touched.
func (e *Existing) probeGC(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(e.cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	ns := string(e.prefix) + "gc-probe"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns, Labels: tenancy.OwnedLabels(e.prefix),
	}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	defer func() {
		_ = cs.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns, metav1.DeleteOptions{})
	}()
	return waitGCWatchesEcho(ctx, e.cfg, ns, Poll)
}

// Stop implements Cluster: the cluster is not rlab's to stop; the sandbox
// removes its namespaces.
func (e *Existing) Stop() error { return nil }
