package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kind/pkg/apis/config/defaults"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	kindlog "sigs.k8s.io/kind/pkg/log"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/state"
)

// Offline node image: built here by `rlab assets build --kind` from Debian
// packages and the Go module proxy, with the control-plane images and the
// project's echo server preloaded. Images under this prefix are rlab's own.
const (
	OfflinePrefix     = "rlab.local/"
	OfflineNodeImage  = OfflinePrefix + "kind-node:v1.36.3"
	OfflineEchoServer = OfflinePrefix + "echo-server:v1"
)

// PublishedNodeImage is kind's own default node image: it needs a registry.
const PublishedNodeImage = defaults.Image

// ownedLabel marks a container network rlab created, so that rlab removes it
// once no container is attached (kind itself leaves its network behind).
const ownedLabel = "io.kkloud.rlab.owned"

// kindNetwork is the network kind puts every cluster's nodes on.
const kindNetwork = "kind"

// KindOptions configures the kind backend.
type KindOptions struct {
	// StateRoot is the state dir the cluster belongs to, whose lock the
	// caller holds (state.Dir.Acquire) while the cluster runs. The cluster's
	// name is ClusterName(StateRoot), so that the next start there finds the
	// cluster a killed run left behind; a cluster whose state dir nobody
	// holds is removed by any start.
	StateRoot string
	// Image is the node image; "" is the offline image if it is present, or
	// kind's published image (which needs a registry).
	Image  string
	RunDir string // scratch: the admin kubeconfig; removed by Stop
	LogDir string // the node's console log is saved here at Stop
	Log    *slog.Logger
	// Progress, if set, is called as each start-up phase ends.
	Progress func(Phase)
	// Note, if set, is told of things worth a line to the user (a leftover
	// cluster removed).
	Note func(string)
}

// ClusterName is the kind cluster name of a state dir: "rlab-" and a short
// hash of its path. The prefix says whose it is; the hash keeps two state
// dirs (two users, two test runs) apart.
func ClusterName(stateRoot string) string {
	abs, err := filepath.Abs(stateRoot)
	if err != nil {
		abs = stateRoot
	}
	sum := sha256.Sum256([]byte(abs))
	return "rlab-" + hex.EncodeToString(sum[:4])
}

// Kind is a backend on a kind cluster: real kubelets, real containers, one
// node. Operators still run on this machine, through the counting proxies.
type Kind struct {
	opts     KindOptions
	name     string // ClusterName(opts.StateRoot)
	engine   string // "docker" or "podman": the CLI kind drives
	provider *kindcluster.Provider

	phases
	mu      sync.Mutex
	image   string
	cfg     *rest.Config
	kubecfg []byte
	version string
	created bool // the cluster exists and Stop must delete it
}

// NewKind returns an unstarted kind backend.
func NewKind(opts KindOptions) *Kind {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Kind{opts: opts, name: ClusterName(opts.StateRoot), phases: phases{log: opts.Log, progress: opts.Progress}}
}

// ClusterName is the name of the kind cluster.
func (k *Kind) ClusterName() string { return k.name }

// Type implements Cluster.
func (k *Kind) Type() backend.Backend { return backend.Kind }

// Detail implements Cluster: the node image.
func (k *Kind) Detail() string { return "node " + k.Image() }

// Image is the node image the cluster runs (known once Start has chosen it).
func (k *Kind) Image() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.image
}

// Offline says the node image is rlab's own: nothing can be pulled, so the
// workload must be an image preloaded in it.
func (k *Kind) Offline() bool { return strings.HasPrefix(k.Image(), OfflinePrefix) }

// WorkloadImage is the Echo image that runs on this cluster when none is
// asked for: the preloaded echo server on the offline node image.
func (k *Kind) WorkloadImage(fallback string) string {
	if k.Offline() {
		return OfflineEchoServer
	}
	return fallback
}

// Config implements Cluster.
func (k *Kind) Config() *rest.Config { return rest.CopyConfig(k.cfg) }

// Kubeconfig implements Cluster.
func (k *Kind) Kubeconfig() []byte { return k.kubecfg }

// Version implements Cluster.
func (k *Kind) Version() string { return k.version }

// kubeconfigPath is the cluster's admin kubeconfig. Every kind call that
// writes or cleans a kubeconfig is given it: with no path kind edits
// $KUBECONFIG or ~/.kube/config, which are the student's.
func (k *Kind) kubeconfigPath() string { return filepath.Join(k.opts.RunDir, "admin.kubeconfig") }

