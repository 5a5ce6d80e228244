package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
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
// Echo CRD is served (installing it if the user may) and, if the user may read
// it, up to date (updating it if the user may).
func (e *Existing) Start(ctx context.Context) error {
	if err := e.step("connect", func() error { return e.connect(ctx) }); err != nil {
		return err
	}
	var installed bool
	var added []string
	if err := e.step("echo crd", func() (err error) {
		installed, added, err = e.ensureCRD(ctx)
		return err
	}); err != nil {
		return err
	}
	if len(added) > 0 {
		e.opts.Log.Info("updated the Echo CRD", "added", added)
	}
	// An updated CRD was served all along: the garbage collector watches it.
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

// ErrOldCRD says the Echo CRD lacks status fields this rlab's operators write
// and the user may not update it.
var ErrOldCRD = errors.New("the Echo CRD is older than this rlab")

// ensureCRD returns whether it installed the CRD, or which status properties
// it added to an older one (see CRDOutdated). A served Echo resource is
// enough when the user may not read CRDs: discovery is open to every
// authenticated user, reading CRDs is not.
func (e *Existing) ensureCRD(ctx context.Context) (installed bool, added []string, err error) {
	dc, err := discovery.NewDiscoveryClientForConfig(e.cfg)
	if err != nil {
		return false, nil, fmt.Errorf("discovery client: %w", err)
	}
	crd, err := echov1.CRD()
	if err != nil {
		return false, nil, err
	}
	if served(dc) {
		added, err := e.upgradeCRD(ctx, crd.Name)
		return false, added, err
	}
	err = installEchoCRD(ctx, e.cfg, Poll)
	if apierrors.IsForbidden(err) {
		return false, nil, fmt.Errorf("%w in context %s and %s may not install it: an administrator must run\n"+
			"  rlab classroom prepare --students N     (the CRD plus a namespace set and kubeconfig per student)\n"+
			"or just the CRD:\n"+
			"  rlab crd | kubectl apply -f -\n"+
			"(CRD %s; the apiserver said: %v)", ErrNoCRD, e.context, e.user, crd.Name, err)
	}
	if err != nil {
		return false, nil, err
	}
	return true, nil, nil
}

// upgradeCRD updates the served CRD name if it lacks status properties: an
// older one would have the apiserver drop what the operators write, and the
// lessons fail on a status that never catches up. A user who may not read
// it (or finds no CRD behind the resource) goes on as before: rlab cannot
// tell. One who may read but not update it gets ErrOldCRD, naming the cause;
// where only a CEL rule of the spec is missing, a warning in the log.
func (e *Existing) upgradeCRD(ctx context.Context, name string) ([]string, error) {
	cs, err := apiextensionsclient.NewForConfig(e.cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	got, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read CRD %s: %w", name, err)
	}
	missing, err := upgradeEchoCRD(ctx, cs, got, Poll)
	if apierrors.IsForbidden(err) && !StatusMissing(missing) {
		// Only a rule or replicas' bound is missing: every status sticks;
		// lesson 16 (on a cluster of rlab's own) would see a refused Echo
		// accepted, and lesson 11 its Echoes scaled to zero refused.
		e.opts.Log.Warn("the Echo CRD lacks what this rlab's has, and this user may not update it",
			"lacks", missing, "user", e.user, "fix", "rlab crd | kubectl apply -f -")
		return nil, nil
	}
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("%w in context %s: it lacks %s; the status fields are what this rlab's operators write "+
			"(the apiserver drops them, so no status would stick), and %s may not update it: an administrator must run\n"+
			"  rlab crd | kubectl apply -f -\n"+
			"(CRD %s; the apiserver said: %v)", ErrOldCRD, e.context, strings.Join(missing, ", "), e.user, name, err)
	}
	if err != nil {
		return nil, err
	}
	return missing, nil
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
