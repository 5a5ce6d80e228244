package ship

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
)

// module writes a Go module whose ./cmd is main.
func module(t *testing.T, main string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"go.mod": "module example.com/op\n\ngo 1.24\n", "cmd/main.go": main}
	for f, body := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestBuildImage(t *testing.T) {
	dir := module(t, "package main\n\nfunc main() { println(\"manager\") }\n")
	out := filepath.Join(t.TempDir(), "image.tar")
	img, err := BuildImage(context.Background(), ImageOptions{Dir: dir, Repository: "rlab.local/echo-mine-operator", Arch: "arm64", Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(img.Ref, "rlab.local/echo-mine-operator:") || len(img.Ref) != len("rlab.local/echo-mine-operator:")+12 {
		t.Fatalf("ref %q: want the repository and 12 hex digits of the binary's digest", img.Ref)
	}
	tag, err := name.NewTag(img.Ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatalf("the archive does not hold %s: %v", img.Ref, err)
	}
	cf, err := got.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "arm64" || cf.Config.User != NonRoot ||
		len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != Binary {
		t.Fatalf("config: os %s arch %s user %q entrypoint %q", cf.OS, cf.Architecture, cf.Config.User, cf.Config.Entrypoint)
	}
	layers, err := got.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	modes := map[string]int64{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		modes[h.Name] = h.Mode
	}
	if modes["manager"] != 0o755 || modes["tmp/"] != 0o1777 || len(modes) != 2 {
		t.Fatalf("layer entries %v: want manager 0755 and tmp/ 01777", modes)
	}

	// The same source is the same image; an edit is another.
	again, err := BuildImage(context.Background(), ImageOptions{Dir: dir, Repository: "rlab.local/echo-mine-operator", Arch: "arm64", Out: out})
	if err != nil || again.Ref != img.Ref {
		t.Fatalf("rebuilt: %v, %v; want %s again", again, err, img.Ref)
	}
}

func TestBuildImageQuotesTheCompiler(t *testing.T) {
	dir := module(t, "package main\n\nfunc main() { undefinedThing() }\n")
	out := filepath.Join(t.TempDir(), "image.tar")
	_, err := BuildImage(context.Background(), ImageOptions{Dir: dir, Repository: "rlab.local/x", Out: out})
	if err == nil || !strings.Contains(err.Error(), "undefined: undefinedThing") {
		t.Fatalf("err = %v; want the compiler's error", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("an archive was left: %v", err)
	}
}

func TestDeployment(t *testing.T) {
	tests := []struct {
		name     string
		opts     DeployOptions
		wantHost bool
		watch    string
	}{
		{"kind's node address", DeployOptions{Namespace: "echo-mine", Name: "op", ServiceAccount: "sa", Image: "rlab.local/op:1", Replicas: 2,
			Args: []string{"--leader-elect"}, APIServerHost: "172.18.0.2", APIServerPort: 6443, EchoImage: "echo:v1"}, true, "echo-mine"},
		{"the Service", DeployOptions{Namespace: "ns", Name: "op", ServiceAccount: "sa", Image: "img:1", Replicas: 1, WatchNamespace: "other"}, false, "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Deployment(tt.opts)
			pod := d.Spec.Template.Spec
			c := pod.Containers[0]
			if *d.Spec.Replicas != tt.opts.Replicas || pod.ServiceAccountName != "sa" || c.Image != tt.opts.Image ||
				c.ImagePullPolicy != corev1.PullNever || c.Command[0] != Binary || strings.Join(c.Args, " ") != strings.Join(tt.opts.Args, " ") {
				t.Fatalf("deployment %+v", d.Spec)
			}
			if d.Spec.Selector.MatchLabels[LabelApp] != "op" || d.Spec.Template.Labels[LabelApp] != "op" {
				t.Fatalf("selector %v, pod labels %v", d.Spec.Selector, d.Spec.Template.Labels)
			}
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
				if e.ValueFrom != nil {
					env[e.Name] = e.ValueFrom.FieldRef.FieldPath
				}
			}
			if env[envWatchNamespace] != tt.watch || env[envPodName] != "metadata.name" || env[envPodNamespace] != "metadata.namespace" {
				t.Fatalf("env %v", env)
			}
			if _, ok := env["KUBERNETES_SERVICE_HOST"]; ok != tt.wantHost {
				t.Fatalf("KUBERNETES_SERVICE_HOST set: %v, want %v (%v)", ok, tt.wantHost, env)
			}
			if sc := c.SecurityContext; *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || !*pod.SecurityContext.RunAsNonRoot {
				t.Fatalf("security context %+v", sc)
			}
		})
	}
}

func pod(name, ip string, restarts int32, running bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "echo-mine", Labels: map[string]string{LabelApp: "op"},
		CreationTimestamp: metav1.Now()}}
	p.Status.PodIP = ip
	cs := corev1.ContainerStatus{Name: "manager", RestartCount: restarts}
	if running {
		cs.State.Running = &corev1.ContainerStateRunning{}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	return p
}

