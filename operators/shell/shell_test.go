package shell_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/internal/optest"
	"github.com/kkloud/rlab/operators/shell"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/cluster/clustertest"
	"github.com/kkloud/rlab/sim/simtest"
)

// completeLines returns the complete lines of s: a process may be midway
// through writing the last one.
func completeLines(s string) []string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.Split(s[:i], "\n")
	}
	return nil
}

// script is one running copy of the embedded echo-operator.sh.
type script struct {
	cmd            *exec.Cmd
	stdout, stderr simtest.Buffer
	done           chan struct{} // closed once it exited
	err            error         // Wait's result, once done
}

// startScript runs the embedded script with bash in a process group of its
// own, and kills that group when the test ends.
func startScript(t *testing.T, env []string, args ...string) *script {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "echo-operator.sh")
	if err := os.WriteFile(path, shell.Script, 0o700); err != nil {
		t.Fatal(err)
	}
	s := &script{done: make(chan struct{})}
	s.cmd = exec.Command("bash", append([]string{path}, args...)...)
	// TMPDIR: its mktemp dir goes away with the test even after a SIGKILL.
	s.cmd.Env = append(os.Environ(), append([]string{"TMPDIR=" + dir}, env...)...)
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.cmd.WaitDelay = 2 * time.Second // a leftover child holding the pipes must not hang Wait
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		// The whole group, by its id: bash, and any kubectl or sleep it left.
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		if t.Failed() {
			t.Logf("script stderr:\n%s", s.stderr.String())
		}
	})
	return s
}

func (s *script) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// stopWithin bounds the exit after SIGTERM. The tests that wait in a sleep
// use a 60s interval, so a script that only stops when its wait ends fails.
// A SIGTERM that came just before the wait's read began was acted on only
// when the read returned (no exit 15s after it, in CI): the script now
// waits a second at a time (idle in echo-operator.sh).
const stopWithin = 15 * time.Second

// terminate sends SIGTERM to the script alone and waits up to stopWithin
// for it to exit.
func (s *script) terminate(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
		if s.err != nil {
			t.Errorf("exit after SIGTERM: %v, want a clean exit", s.err)
		}
	case <-time.After(stopWithin):
		t.Fatalf("still running %s after SIGTERM", stopWithin)
	}
}

// events parses every stdout line as a trace event: stdout carries nothing else.
func (s *script) events(t *testing.T) []trace.Event {
	t.Helper()
	var evs []trace.Event
	for _, l := range completeLines(s.stdout.String()) {
		e, err := trace.ParseLine([]byte(l))
		if err != nil {
			t.Fatalf("stdout line is not a trace event: %q: %v", l, err)
		}
		evs = append(evs, e)
	}
	return evs
}

// count is how many events of kind k (with field key=value, if key is set) there are.
func count(evs []trace.Event, k trace.Kind, key, value string) int {
	n := 0
	for _, e := range evs {
		if e.Kind == k && (key == "" || optest.Wire(e, key) == value) {
			n++
		}
	}
	return n
}

// eventually polls cond until it holds or timeout passes; a script that
// exited never makes it hold: it must never stop on its own.
func eventually(t *testing.T, s *script, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	simtest.Eventually(t, timeout, what, func(ctx context.Context) (bool, error) {
		if s.exited() {
			return false, fmt.Errorf("script exited: %v", s.err)
		}
		return cond(ctx)
	})
}

func TestSyntaxAndHelp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "echo-operator.sh")
	if err := os.WriteFile(path, shell.Script, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"syntax", []string{"-n", path}, 0, ""},
		{"help", []string{path, "--help"}, 0, "Usage: echo-operator.sh"},
		{"help names the default image", []string{path, "--help"}, 0, "(default " + echo.DefaultImage + ")"},
		{"empty image", []string{path, "--namespace", "x", "--image", ""}, 1, "--image needs a value"},
		{"no namespace", []string{path, "--interval", "1"}, 2, "--namespace is required"},
		{"namespace not a DNS label", []string{path, "--namespace", "Echo_NS"}, 2, "must be DNS labels"},
		{"bad interval", []string{path, "--namespace", "x", "--interval", "soon"}, 2, "--interval must be"},
		{"unknown flag", []string{path, "--namespace", "x", "--leader-elect"}, 2, "unknown argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command("bash", tc.args...).CombinedOutput()
			code := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode || !strings.Contains(string(out), tc.wantOut) {
				t.Fatalf("exit %d, output %q; want exit %d and %q", code, out, tc.wantCode, tc.wantOut)
			}
		})
	}
}