// Start implements Cluster. On error everything started so far is removed.
func (k *Kind) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			_ = k.Stop()
		}
	}()
	if k.opts.StateRoot == "" {
		return errors.New("kind backend: no state dir")
	}
	for _, d := range []string{k.opts.RunDir, k.opts.LogDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("kind dirs: %w", err)
		}
	}
	if err := k.step("container engine", func() error { return k.detect(ctx) }); err != nil {
		return err
	}
	k.removeOrphans()
	if err := k.removeLeftover(); err != nil {
		return err
	}
	if err := k.step("node image", func() error { return k.chooseImage(ctx) }); err != nil {
		return err
	}
	if err := k.step("kind cluster", func() error { return k.create(ctx) }); err != nil {
		return err
	}
	if err := k.step("echo crd", func() error { return installEchoCRD(ctx, k.cfg, k.poll) }); err != nil {
		return err
	}
	if err := k.step("gc watches echo", func() error { return waitGCWatchesEcho(ctx, k.cfg, metav1.NamespaceDefault, k.poll) }); err != nil {
		return err
	}
	return k.step("node ready", func() error { return k.readyNodes(ctx) })
}

func (k *Kind) poll(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	return waitUntil(ctx, timeout, what, nil, cond)
}

// detect finds the container engine kind will drive and checks that its
// daemon answers: `docker -v` (all kind checks) works without one.
func (k *Kind) detect(ctx context.Context) error {
	// kind's own order (DetectNodeProvider), with the engine's name kept:
	// rlab runs its CLI too.
	var opt kindcluster.ProviderOption
	for _, e := range []struct {
		bin string
		opt kindcluster.ProviderOption
	}{
		{"docker", kindcluster.ProviderWithDocker()},
		{"nerdctl", kindcluster.ProviderWithNerdctl("nerdctl")},
		{"podman", kindcluster.ProviderWithPodman()},
	} {
		if _, err := exec.LookPath(e.bin); err == nil {
			k.engine, opt = e.bin, e.opt
			break
		}
	}
	if opt == nil {
		return errors.New("the kind backend needs Docker (or Podman, or nerdctl): install it, or as root run scripts/setup-docker.sh")
	}
	k.provider = kindcluster.NewProvider(opt, kindcluster.ProviderWithLogger(kindLogger{k.opts.Log}))
	if out, err := k.run(ctx, "info", "--format", "{{.ServerVersion}}"); err != nil {
		return fmt.Errorf("%s does not answer (%s): start its daemon (as root: scripts/setup-docker.sh)", k.engine, firstLine(out, err))
	}
	return nil
}

// run runs the container engine's CLI and returns its combined output.
func (k *Kind) run(ctx context.Context, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, k.engine, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

func firstLine(out string, err error) string {
	if out == "" {
		return err.Error()
	}
	line, _, _ := strings.Cut(out, "\n")
	return line
}

// removeLeftover deletes this state dir's cluster if a killed run left it:
// the state dir's lock is ours, so nobody else is using it.
func (k *Kind) removeLeftover() error {
	names, err := k.provider.List()
	if err != nil {
		return fmt.Errorf("list kind clusters: %w", err)
	}
	if !slices.Contains(names, k.name) {
		return nil
	}
	k.opts.Log.Warn("removing a kind cluster left by a previous run", "cluster", k.name)
	if err := k.provider.Delete(k.name, k.kubeconfigPath()); err != nil {
		return fmt.Errorf("remove kind cluster %s left by a previous run: %w", k.name, err)
	}
	k.removeNetwork()
	if k.opts.Note != nil {
		k.opts.Note(fmt.Sprintf("removed kind cluster %s left by a previous run", k.name))
	}
	return nil
}

// registry lists the kind clusters rlab created on this machine, one file
// per cluster holding its state dir: a cluster whose state dir is gone (a
// test's temp dir after the test was killed, say) has nobody left to remove
// it, so any start does.
func registry() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("kind cluster registry: %w", err)
	}
	return filepath.Join(dir, "rlab", "kind", "clusters"), nil
}

func register(name, stateRoot string) error {
	dir, err := registry()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("kind cluster registry: %w", err)
	}
	abs, err := filepath.Abs(stateRoot)
	if err != nil {
		return fmt.Errorf("kind cluster registry: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(abs+"\n"), 0o600); err != nil {
		return fmt.Errorf("kind cluster registry: %w", err)
	}
	return nil
}

