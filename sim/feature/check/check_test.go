package check

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/sandbox"
)

// TestBeyondCourse: the local reading of the course's Role agrees with the
// Role the sandbox grants (sandbox.CourseRules), verb by verb.
func TestBeyondCourse(t *testing.T) {
	allowed := map[string]bool{}
	for _, r := range sandbox.CourseRules() {
		if len(r.ResourceNames) > 0 {
			continue // for those objects alone: below
		}
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				allowed[v+" "+res] = true
			}
		}
	}
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	resources := []string{"echoes", "echoes/status", "deployments", "deployments/scale", "events", "leases", "pods", "secrets", "namespaces", "configmaps"}
	for _, res := range resources {
		for _, v := range verbs {
			q := Request{Verb: v, Resource: res}
			if got, want := beyondCourse(q), !allowed[q.Key()]; got != want {
				t.Errorf("beyondCourse(%s) = %v, want %v", q.Key(), got, want)
			}
		}
	}
	// The registry a finalizer keeps may be written, no other ConfigMap.
	for _, tt := range []struct {
		q      Request
		beyond bool
	}{
		{Request{Verb: "update", Resource: "configmaps", Object: "ConfigMap/echo-registry"}, false},
		{Request{Verb: "patch", Resource: "configmaps", Object: "ConfigMap/echo-registry"}, false},
		{Request{Verb: "update", Resource: "configmaps", Object: "ConfigMap/echo-defaults"}, true},
		{Request{Verb: "delete", Resource: "configmaps", Object: "ConfigMap/echo-registry"}, true},
		{Request{Verb: "create", Resource: "configmaps", Object: "ConfigMap/echo-registry"}, false},
	} {
		if got := beyondCourse(tt.q); got != tt.beyond {
			t.Errorf("beyondCourse(%s %s) = %v, want %v", tt.q.Key(), tt.q.Object, got, tt.beyond)
		}
	}
	for _, q := range []Request{{Verb: "get", Resource: "discovery"}, {Verb: "get", Resource: "/version"}, {Verb: "create", Resource: "selfsubjectrulesreviews"}} {
		if beyondCourse(q) {
			t.Errorf("%s is open to every user, not beyond the Role", q.Key())
		}
	}
	// Every rule is namespaced and names no ClusterRole-only resource.
	for _, r := range sandbox.CourseRules() {
		if slices.Contains(r.Verbs, rbacv1.VerbAll) || slices.Contains(r.Resources, rbacv1.ResourceAll) {
			t.Errorf("the course's Role has a wildcard: %+v", r)
		}
	}
}

func TestRequestKinds(t *testing.T) {
	tests := []struct {
		q                   Request
		write, housekeeping bool
	}{
		{Request{Verb: "patch", Resource: "deployments"}, true, false},
		{Request{Verb: "update", Resource: "echoes/status"}, true, false},
		{Request{Verb: "delete", Resource: "deployments"}, true, false},
		{Request{Verb: "update", Resource: "leases"}, true, true},
		{Request{Verb: "create", Resource: "events"}, true, true},
		{Request{Verb: "get", Resource: "deployments"}, false, false},
		{Request{Verb: "watch", Resource: "echoes"}, false, false},
	}
	for _, tt := range tests {
		if tt.q.Write() != tt.write || tt.q.Housekeeping() != tt.housekeeping {
			t.Errorf("%s: write %v housekeeping %v, want %v %v", tt.q.Key(), tt.q.Write(), tt.q.Housekeeping(), tt.write, tt.housekeeping)
		}
	}
}

// TestDenied: denials are counted by verb and resource, most first, and
// one across all namespaces says so; where discovery failed, keys are plain.
func TestDenied(t *testing.T) {
	const ns = "echo-mine"
	qs := []Request{
		{Verb: "list", Resource: "pods", Namespace: ns, Code: 403},
		{Verb: "list", Resource: "pods", Namespace: ns, Code: 403},
		{Verb: "get", Resource: "secrets", Namespace: ns, Code: 403},
		{Verb: "get", Resource: "echoes", Namespace: ns, Code: 200},
		{Verb: "get", Resource: "deployments", Namespace: ns, Code: 404},
		{Verb: "list", Resource: "echoes", Code: 403},     // across all namespaces
		{Verb: "list", Resource: "namespaces", Code: 403}, // cluster-scoped: no namespace to be across
	}
	tests := []struct {
		name   string
		scopes *scopes
		want   []string
	}{
		{"scopes known", knownScopes(), []string{"list pods ×2", "get secrets ×1", "list echoes (all namespaces) ×1", "list namespaces ×1"}},
		{"discovery failed", &scopes{load: func() (map[string]bool, error) { return nil, errors.New("no discovery") }},
			[]string{"list pods ×2", "get secrets ×1", "list echoes ×1", "list namespaces ×1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &run{scopes: tt.scopes}
			if got := r.denied(qs); !slices.Equal(got, tt.want) {
				t.Fatalf("denied = %q, want %q", got, tt.want)
			}
		})
	}
}

