// Package optest holds what the two Go operators' tests share: the same
// Echoes and Deployments, the same reconcile cases checked the same way
// whichever operator runs them over its fake clients, and the tracer
// fixture. Only tests import it.
package optest

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
)

// Image is the one an operator under test is given: not the default, so
// that a Deployment carrying the default is visibly someone else's.
const Image = "rlab.local/echo-server:v1"

// World is what one reconcile sees: the objects in the operator's caches
// and in its fake apiserver, which serves the writes.
type World struct {
	Echoes      []*echov1.Echo
	Deployments []*appsv1.Deployment
	// StatusConflicts is how many status updates answer 409 before one
	// succeeds, as if someone else wrote the Echo first.
	StatusConflicts int
	// Defaults is the namespace's echo-defaults ConfigMap, nil for none.
	Defaults *corev1.ConfigMap
}

// Operator is one Go operator built over a World's fake clients.
type Operator interface {
	// Reconcile reconciles the Echo name once.
	Reconcile(name string) error
	// Calls lists what the operator asked of the apiserver, as
	// "verb Kind[/subresource]": its writes, and the reads that bypass its
	// cache.
	Calls() []string
	// Deployment and Status read what the fake apiserver stores, unrecorded.
	Deployment(name string) *appsv1.Deployment
	Status(name string) echov1.EchoStatus
	// Events are the Events recorded, "Type Reason message".
	Events() <-chan string
	// Mapped is what the operator's map function queues for a change of
	// ConfigMap cm: "namespace/name" keys of Echoes.
	Mapped(cm *corev1.ConfigMap) []string
}

// Harness runs the shared cases against one operator style.
type Harness struct {
	Style style.Style
	// New builds the operator over w.
	New func(t *testing.T, w World) Operator
}

// Run runs every shared case, each as a subtest named after its method.
func (h Harness) Run(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"CreatesDeployment", h.CreatesDeployment},
		{"NotControlledByUs", h.NotControlledByUs},
		{"RepairsDrift", h.RepairsDrift},
		{"InSyncWritesNothing", h.InSyncWritesNothing},
		{"StatusConflictRetried", h.StatusConflictRetried},
		{"DefaultMessage", h.DefaultMessage},
		{"DefaultsChangeQueuesEveryEcho", h.DefaultsChangeQueuesEveryEcho},
	} {
		t.Run(c.name, c.run)
	}
}

// Echo is the Echo name of the style's namespace as its cache holds it,
// with status.ready already written (and nothing else of the status).
func (h Harness) Echo(name string, replicas int32, ready string) *echov1.Echo {
	e := echov1.NewEcho(h.Style.Namespace(), name, "hi", replicas)
	e.UID, e.ResourceVersion, e.Generation = types.UID("uid-"+name), "1", 1
	e.Status.Ready = ready
	return e
}

// written is when the status of an Echo in sync was written.
var written = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// OwnedDeployment is what the operator would have created for e, as the
// apiserver stores it, rolled out by its controller, with readyReplicas.
func (h Harness) OwnedDeployment(e *echov1.Echo, ready int32) *appsv1.Deployment {
	d := echo.DesiredDeployment(e, nil, h.Style.ManagedBy(), Image)
	d.ResourceVersion, d.Generation = "1", 1
	// The apiserver's: controller-runtime's CreateOrUpdate tells a new
	// Deployment by its absence, and the fakes leave it empty.
	d.CreationTimestamp = metav1.NewTime(written)
	want := echo.Replicas(e.Spec)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: want, UpdatedReplicas: want, ReadyReplicas: ready}
	return d
}

// wantStatus checks the status the operator wrote for e (at generation 1)
// with its Deployment ready replicas of replicas: status.ready, the
// generation it observed, and both conditions.
func wantStatus(t *testing.T, got echov1.EchoStatus, ready string, readyCond, progressing metav1.ConditionStatus) {
	t.Helper()
	if got.Ready != ready || got.ObservedGeneration != 1 {
		t.Errorf("status.ready = %q observedGeneration %d, want %q and 1", got.Ready, got.ObservedGeneration, ready)
	}
	for typ, want := range map[string]metav1.ConditionStatus{echo.ConditionReady: readyCond, echo.ConditionProgressing: progressing} {
		if c := meta.FindStatusCondition(got.Conditions, typ); c == nil || c.Status != want || c.ObservedGeneration != 1 {
			t.Errorf("condition %s = %+v, want %s at generation 1", typ, c, want)
		}
	}
}