// TestRendersDeployment: the Deployment the script applies is, field for
// field, the one echo.DesiredDeployment builds in Go for the same Echo and
// image: the default one, or the one given with --image; an Echo with an
// empty message answers echo-defaults' message, or the fallback.
func TestRendersDeployment(t *testing.T) {
	const message = `say "hi" \ xin chào`
	for _, tc := range []struct {
		name     string
		args     []string
		image    string
		message  string
		defaults *corev1.ConfigMap // what get configmap echo-defaults finds
	}{
		{"default image", nil, echo.DefaultImage, message, nil},
		{"--image", []string{"--image", "rlab.local/echo-server:v1"}, "rlab.local/echo-server:v1", message, nil},
		{"echo-defaults", nil, echo.DefaultImage, "", &corev1.ConfigMap{Data: map[string]string{echo.DefaultsKey: message}}},
		{"no echo-defaults", nil, echo.DefaultImage, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &echov1.Echo{
				ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "demo", UID: "uid-1"},
				Spec:       echov1.EchoSpec{Message: tc.message, Replicas: ptr.To[int32](2)},
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "echo"), []byte(getAnswer(e)), 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.defaults != nil {
				if err := os.WriteFile(filepath.Join(dir, "defaults"), []byte(tc.defaults.Data[echo.DefaultsKey]), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			// No Deployment yet; apply keeps what it was sent.
			fake := filepath.Join(dir, "kubectl")
			if err := os.WriteFile(fake, []byte(`#!/usr/bin/env bash
case " $* " in
  *" get echoes "*) echo hello ;;
  *" get echo "*) cat "$FAKE_DIR/echo" ;;
  *" get configmap `+echo.DefaultsName+` "*) cat "$FAKE_DIR/defaults" 2>/dev/null || true ;;
  *" apply "*) cat >"$FAKE_DIR/doc.tmp"; mv "$FAKE_DIR/doc.tmp" "$FAKE_DIR/doc.json"; printf 'uid-d,8,1,,,,' ;;
esac
`), 0o700); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"--namespace", "demo", "--interval", "60", "--kubectl", fake}, tc.args...)
			s := startScript(t, []string{"FAKE_DIR=" + dir}, args...)
			var doc []byte
			eventually(t, s, 20*time.Second, "a Deployment applied", func(context.Context) (bool, error) {
				var err error
				doc, err = os.ReadFile(filepath.Join(dir, "doc.json"))
				return err == nil, nil
			})
			s.terminate(t)

			have := &appsv1.Deployment{}
			if err := json.Unmarshal(doc, have); err != nil {
				t.Fatalf("applied document is not a Deployment: %v\n%s", err, doc)
			}
			want := echo.DesiredDeployment(e, tc.defaults, style.Shell.ManagedBy(), tc.image)
			if !reflect.DeepEqual(have, want) {
				wantJSON, _ := json.MarshalIndent(want, "", "  ")
				haveJSON, _ := json.MarshalIndent(have, "", "  ")
				t.Fatalf("the script applied\n%s\nGo builds\n%s", haveJSON, wantJSON)
			}
		})
	}
}