// knownScopes are a cluster's namespaced resources, as discovery says.
func knownScopes() *scopes {
	m := map[string]bool{"echoes": true, "deployments": true, "pods": true, "secrets": true, "configmaps": true,
		"leases": true, "events": true, "namespaces": false, "tokenreviews": false, "subjectaccessreviews": false}
	return &scopes{load: func() (map[string]bool, error) { return m, nil }}
}

// TestLeader: writing that passes between replicas only at a restart is
// one leader at a time; replicas that take turns are not.
func TestLeader(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(0, 0).Add(time.Duration(s) * time.Second) }
	w := func(s int, replica string) Request {
		return Request{Time: at(s), Replica: replica, Verb: "patch", Resource: "deployments"}
	}
	tests := []struct {
		name   string
		qs     []Request
		pass   bool
		reason string
	}{
		{"one leader", []Request{w(1, "a"), w(2, "a"), w(3, "a")}, true, "writes: a 3"},
		{"failover and back", []Request{w(1, "a"), w(2, "b"), w(3, "b"), w(4, "a")}, true, "passed between replicas 2 times"},
		{"lease renewals do not count", []Request{w(1, "a"), {Time: at(2), Replica: "b", Verb: "update", Resource: "leases"}, w(3, "a")}, true, "writes: a 2"},
		{"two writers", []Request{w(1, "a"), w(1, "b"), w(2, "a"), w(2, "b"), w(3, "a")}, false, "took turns writing 4 times"},
		{"nobody wrote", nil, false, "no replica wrote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := logOf(t, tt.qs)
			r := &run{rec: rec, replicas: []string{"a", "b"}}
			pass, reason, err := r.leader(t.Context())
			if err != nil || pass != tt.pass || !strings.Contains(reason, tt.reason) {
				t.Fatalf("leader() = %v, %q, %v; want %v and %q", pass, reason, err, tt.pass, tt.reason)
			}
		})
	}
}

// logOf is a RequestLog of operator "mine" that saw qs (from replica "a"
// where they name none), and another operator's copies of them, which it
// must not count.
func logOf(t *testing.T, qs []Request) *RequestLog {
	b := bus.New()
	rec := NewRequestLog(b, "mine")
	t.Cleanup(rec.Close)
	for _, q := range qs {
		if q.Replica == "" {
			q.Replica = "a"
		}
		b.Publish(q.event("mine"))
		b.Publish(q.event("other"))
	}
	return rec
}

// event is q as its proxy publishes it: for tests of what reads requests.
func (q Request) event(st string) trace.Event {
	return trace.Event{Time: q.Time, Source: "proxy/" + st + "/" + q.Replica, Kind: trace.APIRequest, Namespace: q.Namespace, Object: q.Object,
		Payload: trace.Request{Verb: q.Verb, Resource: q.Resource, Code: q.Code}}
}

// imageTarget is a Target with a backend and an image alone.
type imageTarget struct {
	Target
	b backend.Backend
}

func (t imageTarget) Backend() backend.Backend { return t.b }
func (t imageTarget) Image() string            { return "hashicorp/http-echo:0.2.3" }

// TestImage: another image than $ECHO_IMAGE fails only where the nodes
// cannot run it (kind's offline node); elsewhere it is a note that says what
// it means.
func TestImage(t *testing.T) {
	d := func(image string) *appsv1.Deployment {
		return &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Image: image, Args: []string{"-text=hi"}}}}}}}
	}
	tests := []struct {
		b             backend.Backend
		image         string
		problem, note string // "" for none
	}{
		{backend.Kind, "hashicorp/http-echo:0.2.3", "", ""},
		{backend.Kind, "hashicorp/http-echo", `container image is "hashicorp/http-echo", want "hashicorp/http-echo:0.2.3"`, ""},
		{backend.Envtest, "hashicorp/http-echo:0.2.3", "", ""},
		{backend.Envtest, "hashicorp/http-echo", "", "fine here, where the nodes run no containers; on kind's offline node only hashicorp/http-echo:0.2.3 runs; an image without a tag is :latest"},
		{backend.Envtest, "registry.local:5000/echo:1.0", "", "fine here"},
		{backend.Kubeconfig, "hashicorp/http-echo:latest", "", "rlab cannot tell whether this cluster's nodes can pull it; an image without a tag is :latest"},
	}
	for _, tt := range tests {
		t.Run(tt.b.Name+" "+tt.image, func(t *testing.T) {
			r := &run{sb: imageTarget{b: tt.b}}
			if got := r.templateProblem(d(tt.image), "hi"); (tt.problem == "") != (got == "") || !strings.Contains(got, tt.problem) {
				t.Fatalf("templateProblem = %q, want %q", got, tt.problem)
			}
			if tt.problem != "" {
				return // the note is a passing check's
			}
			got := r.imageNote(tt.image)
			if (tt.note == "") != (got == "") || !strings.Contains(got, tt.note) {
				t.Fatalf("imageNote = %q, want %q", got, tt.note)
			}
			if strings.Contains(tt.image, "5000") && strings.Contains(got, ":latest") {
				t.Fatalf("imageNote = %q: a registry's port is not a tag", got)
			}
		})
	}
}