func unregister(name string) {
	if dir, err := registry(); err == nil {
		_ = os.Remove(filepath.Join(dir, name))
	}
}

// removeOrphans deletes the clusters of the registry that nobody runs: their
// state dir is gone, or no process holds its lock (a killed rlab, a test that
// timed out). A state dir's lock is taken before its cluster is created and
// held until it is deleted.
func (k *Kind) removeOrphans() {
	dir, err := registry()
	if err != nil {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var names []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		root := strings.TrimSpace(string(b))
		if e.Name() == k.name || (state.Dir{Root: root}).Running() != 0 {
			continue // ours, or its owner runs
		}
		if names == nil {
			if names, err = k.provider.List(); err != nil {
				return
			}
		}
		if slices.Contains(names, e.Name()) {
			k.opts.Log.Warn("removing a kind cluster whose state dir is gone", "cluster", e.Name(), "state", root)
			if err := k.provider.Delete(e.Name(), k.kubeconfigPath()); err != nil {
				k.opts.Log.Warn("orphaned kind cluster not removed", "cluster", e.Name(), "err", err)
				continue
			}
			if k.opts.Note != nil {
				k.opts.Note(fmt.Sprintf("removed kind cluster %s: nothing runs it (state dir %s)", e.Name(), root))
			}
		}
		_ = os.Remove(filepath.Join(dir, e.Name()))
	}
}

// chooseImage picks the node image: the one asked for, else the offline
// image if it was built here, else kind's published one.
func (k *Kind) chooseImage(ctx context.Context) error {
	img := k.opts.Image
	if img == "" {
		img = PublishedNodeImage
		if _, err := k.run(ctx, "image", "inspect", OfflineNodeImage); err == nil {
			img = OfflineNodeImage
		}
	}
	if strings.HasPrefix(img, OfflinePrefix) {
		if _, err := k.run(ctx, "image", "inspect", img); err != nil {
			return fmt.Errorf("node image %s is not built: build it with `rlab assets build --kind` (or `make kind-image`; root and Docker needed)", img)
		}
	}
	k.mu.Lock()
	k.image = img
	k.mu.Unlock()
	return nil
}

// clusterConfig is one control-plane node. rlab's offline image has no CNI
// daemon, kube-proxy or CoreDNS images (none is on the module proxy), so it
// uses a static CNI config instead; the operators run outside the cluster
// and need no Services. kubelet 1.36 refuses cgroup v1 unless told.
//
// The apiserver writes an audit log of the requests of ServiceAccounts
// outside kube-system (auditPolicy): an operator running in the cluster
// reaches it directly, not through rlab's proxies, and the log is how rlab
// sees its requests (AuditLog). auditPolicyFile, if not "", is that policy
// on this machine, mounted into the node.
func clusterConfig(offline bool, auditPolicyFile string) *v1alpha4.Cluster {
	cfg := &v1alpha4.Cluster{
		TypeMeta: v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Nodes:    []v1alpha4.Node{{Role: v1alpha4.ControlPlaneRole}},
		KubeadmConfigPatches: []string{
			"kind: KubeletConfiguration\nfailCgroupV1: false\n",
		},
	}
	if auditPolicyFile != "" {
		cfg.Nodes[0].ExtraMounts = []v1alpha4.Mount{{HostPath: auditPolicyFile, ContainerPath: auditNodeDir + "/policy.yaml", Readonly: true}}
		cfg.KubeadmConfigPatches = append(cfg.KubeadmConfigPatches, auditPatch)
	}
	if offline {
		cfg.Networking.DisableDefaultCNI = true
		cfg.Networking.KubeProxyMode = "none" // v1alpha4 has no constant for it
		// The control-plane images are the ones built here, named under
		// rlab.local (scripts/build-kind-node.sh); nothing is pulled.
		cfg.KubeadmConfigPatches = append(cfg.KubeadmConfigPatches,
			"kind: ClusterConfiguration\nimageRepository: "+strings.TrimSuffix(OfflinePrefix, "/")+"\ndns:\n  disabled: true\n")
	}
	return cfg
}

