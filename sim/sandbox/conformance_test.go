package sandbox_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/cluster/kindtest"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/state"
	"github.com/kkloud/rlab/sim/world"
)

// One sandbox with all three styles runs every test here, against the real
// control plane, as the student would see it. The shell loop polls every
// second instead of five to keep the suite short. The backend is envtest, or
// kind with RLAB_TEST_BACKEND=kind, or with RLAB_TEST_BACKEND=kubeconfig an
// existing cluster that TestMain starts first (envtest, or kind with
// RLAB_TEST_HOST=kind), shared through a namespace prefix. make test runs
// the package every way.
// On envtest the pods run testImage, not the default (nothing is pulled): the
// setting must reach every replica and the world. kind runs its default.
const testImage = "rlab.local/echo-server:v1"

// testPrefix starts the namespaces of the sandbox under test on a shared
// cluster (RLAB_TEST_BACKEND=kubeconfig).
const testPrefix = "rlab-test-"

var (
	sb *sandbox.Sandbox
	// What TestMain built the shared sandbox from, for tests that start
	// one of their own.
	rlabBin, assetsDir string
	underTest          backend.Backend
	// realPods says the pods are real containers (kind, own or shared).
	realPods bool
	events   = &simtest.EventLog{}
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if code, fast := simtest.FastMain(m); fast {
		return code
	}
	under, err := backend.Parse(os.Getenv("RLAB_TEST_BACKEND"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "RLAB_TEST_BACKEND:", err)
		return 1
	}
	// RLAB_TEST_HOST=kind: with RLAB_TEST_BACKEND=kubeconfig, the shared
	// cluster is a kind cluster, not envtest.
	hostBackend, err := backend.Parse(os.Getenv("RLAB_TEST_HOST"))
	if err != nil || hostBackend.Shared {
		fmt.Fprintln(os.Stderr, "RLAB_TEST_HOST: want envtest or kind")
		return 1
	}
	if under == backend.Kind || under.Shared && hostBackend == backend.Kind {
		if code, ok := kindtest.Main(); !ok {
			return code
		}
		release, err := kindtest.Acquire()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer release()
	}
	dir, err := assets.Find(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox tests need the control plane:", err)
		return 1
	}
	self, err := buildRlab()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rlabBin, assetsDir, underTest = self, dir, under
	defer os.RemoveAll(filepath.Dir(self))
	root, err := os.MkdirTemp("", "rlab-sandbox-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	realPods = under.RealKubelets || under.Shared && hostBackend.RealKubelets
	image := testImage
	if under.NodeImage {
		image = "" // real containers: the backend's default, the one its node has
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	stopHost := func() error { return nil }
	opts := sandbox.Options{
		State: state.Dir{Root: filepath.Join(root, "state")}, Assets: dir, Self: self,
		Styles: style.All(), ShellInterval: 2 * time.Second, Sample: true,
		Backend: under, KindImage: kindtest.Image(), Image: image,
	}
	if under.Shared {
		// "The existing cluster" is a sandbox of its own with no
		// operators, in another state dir; the sandbox under test shares
		// it through a kubeconfig and a namespace prefix.
		host, err := sandbox.Start(ctx, sandbox.Options{
			State: state.Dir{Root: filepath.Join(root, "host")}, Assets: dir, Self: self,
			Backend: hostBackend, KindImage: kindtest.Image(),
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "start the host cluster:", err, "logs in", filepath.Join(root, "host", "logs"))
			return 1
		}
		// Stopped before root is removed (a deferred Stop ran after it and
		// left root/host behind), and on every early return.
		stopHost = host.Stop
		defer func() { _ = stopHost() }()
		opts.Kubeconfig, opts.NamespacePrefix = host.Cluster().Kubeconfig(), testPrefix
		if hostBackend.NodeImage {
			opts.Image = host.Cluster().Image() // what its node has
		}
	}
	b := bus.New()
	go events.Run(context.Background(), b.Subscribe(1<<18))
	opts.Bus = b
	// As rlab's commands start it: Start returns as the apiserver serves,
	// and WaitSample waits for the rest (TestStartupPhases).
	opts.Early = true
	sb, err = sandbox.Start(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start sandbox:", err, "logs in", filepath.Join(root, "state", "logs"))
		return 1
	}
	if err := sb.WaitSample(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err, "logs in", filepath.Join(root, "state", "logs"))
		_ = sb.Stop()
		return 1
	}
	code := m.Run()
	if err := sb.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop sandbox:", err)
		code = 1
	}
	if err := stopHost(); err != nil {
		fmt.Fprintln(os.Stderr, "stop the host cluster:", err)
		code = 1
	}
	stopHost = func() error { return nil }
	if code != 0 {
		fmt.Fprintln(os.Stderr, "logs kept in", filepath.Join(root, "state", "logs"))
	} else {
		_ = os.RemoveAll(root)
	}
	return code
}