// CreatesDeployment: an Echo with no Deployment gets one, as asked, owned
// by it, and its status says none is ready yet.
func (h Harness) CreatesDeployment(t *testing.T) {
	e := h.Echo("hello", 2, "")
	op := h.New(t, World{Echoes: []*echov1.Echo{e}})

	if err := op.Reconcile("hello"); err != nil {
		t.Fatal(err)
	}
	if got, want := op.Calls(), []string{"create Deployment", "update Echo/status"}; !slices.Equal(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	d := op.Deployment("echo-hello")
	if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.Containers[0].Args[0] != "-text=hi" {
		t.Errorf("created %d replicas with args %v, want 2 and -text=hi", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Args)
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != Image {
		t.Errorf("image = %q, want the configured %q", got, Image)
	}
	if ref := metav1.GetControllerOf(d); ref == nil || ref.UID != e.UID || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("ownerReferences = %+v, want a blocking controller reference to uid %s", d.OwnerReferences, e.UID)
	}
	// Just created: no pod yet, and its controller has not seen it.
	wantStatus(t, op.Status("hello"), "0/2", metav1.ConditionFalse, metav1.ConditionTrue)
}

// NotControlledByUs: a Deployment of the Echo's name that nobody, or
// another Echo, controls is left alone; the reconcile fails and a Warning
// on the Echo says why.
func (h Harness) NotControlledByUs(t *testing.T) {
	for _, tt := range []struct {
		name  string
		owner *echov1.Echo // nil: a Deployment nobody controls
	}{
		{"no owner", nil},
		{"another Echo", h.Echo("other", 1, "")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := h.Echo("hello", 2, "")
			theirs := h.OwnedDeployment(e, 0)
			theirs.OwnerReferences = nil
			theirs.Spec.Replicas = ptr.To[int32](7)
			if tt.owner != nil {
				theirs.OwnerReferences = []metav1.OwnerReference{echo.OwnerReference(tt.owner.Name, tt.owner.UID)}
			}
			op := h.New(t, World{Echoes: []*echov1.Echo{e}, Deployments: []*appsv1.Deployment{theirs}})

			err := op.Reconcile("hello")
			if err == nil || !strings.Contains(err.Error(), "not controlled by Echo") {
				t.Fatalf("reconcile error = %v, want it to say the Deployment is not controlled by the Echo", err)
			}
			if got := op.Calls(); len(got) != 0 {
				t.Errorf("calls = %v, want none: the Deployment is not ours to change", got)
			}
			if d := op.Deployment("echo-hello"); *d.Spec.Replicas != 7 || len(d.OwnerReferences) != len(theirs.OwnerReferences) {
				t.Errorf("Deployment changed: replicas %d, owners %+v", *d.Spec.Replicas, d.OwnerReferences)
			}
			select {
			case ev := <-op.Events():
				if !strings.HasPrefix(ev, "Warning "+echo.ReasonNotControlled+" ") {
					t.Errorf("event %q, want a Warning %s", ev, echo.ReasonNotControlled)
				}
			default:
				t.Error("no Event recorded on the Echo")
			}
		})
	}
}

// RepairsDrift: what a hand edit changed in the fields the operator owns
// is put back, and the status follows the Deployment.
func (h Harness) RepairsDrift(t *testing.T) {
	for _, tt := range []struct {
		name     string
		edit     func(d *appsv1.Deployment) // by hand
		repaired func(d *appsv1.Deployment) bool
	}{
		{"scaled by hand",
			func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](1) },
			func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 3 }},
		{"image changed by hand",
			func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = echo.DefaultImage },
			func(d *appsv1.Deployment) bool { return d.Spec.Template.Spec.Containers[0].Image == Image }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := h.Echo("hello", 3, "1/1")
			d := h.OwnedDeployment(e, 1)
			tt.edit(d)
			op := h.New(t, World{Echoes: []*echov1.Echo{e}, Deployments: []*appsv1.Deployment{d}})

			if err := op.Reconcile("hello"); err != nil {
				t.Fatal(err)
			}
			if got, want := op.Calls(), []string{"update Deployment", "update Echo/status"}; !slices.Equal(got, want) {
				t.Fatalf("calls = %v, want %v", got, want)
			}
			if got := op.Deployment("echo-hello"); !tt.repaired(got) {
				t.Errorf("not repaired: replicas %d, image %q", *got.Spec.Replicas, got.Spec.Template.Spec.Containers[0].Image)
			}
			if got := op.Status("hello").Ready; got != "1/3" {
				t.Errorf("status.ready = %q, want 1/3", got)
			}
		})
	}
}