// TestKubectlFailures: whatever kubectl does wrong, the loop logs it, traces
// it, and polls again; it never exits because of it.
func TestKubectlFailures(t *testing.T) {
	for _, tc := range []struct {
		name, kubectl string
		wantLog       string
		wantEnd       int // reconcile.end events with result=error to wait for
	}{
		{
			name:    "every call fails",
			kubectl: "echo 'error: the server is on fire' >&2; exit 1",
			wantLog: `level=ERROR msg="list echoes failed"`,
		},
		{
			// The list works, every call about one Echo fails.
			name:    "per-echo calls fail",
			kubectl: `case " $* " in *" get echoes "*) echo hello ;; *) echo 'Error from server (Forbidden): nope' >&2; exit 1 ;; esac`,
			wantLog: `level=ERROR msg="reconcile failed" style=shell replica=b echo=hello ns=demo step=fetch`,
			wantEnd: 3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := filepath.Join(t.TempDir(), "kubectl")
			if err := os.WriteFile(fake, []byte("#!/usr/bin/env bash\n"+tc.kubectl+"\n"), 0o700); err != nil {
				t.Fatal(err)
			}
			s := startScript(t, []string{"RLAB_TRACE=1"},
				"--namespace", "demo", "--interval", "1", "--kubectl", fake, "--replica", "b")
			// Three ticks, each with a failed kubectl call: it polled on
			// after two failures.
			eventually(t, s, 20*time.Second, "three ticks with failures", func(context.Context) (bool, error) {
				evs := s.events(t)
				return count(evs, trace.PollTick, "", "") >= 3 &&
					count(evs, trace.Kubectl, "code", "1") >= 3 &&
					count(evs, trace.ReconcileEnd, "result", "error") >= tc.wantEnd, nil
			})
			if !strings.Contains(s.stderr.String(), tc.wantLog) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantLog, s.stderr.String())
			}
			evs := s.events(t)
			for _, e := range evs {
				if e.Source != "shell/b" || e.Namespace != "demo" {
					t.Fatalf("event from %q in %q, want shell/b in demo: %+v", e.Source, e.Namespace, e)
				}
				if err := trace.CheckSchema(e); err != nil {
					t.Errorf("bash event off the schema: %v", err)
				}
				if e.Kind == trace.Kubectl && e.Object != "" && e.Code() != 1 {
					t.Errorf("kubectl event about an Echo with code %d, want 1: %+v", e.Code(), e)
				}
				if e.Kind == trace.ReconcileEnd && trace.As[trace.Reconcile](e).Error == "" {
					t.Errorf("reconcile.end without its error: %+v", e)
				}
			}
			s.terminate(t)
		})
	}
}

// TestStopsPromptlyInSleep: SIGTERM ends the script at once even in a long sleep.
func TestStopsPromptlyInSleep(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "kubectl")
	if err := os.WriteFile(fake, []byte("#!/usr/bin/env bash\nexit 0\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	s := startScript(t, nil, "--namespace", "demo", "--interval", "60", "--kubectl", fake)
	// Logs only (no RLAB_TRACE): stdout must stay empty.
	eventually(t, s, 10*time.Second, "first poll", func(context.Context) (bool, error) {
		return strings.Contains(s.stderr.String(), `msg="starting"`), nil
	})
	s.terminate(t)
	if out := s.stdout.String(); out != "" {
		t.Errorf("stdout without RLAB_TRACE: %q", out)
	}
	if !strings.Contains(s.stderr.String(), `msg="stopping" style=shell replica=a ns=demo signal=TERM`) {
		t.Errorf("no stopping log:\n%s", s.stderr.String())
	}
}

// TestStopsCleanlyMidWork: SIGTERM at any point of a poll, not only in the
// sleep, runs the stop handler and exits 0. A $(...) in the loop breaks this
// (bash can run the trap while parsing it, and the trap then fails to parse),
// so signals land after the 1st, 2nd, ... 40th trace line of a busy loop.
func TestStopsCleanlyMidWork(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "kubectl")
	// Answers every call the loop makes, instantly.
	if err := os.WriteFile(fake, []byte(`#!/usr/bin/env bash
case " $* " in
  *" get echoes "*) echo hello ;;
  *" get echo "*) printf 'uid-1\n2\n1\n1/2\n1\n7\n\n\n\n\nhi there' ;;
  *" get deployment "*) printf 'uid-d 7 uid-1' ;;
  *" apply "*) cat >/dev/null; printf 'uid-d,8,2,1,2,2,1' ;;
esac
`), 0o700); err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 40; k++ {
		s := startScript(t, []string{"RLAB_TRACE=1"}, "--namespace", "demo", "--interval", "0.01", "--kubectl", fake)
		err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			return len(completeLines(s.stdout.String())) >= k || s.exited(), nil
		})
		if err != nil || s.exited() {
			t.Fatalf("run %d: no %d trace lines (%v, exited: %v)", k, k, err, s.exited())
		}
		s.terminate(t)
		if !strings.Contains(s.stderr.String(), `msg="stopping"`) {
			t.Fatalf("run %d: stopped without its handler:\n%s", k, s.stderr.String())
		}
	}
}