// buildRlab builds the rlab binary: it runs the Go operators (`rlab operator`).
func buildRlab() (string, error) {
	dir, err := os.MkdirTemp("", "rlab-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "rlab")
	out, err := execCommand("go", "build", "-o", bin, "../../cmd/rlab")
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("build rlab: %w\n%s", err, out)
	}
	return bin, nil
}

// eventually polls cond over the world model up to timeout. Deadlines are
// generous (a loaded 2-core machine); speed is benchmarked.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(world.Snapshot) bool) {
	t.Helper()
	simtest.Eventually(t, timeout, what, simtest.True(func() bool { return cond(sb.World().Snapshot()) }))
}

func echoOf(sn world.Snapshot, st style.Style, name string) *world.EchoView {
	ns := sn.Style(st)
	if ns == nil {
		return nil
	}
	return ns.Echoes[name]
}

func converged(st style.Style, name string, replicas int32, message string) func(world.Snapshot) bool {
	return func(sn world.Snapshot) bool {
		e := echoOf(sn, st, name)
		if e == nil || e.Deployment == nil {
			return false
		}
		d := e.Deployment
		return d.Replicas == replicas && d.ReadyReplicas == replicas && d.Message == message &&
			e.Ready == fmt.Sprintf("%d/%d", replicas, replicas)
	}
}