// slots follows no real pods: update and gone are called as the informer
// would.
func slots(t *testing.T) *Pods {
	t.Helper()
	p, err := FollowPods(context.Background(), fake.NewClientset(), "echo-mine", "op", style.Style("mine"), 2, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestPodSlots(t *testing.T) {
	p := slots(t)
	p.update(pod("op-1", "10.0.0.1", 0, false))
	p.update(pod("op-2", "10.0.0.2", 0, false))
	if got := p.Replicas(); strings.Join(got, ",") != "a,b" {
		t.Fatalf("replicas %v", got)
	}
	// op-1 deleted (a kill), its successor takes slot a: a restart of a.
	p.gone("op-1")
	p.update(pod("op-3", "10.0.0.3", 0, true))
	// op-2's container restarted twice.
	p.update(pod("op-2", "10.0.0.2", 2, true))
	st := p.Statuses()
	if st[0].Replica != "a" || st[0].Restarts != 1 || !st[0].Running || st[1].Restarts != 2 || !st[1].Running {
		t.Fatalf("statuses %+v", st)
	}
	for ip, want := range map[string]string{"10.0.0.1": "a", "10.0.0.3": "a", "10.0.0.2": "b"} {
		if got := p.SlotOf(ip); got != want {
			t.Errorf("SlotOf(%s) = %q, want %q", ip, got, want)
		}
	}
	// A third pod while both slots are held (a surge) gets a slot of its own.
	p.update(pod("op-4", "10.0.0.4", 0, false))
	if got := p.Replicas(); len(got) != 3 {
		t.Fatalf("replicas %v", got)
	}
}

func TestFollowAudit(t *testing.T) {
	p := slots(t)
	p.update(pod("op-1", "10.0.0.1", 0, true))
	user := "system:serviceaccount:echo-mine:echo-mine-operator"
	lines := strings.Join([]string{
		`{"stage":"ResponseComplete","verb":"update","user":{"username":"` + user + `"},"sourceIPs":["10.0.0.1"],"objectRef":{"resource":"echoes","namespace":"echo-mine","name":"hello","subresource":"status"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-29T10:00:00.000000Z","stageTimestamp":"2026-11-29T10:00:00.004000Z"}`,
		`{"stage":"ResponseComplete","verb":"get","user":{"username":"system:serviceaccount:other:x"},"sourceIPs":["10.0.0.1"],"requestURI":"/api"}`,
		`{"stage":"ResponseStarted","verb":"watch","user":{"username":"` + user + `"},"sourceIPs":["10.0.0.1"],"objectRef":{"resource":"deployments"}}`,
		`not json`,
		`{"stage":"ResponseComplete","verb":"get","user":{"username":"` + user + `"},"sourceIPs":["10.0.0.1"],"requestURI":"/apis/apps/v1?timeout=32s","responseStatus":{"code":200},"stageTimestamp":"2026-11-29T10:00:01Z"}`,
		`{"stage":"ResponseComplete","verb":"list","user":{"username":"` + user + `"},"sourceIPs":["172.18.0.1"],"objectRef":{"resource":"echoes"},"responseStatus":{"code":200}}`,
	}, "\n")
	var got []trace.Event
	if err := p.FollowAudit(strings.NewReader(lines), user, func(e trace.Event) { got = append(got, e) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("events %+v; want the two completed requests of %s from its pod", got, user)
	}
	q, _ := got[0].Request()
	if got[0].Source != "audit/mine/a" || q.Verb != "update" || q.Resource != "echoes/status" || got[0].Object != "Echo/hello" ||
		got[0].Namespace != "echo-mine" || q.Code != 200 || q.LatencyMS != 4 || !got[0].Time.Equal(time.Date(2026, 11, 29, 10, 0, 0, 4e6, time.UTC)) {
		t.Fatalf("first: %+v %+v", got[0], q)
	}
	q, _ = got[1].Request()
	if got[1].Source != "audit/mine/a" || q.Resource != "discovery" || q.Verb != "get" {
		t.Fatalf("second: %+v %+v; want discovery (the request from elsewhere is not the pod's)", got[1], q)
	}
}