// TestAgainstControlPlane runs the script against the real control plane
// (apiserver, kube-controller-manager, scheduler, kwok) and follows one Echo
// through create, scale up, drift, scale down and shutdown. At each step the
// status the script wrote (which the apiserver validated against the CRD's
// schema) must be the one echo.Status computes for the Echo and Deployment.
func TestAgainstControlPlane(t *testing.T) {
	simtest.NeedsControlPlane(t)
	// The proof that the shell operator works: make test always runs it.
	b := startBackend(t)
	dir := b.Assets
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, b.Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(b.Config())
	dyn := dynamic.NewForConfigOrDie(b.Config())
	ctx := t.Context()
	const ns, name, message = "echo-shell", "hello", `it's "quoted" \ back, xin chào`
	echoes := dyn.Resource(echov1.Resource).Namespace(ns)

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	u, err := echov1.NewEcho(ns, name, message, 2).ToUnstructured()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := echoes.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	const image = "rlab.local/echo-server:v1" // not the default: --image reaches the pods
	s := startScript(t, []string{"RLAB_TRACE=1"}, "--kubeconfig", kubeconfig, "--namespace", ns,
		"--interval", "1", "--kubectl", filepath.Join(dir, "kubectl"), "--image", image)

	getEcho := func(ctx context.Context) (*echov1.Echo, error) {
		u, err := echoes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		var e echov1.Echo
		return &e, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &e)
	}
	// matches is nil once echo-hello is what echo.DesiredDeployment asks for.
	matches := func(ctx context.Context) (*appsv1.Deployment, error) {
		e, err := getEcho(ctx)
		if err != nil {
			return nil, err
		}
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, echo.DeploymentName(name), metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return d, sameAsDesired(d, echo.DesiredDeployment(e, nil, style.Shell.ManagedBy(), image)) // pins the script's MANAGER
	}
	statusIs := func(want string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			e, err := getEcho(ctx)
			if err != nil {
				return false, err
			}
			return e.Status.Ready == want, fmt.Errorf("status.ready=%q", e.Status.Ready)
		}
	}

	// settled waits until the rollout is over and the Echo at generation
	// says ready with a status the script has nothing left to write to:
	// what echo.Status computes from it and its Deployment as they are,
	// lastTransitionTimes kept. Its times must read as written, whole
	// seconds in UTC.
	settled := func(ready string, generation int64) *echov1.Echo {
		t.Helper()
		var e *echov1.Echo
		var status []byte
		eventually(t, s, 60*time.Second, fmt.Sprintf("status %s settled at generation %d", ready, generation), func(ctx context.Context) (bool, error) {
			u, err := echoes.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			e = &echov1.Echo{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, e); err != nil {
				return false, err
			}
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, echo.DeploymentName(name), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if e.Generation != generation || e.Status.Ready != ready || e.Status.ObservedGeneration != generation ||
				!meta.IsStatusConditionTrue(e.Status.Conditions, echo.ConditionReady) ||
				!meta.IsStatusConditionFalse(e.Status.Conditions, echo.ConditionProgressing) {
				return false, fmt.Errorf("generation %d, status %+v", e.Generation, e.Status)
			}
			if status, err = json.Marshal(u.Object["status"]); err != nil {
				return false, err
			}
			return true, statusDiff(e.Status, e, d, time.Time{}, time.Time{})
		})
		if err := checkTimes(status); err != nil {
			t.Fatal(err)
		}
		return e
	}
	// transition is when condition typ of e last changed status.
	transition := func(e *echov1.Echo, typ string) time.Time {
		return meta.FindStatusCondition(e.Status.Conditions, typ).LastTransitionTime.Time
	}

	var first *appsv1.Deployment
	eventually(t, s, 60*time.Second, "Deployment as desired", func(ctx context.Context) (ok bool, err error) {
		first, err = matches(ctx)
		return err == nil, err
	})
	eventually(t, s, 60*time.Second, "status.ready 2/2", statusIs("2/2"))
	cur := settled("2/2", 1)
	for _, typ := range []string{echo.ConditionReady, echo.ConditionProgressing} {
		if at := transition(cur, typ); at.Before(began.Truncate(time.Second)) || at.After(time.Now()) {
			t.Errorf("%s lastTransitionTime %s, want a time since the test began at %s", typ, at, began)
		}
	}

	// Polls with nothing changed write nothing: the status is a fixed point.
	quiet := time.Now()
	var calm []reconcileCall
	eventually(t, s, 30*time.Second, "two polls after the status settled", func(context.Context) (bool, error) {
		calm = calm[:0]
		for _, r := range reconciles(s.events(t)) {
			if r.ended && r.start.After(quiet) {
				calm = append(calm, r)
			}
		}
		return len(calm) >= 2, nil
	})
	for _, r := range calm {
		if slices.Contains(r.verbs, "patch echoes/status") {
			t.Errorf("a poll with nothing changed patched the status: kubectl %q", r.verbs)
		}
	}

	// Scaling up turns Ready False (2/3) and Progressing True, then back:
	// both move, and observedGeneration with the spec.
	scaledUp := time.Now()
	if _, err := echoes.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, s, 60*time.Second, "status.ready 3/3", statusIs("3/3"))
	if _, err := matches(ctx); err != nil {
		t.Fatalf("after scaling the Echo: %v", err)
	}
	cur = settled("3/3", 2)
	for _, typ := range []string{echo.ConditionReady, echo.ConditionProgressing} {
		if at := transition(cur, typ); at.Before(scaledUp.Truncate(time.Second)) {
			t.Errorf("%s changed status twice since the scale-up at %s, but its lastTransitionTime is %s", typ, scaledUp, at)
		}
	}

	// Drift: the Deployment deleted by hand comes back on a later poll.
	if err := cs.AppsV1().Deployments(ns).Delete(ctx, echo.DeploymentName(name), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, s, 60*time.Second, "Deployment recreated", func(ctx context.Context) (bool, error) {
		d, err := matches(ctx)
		return err == nil && d.UID != first.UID, err
	})
	// The status was 3/3 all along: wait for the reconcile that recreated it
	// to finish, then for the status that follows.
	eventually(t, s, 60*time.Second, "a second reconcile that created", func(context.Context) (bool, error) {
		return count(s.events(t), trace.ReconcileEnd, "changed", "created") == 2, nil
	})
	eventually(t, s, 60*time.Second, "status.ready 3/3 again", statusIs("3/3"))
	cur = settled("3/3", 2)

	// Scaling down keeps three, then two pods ready: Ready stays True and
	// keeps its lastTransitionTime, which must be a second old at least for
	// a new one to show; Progressing goes True and back.
	readySince := transition(cur, echo.ConditionReady)
	eventually(t, s, 5*time.Second, "a second since Ready's lastTransitionTime", func(context.Context) (bool, error) {
		return time.Now().Truncate(time.Second).After(readySince), nil
	})
	scaledDown := time.Now()
	if _, err := echoes.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	cur = settled("2/2", 3)
	if at := transition(cur, echo.ConditionReady); !at.Equal(readySince) {
		t.Errorf("Ready stayed True through the scale-down, but its lastTransitionTime moved from %s to %s", readySince, at)
	}
	if at := transition(cur, echo.ConditionProgressing); at.Before(scaledDown.Truncate(time.Second)) {
		t.Errorf("Progressing changed status twice since the scale-down at %s, but its lastTransitionTime is %s", scaledDown, at)
	}

	s.terminate(t)

	evs := s.events(t)
	for _, e := range evs {
		if e.Source != "shell/a" || e.Namespace != ns || e.Time.IsZero() {
			t.Fatalf("event not from shell/a in %s with a time: %+v", ns, e)
		}
		// The bash trace() writes its keys by hand: they must be the
		// schema's, or stats and lessons read nothing.
		if err := trace.CheckSchema(e); err != nil {
			t.Errorf("bash event off the schema: %v", err)
		}
	}
	for _, want := range []struct {
		kind       trace.Kind
		key, value string
	}{
		{trace.PollTick, "interval_s", "1"},
		{trace.Kubectl, "verb", "get echoes"},
		{trace.Kubectl, "verb", "get deployments"},
		{trace.Kubectl, "verb", "apply deployments"},
		{trace.Kubectl, "verb", "patch echoes/status"},
		{trace.ReconcileStart, "cause", trace.CausePoll},
		{trace.ReconcileEnd, "result", "ok"},
		{trace.ReconcileEnd, "changed", "created"}, // twice: at start and after the delete
		{trace.ReconcileEnd, "changed", "updated"}, // replicas 2 → 3 → 2
		{trace.ReconcileEnd, "changed", "none"},
		{trace.ReconcileEnd, "status", "3/3"},
	} {
		if count(evs, want.kind, want.key, want.value) == 0 {
			t.Errorf("no %s event with %s=%s", want.kind, want.key, want.value)
		}
	}
	// The apiserver took every status written: one off the CRD's schema (a
	// bad reason, a missing field) gets 422 and kubectl exits 1.
	for _, e := range evs {
		if e.Kind == trace.Kubectl && e.Verb() == "patch echoes/status" && e.Code() != 0 {
			t.Errorf("status patch failed with code %d", e.Code())
		}
	}
	if n := count(evs, trace.ReconcileEnd, "changed", "created"); n != 2 {
		t.Errorf("%d reconciles created the Deployment, want 2 (start, after the delete)", n)
	}
	for _, e := range evs {
		if e.Kind == trace.ReconcileStart && e.Object != "Echo/"+name {
			t.Errorf("reconcile.start about %q, want Echo/%s", e.Object, name)
		}
	}
	if !strings.Contains(s.stderr.String(), `level=INFO msg="reconcile done" style=shell replica=a echo=hello ns=echo-shell step=status changed=created ready=`) {
		t.Errorf("no reconcile done log line:\n%s", s.stderr.String())
	}
}