func deployment(t *testing.T, st style.Style, name string) *appsv1.Deployment {
	t.Helper()
	d, err := sb.Admin().Kube().AppsV1().Deployments(sb.Namespace(st)).Get(t.Context(), echo.DeploymentName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func getEcho(t *testing.T, st style.Style, name string) *echov1.Echo {
	t.Helper()
	u, err := sb.Admin().Echoes(st).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := &echov1.Echo{}
	if err := fromUnstructured(u.Object, e); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestConformance walks one Echo through its life in all three styles at
// once: each step acts in every namespace at the same instant, then checks
// each style.
func TestConformance(t *testing.T) {
	simtest.NeedsControlPlane(t)
	const name = "conform"
	ctx := t.Context()
	steps := []struct {
		name  string
		act   func() error
		check func(t *testing.T, st style.Style)
	}{
		{"create: Deployment as specified, owned, 2/2", func() error { return sb.Student().CreateEcho(ctx, name, "first", 2) },
			func(t *testing.T, st style.Style) {
				eventually(t, time.Minute, "2/2", converged(st, name, 2, "first"))
				e, d := getEcho(t, st, name), deployment(t, st, name)
				want := echo.DesiredDeployment(e, nil, st.ManagedBy(), sb.Cluster().Image())
				if drift := echo.Drift(d, want); drift != "" {
					t.Fatalf("deployment differs from the desired one in %s", drift)
				}
				// The container as stored, the apiserver's defaults applied,
				// is the one Go builds: the same in all three styles.
				hc, wc := d.Spec.Template.Spec.Containers[0], want.Spec.Template.Spec.Containers[0]
				if hc.ImagePullPolicy != wc.ImagePullPolicy || !reflect.DeepEqual(hc.Ports, wc.Ports) ||
					!reflect.DeepEqual(hc.ReadinessProbe, wc.ReadinessProbe) {
					t.Fatalf("container %+v, want pull policy, ports and probe of %+v", hc, wc)
				}
				ref := metav1.GetControllerOf(d)
				if ref == nil || ref.Kind != echov1.Kind || ref.Name != name || ref.UID != e.UID || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
					t.Fatalf("controller ownerReference = %+v", ref)
				}
				if got := d.Spec.Template.Spec.Containers[0].Image; got != sb.Cluster().Image() {
					t.Fatalf("image %q, want the sandbox's %q", got, sb.Cluster().Image())
				}
				if sb.Cluster().Type() == backend.Envtest && sb.Cluster().Image() != testImage {
					t.Fatalf("sandbox image %q, want the %q it was given", sb.Cluster().Image(), testImage)
				}
			}},
		{"replicas 2→4: 4/4", func() error { return sb.Student().SetReplicas(ctx, name, 4) },
			func(t *testing.T, st style.Style) {
				eventually(t, time.Minute, "4/4", converged(st, name, 4, "first"))
			}},
		{"message change: container argument changed", func() error { return sb.Student().SetMessage(ctx, name, "xin chào, second") },
			func(t *testing.T, st style.Style) {
				eventually(t, time.Minute, "new message", converged(st, name, 4, "xin chào, second"))
				if args := deployment(t, st, name).Spec.Template.Spec.Containers[0].Args; len(args) != 1 || args[0] != "-text=xin chào, second" {
					t.Fatalf("args = %q", args)
				}
			}},
		{"deployment deleted: recreated", func() error { return sb.Student().DeleteDeployment(ctx, "", name) },
			func(t *testing.T, st style.Style) {
				// The world saw the delete (drift) and then the new Deployment.
				waitEvent(t, "drift.repaired (deleted)", func(e trace.Event) bool {
					return e.Kind == trace.DriftRepaired && e.Namespace == sb.Namespace(st) &&
						trace.As[trace.Drift](e).Echo == name && trace.As[trace.Drift](e).What == trace.DriftDeleted
				})
				eventually(t, time.Minute, "recreated 4/4", converged(st, name, 4, "xin chào, second"))
			}},
		{"deployment scaled by hand: restored", func() error { return sb.Student().ScaleDeployment(ctx, "", name, 1) },
			func(t *testing.T, st style.Style) {
				waitEvent(t, "drift.repaired (replicas)", func(e trace.Event) bool {
					return e.Kind == trace.DriftRepaired && e.Namespace == sb.Namespace(st) &&
						trace.As[trace.Drift](e).Echo == name && trace.As[trace.Drift](e).What == trace.DriftReplicas
				})
				eventually(t, time.Minute, "scaled back to 4", converged(st, name, 4, "xin chào, second"))
			}},
		{"invalid spec: rejected, nothing changed", func() error {
			err := sb.Student().SetReplicas(ctx, name, 9)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.replicas") ||
				!strings.Contains(err.Error(), "should be less than or equal to 5") {
				return fmt.Errorf("want the apiserver's Invalid error naming spec.replicas, got %v", err)
			}
			return nil
		}, func(t *testing.T, st style.Style) {
			if e := getEcho(t, st, name); echo.Replicas(e.Spec) != 4 {
				t.Fatalf("spec.replicas = %d after a rejected edit", echo.Replicas(e.Spec))
			}
			if d := deployment(t, st, name); *d.Spec.Replicas != 4 {
				t.Fatalf("deployment replicas = %d after a rejected edit", *d.Spec.Replicas)
			}
		}},
		{"scaled to zero: 0/0, no pod, Ready", func() error { return sb.Student().SetReplicas(ctx, name, 0) },
			func(t *testing.T, st style.Style) {
				eventually(t, time.Minute, "0/0", converged(st, name, 0, "xin chào, second"))
				simtest.Eventually(t, time.Minute, "pods gone", func(ctx context.Context) (bool, error) {
					pods, err := sb.Admin().Kube().CoreV1().Pods(sb.Namespace(st)).List(ctx, metav1.ListOptions{LabelSelector: echo.LabelKey + "=" + name})
					return err == nil && len(pods.Items) == 0, err
				})
				// Every pod it asks for is ready: none. Read once the
				// status is for this spec.
				simtest.Eventually(t, time.Minute, "Ready for this generation", func(context.Context) (bool, error) {
					e := getEcho(t, st, name)
					c := meta.FindStatusCondition(e.Status.Conditions, echo.ConditionReady)
					return echo.Replicas(e.Spec) == 0 && e.Status.ObservedGeneration == e.Generation &&
						c != nil && c.Status == metav1.ConditionTrue, nil
				})
			}},
		{"echo deleted: children collected by GC", func() error { return sb.Student().DeleteEcho(ctx, name) },
			func(t *testing.T, st style.Style) {
				eventually(t, time.Minute, "echo and deployment gone", func(sn world.Snapshot) bool {
					ns := sn.Style(st)
					return echoOf(sn, st, name) == nil && len(ns.Orphans) == 0
				})
				ns := sb.Namespace(st)
				simtest.Eventually(t, time.Minute, "pods collected", func(ctx context.Context) (bool, error) {
					pods, err := sb.Admin().Kube().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: echo.LabelKey + "=" + name})
					return err == nil && len(pods.Items) == 0, err
				})
				// Waited for, not looked at once: a Deployment whose Echo
				// still looked alive when its deletion came is judged again
				// after the world's settle time (nsModel.collected).
				waitEvent(t, "gc.collected for the Deployment in "+ns, func(e trace.Event) bool {
					return e.Kind == trace.GCCollected && e.Namespace == ns && e.Object == "Deployment/"+echo.DeploymentName(name)
				})
			}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if err := step.act(); err != nil {
				t.Fatal(err)
			}
			for _, st := range style.All() {
				t.Run(st.String(), func(t *testing.T) { step.check(t, st) })
			}
		})
	}
}