// create creates the cluster and waits until its node is Ready. kind's
// Create takes no context: when ctx ends first, the cluster's containers are
// deleted under it, which makes it return.
func (k *Kind) create(ctx context.Context) error {
	k.mu.Lock()
	k.created = true // from here on, Stop deletes whatever exists
	k.mu.Unlock()
	if err := register(k.name, k.opts.StateRoot); err != nil {
		return err
	}
	// Held until the node is on the network: another rlab's Stop must not
	// remove it in between.
	unlock, err := networkLock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := k.ensureNetwork(ctx); err != nil {
		return err
	}
	policy := filepath.Join(k.opts.RunDir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return fmt.Errorf("audit policy: %w", err)
	}
	done := make(chan error, 1)
	go func() {
		done <- k.provider.Create(k.name,
			kindcluster.CreateWithV1Alpha4Config(clusterConfig(k.Offline(), policy)),
			kindcluster.CreateWithNodeImage(k.Image()),
			kindcluster.CreateWithKubeconfigPath(k.kubeconfigPath()),
			kindcluster.CreateWithWaitForReady(3*time.Minute),
			kindcluster.CreateWithDisplayUsage(false),
			kindcluster.CreateWithDisplaySalutation(false),
		)
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		// A delete before the node container exists stops nothing: repeat
		// it until Create gives up.
		for {
			_ = k.provider.Delete(k.name, k.kubeconfigPath())
			select {
			case <-done:
				return ctx.Err()
			case <-time.After(2 * time.Second):
			}
		}
	}
	if err != nil {
		return fmt.Errorf("create kind cluster %s: %w", k.name, err)
	}
	kc, err := os.ReadFile(k.kubeconfigPath())
	if err != nil {
		return fmt.Errorf("kind kubeconfig: %w", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		return fmt.Errorf("kind kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("server version: %w", err)
	}
	k.cfg, k.kubecfg, k.version = cfg, kc, v.GitVersion
	return nil
}

// readyNodes waits until every node is Ready and untainted for workloads.
func (k *Kind) readyNodes(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(k.cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	return k.poll(ctx, 2*time.Minute, "kind node Ready", func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) == 0 {
			return false, err
		}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			if !NodeReady(n) || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoSchedule }) {
				return false, nil
			}
		}
		return true, nil
	})
}