// sameAsDesired compares the fields an Echo operator sets.
func sameAsDesired(have, want *appsv1.Deployment) error {
	hc, wc := have.Spec.Template.Spec.Containers, want.Spec.Template.Spec.Containers
	if len(hc) != 1 {
		return fmt.Errorf("%d containers, want 1", len(hc))
	}
	for _, f := range []struct {
		name       string
		have, want any
	}{
		{"namespace", have.Namespace, want.Namespace},
		{"labels", have.Labels, want.Labels},
		{"ownerReferences", have.OwnerReferences, want.OwnerReferences},
		{"replicas", *have.Spec.Replicas, *want.Spec.Replicas},
		{"selector", have.Spec.Selector, want.Spec.Selector},
		{"template labels", have.Spec.Template.Labels, want.Spec.Template.Labels},
		{"container name", hc[0].Name, wc[0].Name},
		{"image", hc[0].Image, wc[0].Image},
		{"imagePullPolicy", hc[0].ImagePullPolicy, wc[0].ImagePullPolicy},
		{"args", hc[0].Args, wc[0].Args},
		{"ports", hc[0].Ports, wc[0].Ports},
		// As stored, defaults applied: equal only because Go spells them out.
		{"readinessProbe", hc[0].ReadinessProbe, wc[0].ReadinessProbe},
	} {
		if !reflect.DeepEqual(f.have, f.want) {
			return fmt.Errorf("%s = %#v, want %#v", f.name, f.have, f.want)
		}
	}
	return nil
}

// startBackend starts a real control plane for one test and stops it after.
func startBackend(t *testing.T) *clustertest.Env {
	t.Helper()
	env, err := clustertest.Start(context.Background(), "shell-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	return env
}
