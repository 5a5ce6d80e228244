package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/runner"
	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/feature/classroom"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/state"
)

// An existing cluster, as these tests use it, is another rlab sandbox with
// no operators, in a state dir of its own: startHost returns its admin
// kubeconfig.
func startHost(t testing.TB) string {
	t.Helper()
	e := newSandboxEnv(t)
	r := startRun(t, e, "--operators", "none", "--for", "30m")
	r.waitStderr(t, readyLine, 4*time.Minute)
	t.Cleanup(func() {
		_ = syscall.Kill(r.pid(), syscall.SIGINT)
		_ = r.wait(t, 2*time.Minute)
	})
	return state.Dir{Root: e.rlabState()}.Kubeconfig()
}

type kube struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
	cfg  *rest.Config
}

func kubeFor(t testing.TB, kubeconfig string) kube {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return kube{kube: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg), cfg: cfg}
}

// echoes maps "namespace/name" of the Echoes called name in prefix's style
// namespaces to "uid ready".
func (k kube) echoes(t *testing.T, p style.Prefix, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, st := range style.All() {
		ns := p.Namespace(st)
		e, err := k.dyn.Resource(echov1.Resource).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		ready, _, _ := unstructured.NestedString(e.Object, "status", "ready")
		out[ns+"/"+name] = string(e.GetUID()) + " " + ready
	}
	return out
}

func (k kube) namespacesGone(t *testing.T, p style.Prefix, timeout time.Duration) {
	t.Helper()
	simtest.Eventually(t, timeout, "namespaces "+string(p)+"* deleted", func(ctx context.Context) (bool, error) {
		for _, st := range style.All() {
			if _, err := k.kube.CoreV1().Namespaces().Get(ctx, p.Namespace(st), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("%s: %v", p.Namespace(st), err)
			}
		}
		return true, nil
	})
}