// TestSameDeploymentSpec: the three styles build the very same Deployment
// for the same Echo, but for the label naming the style.
func TestSameDeploymentSpec(t *testing.T) {
	simtest.NeedsControlPlane(t)
	specs := map[style.Style]appsv1.DeploymentSpec{}
	for _, st := range style.All() {
		spec := *deployment(t, st, sandbox.SampleName).Spec.DeepCopy()
		delete(spec.Template.Labels, echo.ManagedByKey)
		specs[st] = spec
	}
	for _, st := range style.All()[1:] {
		if !reflect.DeepEqual(specs[style.Shell], specs[st]) {
			t.Errorf("shell and %s build different Deployments:\n%+v\n%+v", st, specs[style.Shell], specs[st])
		}
	}
}

func eventsOf(kind trace.Kind, st style.Style, echoName string) []trace.Event {
	var out []trace.Event
	for _, e := range events.All() {
		if e.Kind == kind && e.Namespace == sb.Namespace(st) && (e.Echo() == echoName || strings.HasSuffix(e.Object, "/"+echoName)) {
			out = append(out, e)
		}
	}
	return out
}

// waitEvent waits until the trace holds an event matching match; if none
// comes, it says how many there were and shows the last ones.
func waitEvent(t *testing.T, what string, match func(trace.Event) bool) trace.Event {
	t.Helper()
	var found trace.Event
	simtest.Eventually(t, time.Minute, "no "+what+" event", func(context.Context) (bool, error) {
		all := events.All()
		for _, e := range all {
			if match(e) {
				found = e
				return true, nil
			}
		}
		var last strings.Builder
		for _, e := range all[max(0, len(all)-15):] {
			last.WriteString("\n" + e.Line())
		}
		return false, fmt.Errorf("%d events recorded, the last:%s", len(all), last.String())
	})
	return found
}

// holder waits until a running replica other than not holds the Lease of
// st, and returns it.
func holder(t *testing.T, st style.Style, not string) string {
	t.Helper()
	var got string
	simtest.Eventually(t, time.Minute, "a leader of "+st.String()+" other than "+not, func(ctx context.Context) (bool, error) {
		n, _, err := sb.Operators().Leader(ctx, st)
		got = n
		return err == nil && n != not, err
	})
	return got
}