// InSyncWritesNothing: an Echo whose Deployment and status are as asked
// costs no request, however long ago its status was written; one whose
// status.ready is right but whose status is about an older generation gets
// its status written.
func (h Harness) InSyncWritesNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		observed int64
		want     []string
	}{
		{"current", 1, nil},
		{"older generation", 0, []string{"update Echo/status"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := h.Echo("hello", 2, "")
			d := h.OwnedDeployment(e, 2)
			e.Status = echo.Status(e, d, nil, written)
			e.Status.ObservedGeneration = tc.observed
			op := h.New(t, World{Echoes: []*echov1.Echo{e}, Deployments: []*appsv1.Deployment{d}})

			if err := op.Reconcile("hello"); err != nil {
				t.Fatal(err)
			}
			if got := op.Calls(); !slices.Equal(got, tc.want) {
				t.Errorf("calls = %v, want %v", got, tc.want)
			}
			got := op.Status("hello")
			wantStatus(t, got, "2/2", metav1.ConditionTrue, metav1.ConditionFalse)
			for _, c := range got.Conditions {
				if !c.LastTransitionTime.Time.Equal(written) {
					t.Errorf("%s lastTransitionTime %s, want %s kept: its status did not change", c.Type, c.LastTransitionTime, written)
				}
			}
		})
	}
}

// StatusConflictRetried: a 409 on the status write is retried on the Echo
// read from the apiserver, not from the cache that may still hold the
// version that conflicted.
func (h Harness) StatusConflictRetried(t *testing.T) {
	e := h.Echo("hello", 2, "")
	op := h.New(t, World{Echoes: []*echov1.Echo{e}, Deployments: []*appsv1.Deployment{h.OwnedDeployment(e, 2)},
		StatusConflicts: 1})

	if err := op.Reconcile("hello"); err != nil {
		t.Fatal(err)
	}
	if got, want := op.Calls(), []string{"update Echo/status", "get Echo", "update Echo/status"}; !slices.Equal(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	wantStatus(t, op.Status("hello"), "2/2", metav1.ConditionTrue, metav1.ConditionFalse)
}

// Defaults is the style's echo-defaults ConfigMap holding message.
func (h Harness) Defaults(message string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: echo.DefaultsName, Namespace: h.Style.Namespace(), ResourceVersion: "1"},
		Data:       map[string]string{echo.DefaultsKey: message},
	}
}

// DefaultMessage: an Echo with an empty message answers the message of
// echo-defaults, or echo.FallbackMessage when there is no such ConfigMap;
// an Echo with a message of its own keeps it.
func (h Harness) DefaultMessage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		message  string
		defaults *corev1.ConfigMap
		want     string
	}{
		{"from echo-defaults", "", h.Defaults("from the defaults"), "from the defaults"},
		{"no echo-defaults", "", nil, echo.FallbackMessage},
		{"own message", "hi", h.Defaults("from the defaults"), "hi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := h.Echo("blank", 1, "")
			e.Spec.Message = tc.message
			op := h.New(t, World{Echoes: []*echov1.Echo{e}, Defaults: tc.defaults})

			if err := op.Reconcile("blank"); err != nil {
				t.Fatal(err)
			}
			if got, want := op.Calls(), []string{"create Deployment", "update Echo/status"}; !slices.Equal(got, want) {
				t.Fatalf("calls = %v, want %v: echo-defaults is read from the cache", got, want)
			}
			if got := op.Deployment("echo-blank").Spec.Template.Spec.Containers[0].Args; !slices.Equal(got, []string{echo.Arg(tc.want)}) {
				t.Errorf("args = %v, want [%s]", got, echo.Arg(tc.want))
			}
		})
	}
}

// DefaultsChangeQueuesEveryEcho: a change of echo-defaults queues every Echo
// of the namespace, with a message of its own or not; the reconcile of one
// with an empty message then updates its Deployment to the new default.
func (h Harness) DefaultsChangeQueuesEveryEcho(t *testing.T) {
	blank, hello := h.Echo("blank", 1, "1/1"), h.Echo("hello", 1, "1/1")
	blank.Spec.Message = ""
	old := blank.DeepCopy()
	old.Spec.Message = "old default"
	d := h.OwnedDeployment(old, 1)
	d.Name = echo.DeploymentName("blank")
	hd := h.OwnedDeployment(hello, 1)
	hello.Status = echo.Status(hello, hd, nil, written) // in sync
	defaults := h.Defaults("new default")
	op := h.New(t, World{Echoes: []*echov1.Echo{hello, blank}, Deployments: []*appsv1.Deployment{d, hd}, Defaults: defaults})

	ns := h.Style.Namespace()
	if got, want := op.Mapped(defaults), []string{ns + "/blank", ns + "/hello"}; !slices.Equal(got, want) {
		t.Errorf("a change of %s queues %v, want %v: every Echo of the namespace", echo.DefaultsName, got, want)
	}
	if err := op.Reconcile("blank"); err != nil {
		t.Fatal(err)
	}
	if got := op.Deployment("echo-blank").Spec.Template.Spec.Containers[0].Args; !slices.Equal(got, []string{echo.Arg("new default")}) {
		t.Errorf("args = %v, want [%s]", got, echo.Arg("new default"))
	}
	if err := op.Reconcile("hello"); err != nil {
		t.Fatal(err)
	}
	if got, want := op.Calls(), []string{"update Deployment", "update Echo/status"}; !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v: hello, with a message of its own, needs nothing", got, want)
	}
}