// waitGCWatchesEcho returns once the garbage collector collects what an Echo
// owns. It learns resource types at start and re-syncs every 30 s; on kind
// the Echo CRD arrives after it started, and until it re-syncs, deleting an
// Echo would leave its Deployment behind. Probe: a throwaway Echo owning a
// ConfigMap in namespace ns, deleted; ready when the ConfigMap is gone.
func waitGCWatchesEcho(ctx context.Context, cfg *rest.Config, ns string, poll pollFunc) error {
	const name = "rlab-gc-probe"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": echov1.Group + "/" + echov1.Version, "kind": echov1.Kind,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"message": "garbage collector probe", "replicas": int64(1)},
	}}
	echoes := dyn.Resource(echov1.Resource).Namespace(ns)
	owner, err := echoes.Create(ctx, probe, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("probe Echo: %w", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: echov1.Group + "/" + echov1.Version, Kind: echov1.Kind, Name: name, UID: owner.GetUID(),
			Controller: ptr.To(true),
		}},
	}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("probe ConfigMap: %w", err)
	}
	// Foreground: the Echo goes only once the collector, watching Echoes,
	// has seen its deletion and removed the ConfigMap first. (In the
	// background the ConfigMap can go as soon as the collector's API
	// mapper knows Echo, which may be before it watches Echoes.)
	if err := echoes.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		return fmt.Errorf("delete probe Echo: %w", err)
	}
	return poll(ctx, 90*time.Second, "the garbage collector to collect an Echo and its dependent", func(ctx context.Context) (bool, error) {
		if _, err := echoes.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, err
		}
		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// ensureNetwork creates kind's network, labelled as rlab's, if it does not
// exist yet: kind then uses it as it is, and Stop can tell that it is ours
// to remove. A network someone else made is left alone. The caller holds
// networkLock.
func (k *Kind) ensureNetwork(ctx context.Context) error {
	if k.engine != "docker" {
		return nil
	}
	if _, err := k.run(ctx, "network", "inspect", kindNetwork); err == nil {
		return nil
	}
	if out, err := k.run(ctx, "network", "create", "--driver", "bridge",
		"--opt", "com.docker.network.bridge.enable_ip_masquerade=true",
		"--label", ownedLabel+"=true", kindNetwork); err != nil {
		return fmt.Errorf("create docker network %s: %s: %w", kindNetwork, out, err)
	}
	return nil
}

// removeNetwork removes kind's network if rlab created it and no container
// uses it any more (another sandbox may still be on it).
func (k *Kind) removeNetwork() {
	if k.engine != "docker" {
		return
	}
	unlock, err := networkLock()
	if err != nil {
		k.opts.Log.Warn("kind network not removed", "err", err)
		return
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := k.run(ctx, "network", "inspect", kindNetwork, "--format",
		fmt.Sprintf(`{{index .Labels %q}} {{len .Containers}}`, ownedLabel))
	if err != nil || out != "true 0" {
		return
	}
	if out, err := k.run(ctx, "network", "rm", kindNetwork); err != nil {
		k.opts.Log.Warn("kind network not removed", "out", out, "err", err)
	}
}

// networkLock serialises creating and removing kind's shared network between
// rlab processes: one must not remove it while another is about to use it.
func networkLock() (func(), error) { return UserLock("kind-network") }

// UserLock waits for and takes the machine-wide (per-user) lock name, a file
// in the per-user cache, and returns its release; it dies with the process.
func UserLock(name string) (release func(), err error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "rlab")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return func() { f.Close() }, nil
}

// Stop implements Cluster: the node's console log is kept, the cluster and
// (if rlab made it and it is unused) its network are removed, then the files.
func (k *Kind) Stop() error {
	k.mu.Lock()
	created := k.created
	k.created = false
	k.mu.Unlock()
	var errs []error
	if created && k.provider != nil {
		k.saveNodeLog()
		if err := k.provider.Delete(k.name, k.kubeconfigPath()); err != nil {
			errs = append(errs, fmt.Errorf("delete kind cluster %s: %w", k.name, err))
		} else {
			unregister(k.name)
		}
		k.removeNetwork()
	}
	if k.opts.RunDir != "" {
		if err := os.RemoveAll(k.opts.RunDir); err != nil {
			errs = append(errs, fmt.Errorf("remove run dir: %w", err))
		}
	}
	return errors.Join(errs...)
}

// saveNodeLog keeps the node container's console (systemd, kubelet at boot)
// for a look after the cluster is gone.
func (k *Kind) saveNodeLog() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := k.run(ctx, "logs", k.name+"-control-plane")
	if err != nil {
		return
	}
	_ = os.WriteFile(filepath.Join(k.opts.LogDir, "kind-node.log"), []byte(out+"\n"), 0o600)
}

// kindLogger sends kind's messages to rlab's log.
type kindLogger struct{ log *slog.Logger }

func (l kindLogger) Warn(m string)                        { l.log.Warn(m, "from", "kind") }
func (l kindLogger) Warnf(f string, a ...any)             { l.log.Warn(fmt.Sprintf(f, a...), "from", "kind") }
func (l kindLogger) Error(m string)                       { l.log.Error(m, "from", "kind") }
func (l kindLogger) Errorf(f string, a ...any)            { l.log.Error(fmt.Sprintf(f, a...), "from", "kind") }
func (l kindLogger) V(v kindlog.Level) kindlog.InfoLogger { return kindInfo{l.log, v} }

type kindInfo struct {
	log *slog.Logger
	v   kindlog.Level
}

func (i kindInfo) Info(m string)            { i.log.Info(m, "from", "kind", "v", int(i.v)) }
func (i kindInfo) Infof(f string, a ...any) { i.Info(fmt.Sprintf(f, a...)) }
func (i kindInfo) Enabled() bool            { return i.v <= 1 }

// WebhookHost is the address the cluster's apiserver reaches this machine
// at: the gateway of kind's network, an address of the host's bridge, on
// which a webhook server of rlab's can listen.
func (k *Kind) WebhookHost(ctx context.Context) (string, error) {
	out, err := k.run(ctx, "network", "inspect", kindNetwork, "--format", "{{range .IPAM.Config}}{{.Gateway}} {{end}}")
	if err != nil {
		return "", fmt.Errorf("docker network %s: %s: %w", kindNetwork, out, err)
	}
	for _, gw := range strings.Fields(out) {
		if ip := net.ParseIP(gw); ip != nil && ip.To4() != nil {
			return gw, nil
		}
	}
	return "", fmt.Errorf("docker network %s has no IPv4 gateway (%q)", kindNetwork, out)
}