// TestFailover: kill -9 the Lease holder of each Go style; the other
// replica takes the Lease and keeps reconciling.
func TestFailover(t *testing.T) {
	simtest.NeedsControlPlane(t)
	for _, st := range []style.Style{style.ClientGo, style.Runtime} {
		t.Run(st.String(), func(t *testing.T) {
			ctx := t.Context()
			old := holder(t, st, "")
			killed, err := sb.Operators().KillLeader(ctx, st)
			if err != nil || killed != old {
				t.Fatalf("KillLeader = %q, %v (leader was %s)", killed, err, old)
			}
			holder(t, st, old) // the standby takes the Lease
			// The new leader reconciles: a hand scale of the sample is repaired.
			if err := sb.Student().ScaleDeployment(ctx, st, sandbox.SampleName, 1); err != nil {
				t.Fatal(err)
			}
			eventually(t, time.Minute, "repaired by the new leader", converged(st, sandbox.SampleName, 2, sandbox.SampleMessage))
		})
	}
}

// TestWatchOwnedOff reproduces the classic bug: without a Deployment watch a
// hand scale is not repaired until something else triggers the Echo.
func TestWatchOwnedOff(t *testing.T) {
	simtest.NeedsControlPlane(t)
	for _, st := range []style.Style{style.ClientGo, style.Runtime} {
		t.Run(st.String(), func(t *testing.T) {
			ctx := t.Context()
			since := time.Now()
			if err := sb.Flags().SetWatchOwned(st, false); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := sb.Flags().SetWatchOwned(st, true); err != nil {
					t.Error(err)
				}
			}()
			// Wait until both replicas run again without the watch, one of
			// them leads, and it has done its first reconcile (of the initial
			// list), which would otherwise repair the hand scale below.
			for _, r := range sandbox.Replicas(st) {
				waitEvent(t, "restart of "+st.Source(r), func(e trace.Event) bool {
					return e.Kind == trace.ProcessStart && e.Object == st.Source(r) && e.Time.After(since)
				})
			}
			leader := holder(t, st, "")
			waitEvent(t, "first reconcile of the new leader", func(e trace.Event) bool {
				return e.Source == leader && e.Kind == trace.ReconcileEnd && e.Time.After(since)
			})
			// The Deployment, not the Echo's status: with the watch off that
			// status is only as fresh as the last reconcile, and on a real
			// kubelet a Pod still terminating from an earlier test can have
			// made it 1/2 just then (kwok deletes Pods at once).
			eventually(t, time.Minute, "Deployment 2/2 before the edit", func(sn world.Snapshot) bool {
				e := echoOf(sn, st, sandbox.SampleName)
				return e != nil && e.Deployment != nil && e.Deployment.Replicas == 2 && e.Deployment.ReadyReplicas == 2
			})
			if err := sb.Student().ScaleDeployment(ctx, st, sandbox.SampleName, 1); err != nil {
				t.Fatal(err)
			}
			// The bug is that nothing happens: watch the Deployment for 3 s.
			deadline := time.Now().Add(3 * time.Second)
			for time.Now().Before(deadline) {
				if d := deployment(t, st, sandbox.SampleName); *d.Spec.Replicas != 1 {
					t.Fatalf("hand scale was repaired (replicas %d) although the operator does not watch Deployments", *d.Spec.Replicas)
				}
				select {
				case <-ctx.Done():
					t.Fatal(ctx.Err())
				case <-time.After(100 * time.Millisecond):
				}
			}
			// Touch the Echo (only this style's): now the drift is repaired.
			if _, err := sb.Admin().Echoes(st).Patch(ctx, sandbox.SampleName,
				types.MergePatchType, []byte(`{"metadata":{"annotations":{"rlab/touch":"`+time.Now().Format("150405.000")+`"}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			// Only the spec: with no Deployment watch, the Pods becoming
			// Ready trigger nothing, so status.ready stays stale too.
			eventually(t, time.Minute, "repaired after the Echo was touched", func(sn world.Snapshot) bool {
				e := echoOf(sn, st, sandbox.SampleName)
				return e != nil && e.Deployment != nil && e.Deployment.Replicas == 2
			})
		})
	}
}

// TestRBAC: each style's identity may act in its own namespace only.
func TestRBAC(t *testing.T) {
	simtest.NeedsControlPlane(t)
	for _, st := range style.All() {
		for _, other := range style.All() {
			t.Run(st.String()+" in "+other.String(), func(t *testing.T) {
				cfg := rest.CopyConfig(sb.Cluster().Config())
				cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceaccount.MakeUsername(sb.Namespace(st), st.Operator())}
				cs := kubernetes.NewForConfigOrDie(cfg)
				_, err := cs.AppsV1().Deployments(sb.Namespace(other)).List(t.Context(), metav1.ListOptions{})
				if st == other && err != nil {
					t.Fatalf("own namespace: %v", err)
				}
				if st != other && !apierrors.IsForbidden(err) {
					t.Fatalf("another style's namespace: got %v, want Forbidden", err)
				}
			})
		}
	}
}

// TestTraceFromEveryStyle: the trace has reconciles from every style's
// process, API requests from every proxy, and the world's derived events.
func TestTraceFromEveryStyle(t *testing.T) {
	simtest.NeedsControlPlane(t)
	seen := map[string]bool{}
	for _, e := range events.All() {
		seen[e.Source+" "+string(e.Kind)] = true
	}
	for _, want := range []string{
		"shell/a reconcile.end", "shell/a poll.tick", "shell/a kubectl",
		"clientgo/a informer.add", "runtime/a informer.add",
		"proxy/shell/a api.request", "proxy/clientgo/a api.request", "proxy/runtime/a api.request",
		"world echo.converged", "supervisor process.start",
	} {
		if !seen[want] && !seen[strings.Replace(want, "/a ", "/b ", 1)] {
			t.Errorf("no %q event in the trace", want)
		}
	}
	// Every producer (Go operators, bash, proxies, world, supervisor)
	// writes the keys the schema lists for its kind.
	events.CheckSchema(t)
}

// TestKubectlCacheInRunDir: the shell loop's kubectl keeps its discovery
// cache in the sandbox's run dir, removed with it, not in $HOME/.kube/cache
// (a directory per proxy port, left behind by every sandbox).
func TestKubectlCacheInRunDir(t *testing.T) {
	simtest.NeedsControlPlane(t)
	dirs, err := filepath.Glob(filepath.Join(sb.Cluster().KubectlCacheDir(), "discovery", "127.0.0.1_*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no discovery cache of the shell loop's proxy in %s: %v, %v", sb.Cluster().KubectlCacheDir(), dirs, err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skipf("no home directory: %v", err)
	}
	for _, d := range dirs {
		// An entry of the same host:port in $HOME may be older than this
		// proxy: another kubectl (a student's, a test's) talked to an
		// earlier listener on the port. Only one written since the loop's
		// own first write can be this loop's.
		since, _ := modTimes(d)
		other := filepath.Join(home, ".kube", "cache", "discovery", filepath.Base(d))
		if _, newest := modTimes(other); !newest.IsZero() && !newest.Before(since) {
			t.Errorf("%s is in $HOME/.kube/cache too, written %s after the loop's own cache", filepath.Base(d), newest.Sub(since))
		}
	}
}

// modTimes are the oldest and newest modification times of the files under
// dir (zero if there are none).
func modTimes(dir string) (oldest, newest time.Time) {
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		if m := info.ModTime(); oldest.IsZero() || m.Before(oldest) {
			oldest = m
		}
		if m := info.ModTime(); m.After(newest) {
			newest = m
		}
		return nil
	})
	return oldest, newest
}

func execCommand(name string, args ...string) ([]byte, error) {
	return exec.Command(name, args...).CombinedOutput()
}

func fromUnstructured(u map[string]any, e *echov1.Echo) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u, e)
}

// TestClientLimits: every Go replica says which client-side rate limit its
// library gave it: client-go's default 5 req/s (burst 10), controller-runtime's
// none (GetConfig's QPS -1).
func TestClientLimits(t *testing.T) {
	simtest.NeedsControlPlane(t)
	want := map[style.Style]struct{ qps, burst float64 }{style.ClientGo: {5, 10}, style.Runtime: {-1, 10}}
	for st, w := range want {
		for _, r := range sandbox.Replicas(st) {
			src := st.Source(r)
			var got []trace.Event
			for _, e := range events.Of(trace.ClientLimits) {
				if e.Source == src {
					got = append(got, e)
				}
			}
			if len(got) == 0 {
				t.Errorf("%s: no %s event", src, trace.ClientLimits)
				continue
			}
			e := got[len(got)-1]
			q := trace.As[trace.Limits](e).QPS
			b := trace.As[trace.Limits](e).Burst
			if q != w.qps || float64(b) != w.burst {
				t.Errorf("%s: qps %v burst %v, want %v and %v", src, q, b, w.qps, w.burst)
			}
		}
	}
}

// TestTuning: SetTuning restarts a Go style's replicas with --workers,
// --qps and --burst; each replica's client.limits then says the limit its
// clients really have, and the leader's library logs the workers it
// started. The zero Tuning gives back the libraries' defaults, which the
// sandbox is left at.
func TestTuning(t *testing.T) {
	simtest.NeedsControlPlane(t)
	// How each library logs the workers it starts (client-go's is ours).
	workersLine := map[style.Style]*regexp.Regexp{
		style.ClientGo: regexp.MustCompile(`msg="starting workers".* workers=(\d+)`),
		style.Runtime:  regexp.MustCompile(`msg="Starting workers".* "worker count"=(\d+)`),
	}
	for _, st := range []style.Style{style.ClientGo, style.Runtime} {
		t.Run(st.String(), func(t *testing.T) {
			defaults := map[style.Style]float64{style.ClientGo: 5, style.Runtime: -1}[st]
			for _, step := range []struct {
				name       string
				tuning     sandbox.Tuning
				qps, burst float64
				workers    int
			}{
				{"tuned", sandbox.Tuning{Workers: 4, QPS: 50, Burst: 100}, 50, 100, 4},
				{"defaults again", sandbox.Tuning{}, defaults, 10, 1},
			} {
				since := time.Now()
				if err := sb.Flags().SetTuning(st, step.tuning); err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				if got, err := sb.Flags().Tuning(st); err != nil || got != step.tuning {
					t.Errorf("%s: Tuning = %+v, %v; want %+v", step.name, got, err, step.tuning)
				}
				for _, r := range sandbox.Replicas(st) {
					src := st.Source(r)
					e := waitEvent(t, "client.limits of "+src+" restarted", func(e trace.Event) bool {
						return e.Kind == trace.ClientLimits && e.Source == src && e.Time.After(since)
					})
					q := trace.As[trace.Limits](e).QPS
					b := trace.As[trace.Limits](e).Burst
					if q != step.qps || float64(b) != step.burst {
						t.Errorf("%s: %s says qps %v burst %v, want %v and %v", step.name, src, q, b, step.qps, step.burst)
					}
				}
				// The leader, a process started since, says how many workers
				// it started once it led: in its log since it began.
				var leader string
				var began time.Time
				simtest.Eventually(t, time.Minute, step.name+": the leader's workers", func(ctx context.Context) (bool, error) {
					name, _, err := sb.Operators().Leader(ctx, st)
					if err != nil {
						return false, err
					}
					leader, began = name, time.Time{}
					for _, e := range events.Of(trace.ProcessStart) {
						if e.Object == name && e.Time.After(since) {
							began = e.Time
						}
					}
					if began.IsZero() {
						return false, fmt.Errorf("%s leads, not restarted yet", name)
					}
					_, r, _ := strings.Cut(name, "/")
					b, err := os.ReadFile(sb.Operators().LogFile(st, r))
					if err != nil {
						return false, err
					}
					log := string(b)
					log = log[max(0, strings.LastIndex(log, "waiting for the Lease")):]
					m := workersLine[st].FindStringSubmatch(log)
					if m == nil {
						return false, fmt.Errorf("%s has logged no workers since it began", name)
					}
					return m[1] == strconv.Itoa(step.workers), fmt.Errorf("%s logged %s workers", name, m[1])
				})
				// It works: the sample reconciled by the new leader.
				waitEvent(t, "reconcile by "+leader+" since it began", func(e trace.Event) bool {
					return e.Kind == trace.ReconcileEnd && e.Source == leader && e.Time.After(began)
				})
			}
		})
	}
}