// onlyOwn fails if a JSON timeline names a namespace outside prefix p.
func onlyOwn(t *testing.T, who string, p style.Prefix, timeline string) {
	t.Helper()
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(timeline), "\n") {
		var ev struct {
			Namespace string `json:"ns"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%s: timeline line %q: %v", who, line, err)
		}
		if ev.Namespace == "" {
			continue
		}
		if !strings.HasPrefix(ev.Namespace, string(p)) {
			t.Errorf("%s saw namespace %s, outside its prefix %s", who, ev.Namespace, p)
		}
		seen++
	}
	if seen == 0 {
		t.Errorf("%s: no event named a namespace", who)
	}
}

// TestSharedCluster: two rlab instances with different prefixes on one
// existing cluster converge at the same time and see only their own objects;
// after SIGKILL of one, its restart removes its leftover namespaces and
// leaves the other's untouched; a clean exit removes its namespaces.
func TestSharedCluster(t *testing.T) {
	simtest.NeedsControlPlane(t)
	host := startHost(t)
	admin := kubeFor(t, host)
	args := func(p style.Prefix) []string {
		return []string{"--backend", "kubeconfig", "--kubeconfig", host, "--namespace-prefix", string(p),
			"--shell-interval", "2s", "--for", "30m", "--output", "json"}
	}
	const pa, pb = style.Prefix("rlab-a-"), style.Prefix("rlab-b-")
	ea, eb := newSandboxEnv(t), newSandboxEnv(t)
	a := startRun(t, ea, args(pa)...)
	b := startRun(t, eb, args(pb)...)
	a.waitStderr(t, readyLine, 5*time.Minute)
	b.waitStderr(t, readyLine, 5*time.Minute)
	for _, p := range []style.Prefix{pa, pb} {
		got := admin.echoes(t, p, "hello")
		if len(got) != 3 {
			t.Fatalf("Echo hello under %s: %v, want one per style", p, got)
		}
		for k, v := range got {
			if !strings.HasSuffix(v, " 2/2") {
				t.Errorf("%s: %s, want 2/2", k, v)
			}
		}
	}
	onlyOwn(t, "rlab a", pa, a.stdout.String())
	onlyOwn(t, "rlab b", pb, b.stdout.String())
	before := admin.echoes(t, pb, "hello")
	oldA := admin.echoes(t, pa, "hello")

	if err := syscall.Kill(a.pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.wait(t, 30*time.Second)
	if left := admin.echoes(t, pa, "hello"); len(left) != 3 {
		t.Fatalf("after SIGKILL nothing can clean up yet; want a's 3 Echoes left, got %v", left)
	}
	a2 := startRun(t, ea, args(pa)...)
	a2.waitStderr(t, readyLine, 5*time.Minute)
	if !strings.Contains(a2.stderr.String(), "left by a previous run") {
		t.Errorf("restart did not say it removed the leftovers; stderr:\n%s", a2.stderr)
	}
	newA := admin.echoes(t, pa, "hello")
	for k, v := range newA {
		if oldA[k] == v || strings.Fields(oldA[k])[0] == strings.Fields(v)[0] {
			t.Errorf("%s kept its uid across the restart (%s): the leftover was not removed", k, v)
		}
	}
	if after := admin.echoes(t, pb, "hello"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("b's Echoes changed while a restarted:\nbefore %v\nafter  %v", before, after)
	}

	// An Echo with a finalizer nothing will ever run must not keep a's
	// namespace terminating after a exits.
	e := echov1.NewEcho(pa.Namespace(style.Shell), "kept", "kept", 1)
	e.Finalizers = []string{"rlab.test/never"}
	kept, err := e.ToUnstructured()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.dyn.Resource(echov1.Resource).Namespace(pa.Namespace(style.Shell)).Create(t.Context(), kept, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(a2.pid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := a2.wait(t, 3*time.Minute); err != nil {
		t.Fatalf("rlab a after SIGINT: %v\n%s", err, a2.stderr)
	}
	admin.namespacesGone(t, pa, time.Minute)
	if after := admin.echoes(t, pb, "hello"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("b's Echoes changed when a exited:\nbefore %v\nafter  %v", before, after)
	}
	if err := syscall.Kill(b.pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := b.wait(t, 3*time.Minute); err != nil {
		t.Fatalf("rlab b after SIGTERM: %v\n%s", err, b.stderr)
	}
	admin.namespacesGone(t, pb, time.Minute)
}

// TestClassroom: prepare three students on a cluster with no Echo CRD; each
// student's kubeconfig runs a sandbox to ready; student 1 is Forbidden in
// student 2's namespaces (and may not create namespaces); status shows every
// student's Echoes and Lease holders; students 2 and 3 verify the lessons at
// once; teardown leaves nothing. It runs beside TestCheckKubebuilder, each
// on clusters of its own: most of both is waiting.
func TestClassroom(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	host := startHost(t)
	admin := kubeFor(t, host)
	ext := apiextensionsclient.NewForConfigOrDie(admin.cfg)
	crdName := echov1.Plural + "." + echov1.Group
	if err := ext.ApiextensionsV1().CustomResourceDefinitions().Delete(t.Context(), crdName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, time.Minute, "Echo CRD deleted", func(ctx context.Context) (bool, error) {
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})

	// Someone with no right to install it is told what an administrator
	// must run, and nothing starts.
	dir := t.TempDir()
	nobody := tokenKubeconfig(t, admin, "nobody", filepath.Join(dir, "nobody.kubeconfig"))
	out, errOut, code := cli(t, nil, rlabBin, "run", "--backend", "kubeconfig", "--kubeconfig", nobody, "--operators", "none")
	if code == 0 || !strings.Contains(errOut, "the Echo CRD is not installed") || !strings.Contains(errOut, "rlab crd | kubectl apply -f -") ||
		!strings.Contains(errOut, "system:serviceaccount:default:nobody") {
		t.Errorf("rlab run without the CRD, as a user who may not install it: exit %d, stderr:\n%s", code, errOut)
	}

	out, errOut, code = cli(t, nil, rlabBin, "classroom", "prepare", "--students", "3", "--kubeconfig", host, "--out", dir)
	if code != 0 {
		t.Fatalf("classroom prepare: exit %d\n%s%s", code, out, errOut)
	}
	kc := func(i int) string { return filepath.Join(dir, classroom.Student(i)+".kubeconfig") }

	var runs []*run
	for i := 1; i <= 3; i++ {
		r := startRun(t, newSandboxEnv(t), "--backend", "kubeconfig", "--kubeconfig", kc(i), "--shell-interval", "5s", "--for", "30m")
		runs = append(runs, r)
	}
	for i, r := range runs {
		r.waitStderr(t, readyLine, 6*time.Minute)
		if got := admin.echoes(t, classroom.Prefix(classroom.Student(i+1)), "hello"); len(got) != 3 {
			t.Errorf("student %d: Echo hello %v, want one per style", i+1, got)
		}
	}

	s1 := kubeFor(t, kc(1))
	own := classroom.Prefix("s1").Namespace(style.ClientGo)
	if _, err := s1.dyn.Resource(echov1.Resource).Namespace(own).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatalf("student 1 cannot list their own Echoes in %s: %v", own, err)
	}
	for _, st := range style.All() {
		ns := classroom.Prefix("s2").Namespace(st)
		tries := []struct {
			what string
			call func(ctx context.Context) error
		}{
			{"list echoes", func(ctx context.Context) error {
				_, err := s1.dyn.Resource(echov1.Resource).Namespace(ns).List(ctx, metav1.ListOptions{})
				return err
			}},
			{"delete echo", func(ctx context.Context) error {
				return s1.dyn.Resource(echov1.Resource).Namespace(ns).Delete(ctx, "hello", metav1.DeleteOptions{})
			}},
			{"list pods", func(ctx context.Context) error {
				_, err := s1.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				return err
			}},
			{"patch deployment", func(ctx context.Context) error {
				_, err := s1.kube.AppsV1().Deployments(ns).Patch(ctx, "echo-hello", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{})
				return err
			}},
			{"get role", func(ctx context.Context) error {
				_, err := s1.kube.RbacV1().Roles(ns).Get(ctx, "echo-operator", metav1.GetOptions{})
				return err
			}},
			{"token for the operator", func(ctx context.Context) error {
				_, err := s1.kube.CoreV1().ServiceAccounts(ns).Get(ctx, st.Operator(), metav1.GetOptions{})
				return err
			}},
		}
		for _, tr := range tries {
			if err := tr.call(t.Context()); !apierrors.IsForbidden(err) {
				t.Errorf("student 1 %s in %s: %v, want Forbidden", tr.what, ns, err)
			}
		}
	}
	if _, err := s1.kube.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("student 1 list namespaces: %v, want Forbidden", err)
	}

	status, errOut, code := cli(t, nil, rlabBin, "classroom", "status", "--kubeconfig", host)
	if code != 0 {
		t.Fatalf("classroom status: exit %d\n%s", code, errOut)
	}
	for i := 1; i <= 3; i++ {
		for _, st := range style.All() {
			want := fmt.Sprintf("s%d\\s+%s\\s+hello 2/2\\s+", i, st)
			if st.Traits().ElectsLeader {
				want += string(st) + `-[ab]-\d+ \(held\)`
			} else {
				want += "no election"
			}
			if !matches(want, status) {
				t.Errorf("classroom status has no line %q:\n%s", want, status)
			}
		}
	}

	for i, r := range runs {
		if err := syscall.Kill(r.pid(), syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if err := r.wait(t, 3*time.Minute); err != nil {
			t.Fatalf("student %d's rlab after SIGINT: %v\n%s", i+1, err, r.stderr)
		}
	}
	// Prepared namespaces stay (a student may not delete them), emptied.
	for i := 1; i <= 3; i++ {
		if got := admin.echoes(t, classroom.Prefix(classroom.Student(i)), "hello"); len(got) != 0 {
			t.Errorf("student %d's Echoes left after exit: %v", i, got)
		}
	}

	// The lessons work unchanged with a student's rights: they edit the
	// operators' Role, kill leaders, orphan Deployments, all in the
	// student's own namespaces. Students 2 and 3 follow the course at the
	// same time on the one cluster, each half of it (every lesson that runs
	// on a shared cluster; the others are skipped). Student 3 does it by
	// hand, in Russian: the commands the steps show, typed into bash, must
	// name their own namespaces (a loop's echo-$s too).
	all, err := lessons.Load()
	if err != nil {
		t.Fatal(err)
	}
	var halves [2][]string
	n := 0
	for _, l := range all {
		if l.RunsOn(backend.Kubeconfig.Name) {
			halves[n%2] = append(halves[n%2], fmt.Sprint(l.Number))
			n++
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	// Meanwhile student 1 follows lesson 1 by hand, and the instructor
	// sees where, and sends them to lesson 2.
	wg.Go(func() { followedByInstructor(t, host, kc(1)) })
	for i, half := range halves {
		student := i + 2
		wg.Go(func() {
			args := append([]string{"lesson", "verify", "--shell-interval", "5s",
				"--backend", "kubeconfig", "--kubeconfig", kc(student)}, half...)
			if student == 3 { // the checks do not depend on words
				args = append(args, "--lang", "ru", "--by-hand", "--read", "1s")
			}
			verify := exec.CommandContext(ctx, rlabBin, args...)
			verify.Env = newSandboxEnv(t).env
			verify.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			verify.Cancel = func() error { return syscall.Kill(-verify.Process.Pid, syscall.SIGINT) }
			verify.WaitDelay = time.Minute
			vout, err := verify.CombinedOutput()
			want := fmt.Sprintf("%d of %d lessons verified", len(half), len(half))
			byHand := student != 3 || strings.Contains(string(vout), "(by hand, 1s of reading a step")
			if err != nil || !strings.Contains(string(vout), want) || !byHand {
				t.Errorf("rlab lesson verify %s as student %d: %v, want %q:\n%s", strings.Join(half, " "), student, err, want, vout)
			}
		})
	}
	wg.Wait()

	out, errOut, code = cli(t, nil, rlabBin, "classroom", "teardown", "--kubeconfig", host)
	if code != 0 {
		t.Fatalf("classroom teardown: exit %d\n%s%s", code, out, errOut)
	}
	nss, err := admin.kube.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, "rlab-") || ns.Labels[classroom.LabelClassroom] != "" {
			t.Errorf("namespace %s left after teardown", ns.Name)
		}
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), crdName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Echo CRD that prepare installed is still there after teardown: %v", err)
	}
}

func matches(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// tokenKubeconfig writes a kubeconfig for a new ServiceAccount name in
// namespace default, with no rights beyond what every user has.
func tokenKubeconfig(t testing.TB, admin kube, name, file string) string {
	t.Helper()
	sas := admin.kube.CoreV1().ServiceAccounts("default")
	if _, err := sas.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := sas.CreateToken(t.Context(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: admin.cfg.Host, CertificateAuthorityData: admin.cfg.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {Token: tr.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: "c", AuthInfo: name}},
		CurrentContext: name,
	}
	if err := clientcmd.WriteToFile(kc, file); err != nil {
		t.Fatal(err)
	}
	return file
}

// followedByInstructor: student 1 follows lesson 1 on plain text (as
// rlab lesson start 1 --text); the instructor reads where they are (the
// report, classroom status and watch), sends them to lesson 2 with
// classroom reset, and sees them leave.
func followedByInstructor(t *testing.T, host, kubeconfig string) {
	admin := kubeFor(t, host)
	cmd := exec.Command(rlabBin, "lesson", "start", "1", "--text", "--shell-interval", "5s", "--backend", "kubeconfig", "--kubeconfig", kubeconfig)
	cmd.Env = newSandboxEnv(t).env
	stdout, stderr := &simtest.Buffer{}, &simtest.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Error(err)
		return
	}
	if err := cmd.Start(); err != nil {
		t.Error(err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			t.Errorf("student 1's rlab lesson start did not exit after q; stdout:\n%s\nstderr:\n%s", stdout, stderr)
		}
	}()
	defer stdin.Close()
	fail := func(format string, args ...any) {
		t.Errorf(format+"\nstdout:\n%s\nstderr:\n%s", append(args, stdout, stderr)...)
	}
	waitOut := func(s string) bool {
		if err := simtest.Poll(t.Context(), 5*time.Minute, func(context.Context) (bool, error) { return strings.Contains(stdout.String(), s), nil }); err != nil {
			fail("student 1's rlab never printed %q: %v", s, err)
			return false
		}
		return true
	}
	var s1 classroom.Report
	reported := func(what string, ok func(r classroom.Report) bool) bool {
		err := simtest.Poll(t.Context(), time.Minute, func(ctx context.Context) (bool, error) {
			reps, err := classroom.Reports(ctx, admin.cfg)
			if err != nil || len(reps) == 0 {
				return false, err
			}
			s1 = reps[0]
			return s1.Student == "s1" && ok(s1), nil
		})
		if err != nil {
			fail("student 1's progress never showed %s: %v; last report %+v", what, err, s1)
			return false
		}
		return true
	}
	if !waitOut("── step 1 of") || !reported("lesson 1 step 1", func(r classroom.Report) bool {
		return r.Running && r.Now != nil && r.Now.Lesson == 1 && r.Now.Step == 1
	}) {
		return
	}
	// Step 1 checks the sandbox's start: it passed as it opened, so moving
	// on records it done by hand. Step 2 waits for an Echo the student did
	// not create: moving on skips it.
	for _, want := range []struct {
		step int
		how  string
	}{{2, "hand"}, {3, "skipped"}} {
		if _, err := io.WriteString(stdin, runner.CmdNext+"\n"); err != nil {
			t.Error(err)
			return
		}
		if !reported(fmt.Sprintf("step %d %s, on step %d", want.step-1, want.how, want.step), func(r classroom.Report) bool {
			return r.Now != nil && r.Now.Step == want.step && len(r.Lessons) == 1 && len(r.Lessons[0].How) >= want.step &&
				r.Lessons[0].How[want.step-2] == want.how
		}) {
			return
		}
	}
	steps := s1.Now.Steps
	status, errOut, code := cli(t, nil, rlabBin, "classroom", "status", "--kubeconfig", host)
	if want := fmt.Sprintf(`(?m)^s1\s+lesson 1 step 3/%d\s+3/%d\s+-`, steps, steps); code != 0 || !matches(want, status) {
		t.Errorf("classroom status (exit %d) has no line %q:\n%s%s", code, want, status, errOut)
	}
	board, errOut, code := cli(t, nil, rlabBin, "classroom", "watch", "--once", "--kubeconfig", host)
	if want := fmt.Sprintf(`(?m)^s1\s+working\s+1 · 3/%d `, steps); code != 0 || !matches(want, board) {
		t.Errorf("classroom watch --once (exit %d) has no row %q:\n%s%s", code, want, board, errOut)
	}
	t.Logf("rlab classroom status:\n%s\nrlab classroom watch --once:\n%s", status, board)
	out, errOut, code := cli(t, nil, rlabBin, "classroom", "reset", "--student", "s1", "--lesson", "2", "--kubeconfig", host)
	if code != 0 || !strings.Contains(out, "asked s1's rlab to start lesson 2 again") {
		t.Errorf("classroom reset: exit %d\n%s%s", code, out, errOut)
	}
	if !waitOut("Bringing the sandbox back to where lesson 2 starts") || !waitOut("Lesson 2:") ||
		!reported("lesson 2 step 1, the reset done", func(r classroom.Report) bool {
			return r.ResetDone != "" && r.Now != nil && r.Now.Lesson == 2 && r.Now.Step == 1
		}) {
		return
	}
	if _, err := io.WriteString(stdin, runner.CmdQuit+"\n"); err != nil {
		t.Error(err)
		return
	}
	reported("rlab stopped", func(r classroom.Report) bool { return !r.Running })
}
