package world

import (
	"github.com/kkloud/rlab/operators/style"

	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/trace"
)

// Snapshot is the model at one instant: one view per watched namespace.
type Snapshot struct{ Namespaces map[string]*NamespaceView }

// Style is style st's namespace, whatever its prefix, nil if not seen. A
// world watches one sandbox's namespaces, so there is at most one.
func (s Snapshot) Style(st style.Style) *NamespaceView {
	if ns := s.Namespaces[st.Namespace()]; ns != nil {
		return ns
	}
	for name, ns := range s.Namespaces {
		if style.FromNamespace(name) == st {
			return ns
		}
	}
	return nil
}

// NamespaceView is one namespace's tree.
type NamespaceView struct {
	Echoes map[string]*EchoView // by Echo name
	// Orphans are the Deployments not shown under an Echo: their owner Echo
	// is not present (e.g. after delete --cascade=orphan), or they have none.
	Orphans []*DeploymentView
	// Lease is the leader Lease: the one named echo.LeaseName, or in a
	// student's operator's namespace whatever Lease it made (it names its
	// own; the first by name if several); nil if none.
	Lease *LeaseView
	// Registry is the data of the ConfigMap echo.RegistryName (Echo name →
	// uid), written by operators run with --finalizer; nil if absent.
	Registry map[string]string
	// ConfigMapEdited is when a ConfigMap of the namespace other than the
	// registry and kube-root-ca.crt was last added, changed or deleted, as
	// the world saw it (a person's act: echo-defaults, say); zero if never.
	ConfigMapEdited time.Time
}

// EchoView is one Echo and what it owns.
type EchoView struct {
	Name, UID, Message string // Message: spec.message
	// Wants is the message its pods should answer: spec.message, or when
	// that is empty the namespace's default (echo.Message: the ConfigMap
	// echo-defaults, or echo.FallbackMessage).
	Wants      string
	Replicas   int32 // spec.replicas
	Generation int64
	Ready      string // status.ready
	// ObservedGeneration is status.observedGeneration: the generation the
	// status is about (0 if the operator writes none).
	ObservedGeneration int64
	// Conditions are status.conditions, type → status ("True").
	Conditions map[string]string
	Deleting   bool
	Finalizers []string
	// Edited is when the world saw the spec change last (or the Echo
	// appear); zero if unchanged since the world started.
	Edited time.Time
	// StatusEdited is when the world saw a status written by hand
	// (kubectl, through the status subresource: the generation stays);
	// zero if none since the world started.
	StatusEdited time.Time
	Deployment   *DeploymentView // echo-<name>, nil if absent
}

// StatusCurrent says whether the Echo's status is about its spec as it is:
// status.observedGeneration equals metadata.generation.
func (e *EchoView) StatusCurrent() bool { return e.ObservedGeneration == e.Generation }

// DeploymentView is one Deployment and the ReplicaSets and Pods it controls.
type DeploymentView struct {
	Name, UID     string
	Replicas      int32  // spec
	ReadyReplicas int32  // status
	Message       string // from the -text= argument
	Owner         string // "Echo/<name>" of the controller ownerRef, "" if none
	// ReplicasOwners are the field managers that own spec.replicas in its
	// managedFields, sorted ("echo-shell"; two appliers of one value share it).
	ReplicasOwners []string
	Deleting       bool
	// Refused is why its pods cannot be made, as the Deployment's
	// ReplicaFailure condition says (a quota exceeded: "pods … is
	// forbidden: exceeded quota: …"); "" while nothing refuses them.
	Refused string
	// ReplicaSets and Pods are owned through the chain Deployment →
	// ReplicaSet → Pod, by controller ownerReference UID.
	ReplicaSets []*ReplicaSetView
	Pods        []*PodView
}

// ReplicaSetView is one ReplicaSet of a Deployment.
type ReplicaSetView struct {
	Name                    string
	Replicas, ReadyReplicas int32
	Deleting                bool
}

// PodView is one Pod of a Deployment.
type PodView struct {
	Name, Phase     string
	Ready, Deleting bool
	Created         time.Time
}

// LeaseView is the leader Lease.
type LeaseView struct {
	Name            string
	Holder          string
	Renewed         time.Time
	DurationSeconds int32
	Transitions     int32
}

// nsModel is what the informers have delivered for one namespace, keyed by
// name (one informer delivers one name's delete before its re-create), plus
// what the derived events need to remember. Objects from informers are shared
// with their caches and never modified.
type nsModel struct {
	name        string
	image       string // the operators' image: any other is drift
	echoes      map[string]*echov1.Echo
	deployments map[string]*appsv1.Deployment
	// replicasOwners are, by Deployment name, the field managers that own
	// its spec.replicas (read from managedFields once per change).
	replicasOwners map[string][]string
	replicaSets    map[string]*appsv1.ReplicaSet
	pods           map[string]*corev1.Pod
	lease          *coordinationv1.Lease
	// leases are every Lease of a namespace whose operator names its own
	// (a student's), by name; nil in a built-in style's namespace.
	leases   map[string]*coordinationv1.Lease
	registry *corev1.ConfigMap
	// defaults is the ConfigMap echo.DefaultsName, nil if absent.
	defaults *corev1.ConfigMap
	// configMapEdited is when a ConfigMap other than the registry and
	// kube-root-ca.crt last changed (see NamespaceView.ConfigMapEdited).
	configMapEdited time.Time
	tracks          map[string]*echoTrack // by Echo name
	// later runs fn on this model after the settle time (see Options.Settle);
	// called with the World's lock held.
	later func(fn func(m *nsModel, now time.Time) []trace.Event)
}

func newNSModel(name, image string) *nsModel {
	return &nsModel{
		name:           name,
		image:          image,
		echoes:         map[string]*echov1.Echo{},
		deployments:    map[string]*appsv1.Deployment{},
		replicasOwners: map[string][]string{},
		replicaSets:    map[string]*appsv1.ReplicaSet{},
		pods:           map[string]*corev1.Pod{},
		tracks:         map[string]*echoTrack{},
		leases:         ownLeases(name),
	}
}

// ownLeases is the map that tracks every Lease of namespace ns if its
// operator is a student's, which names its Lease as it likes; nil for a
// built-in style, whose Lease is echo.LeaseName (others there are not its).
func ownLeases(ns string) map[string]*coordinationv1.Lease {
	if st := style.FromNamespace(ns); st != "" && !st.Traits().Builtin {
		return map[string]*coordinationv1.Lease{}
	}
	return nil
}

func deleting(o metav1.Object) bool { return o.GetDeletionTimestamp() != nil }

// controllerOf names the controller ownerReference, "Kind/name", or "".
func controllerOf(o metav1.Object) string {
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		return ref.Kind + "/" + ref.Name
	}
	return ""
}

// messageOf is the http-echo -text= argument of a pod template.
func messageOf(spec corev1.PodSpec) string {
	for _, c := range spec.Containers {
		for _, a := range c.Args {
			if msg, ok := strings.CutPrefix(a, echo.Arg("")); ok {
				return msg
			}
		}
	}
	return ""
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (m *nsModel) view() *NamespaceView {
	v := &NamespaceView{Echoes: make(map[string]*EchoView, len(m.echoes))}
	owned := m.byController()
	shown := map[string]bool{}
	for name, e := range m.echoes {
		ev := &EchoView{
			Name:       e.Name,
			UID:        string(e.UID),
			Message:    e.Spec.Message,
			Wants:      echo.Message(e.Spec.Message, m.defaults),
			Replicas:   echo.Replicas(e.Spec),
			Generation: e.Generation,
			Ready:      e.Status.Ready,
			Deleting:   deleting(e),
			Finalizers: slices.Clone(e.Finalizers),

			ObservedGeneration: e.Status.ObservedGeneration,
		}
		for _, c := range e.Status.Conditions {
			if ev.Conditions == nil {
				ev.Conditions = make(map[string]string, len(e.Status.Conditions))
			}
			ev.Conditions[c.Type] = string(c.Status)
		}
		if tr := m.tracks[name]; tr != nil {
			ev.Edited, ev.StatusEdited = tr.edited, tr.statusEdited
		}
		if d := m.deployments[echo.DeploymentName(name)]; d != nil {
			ev.Deployment = owned.deploymentView(d)
			ev.Deployment.ReplicasOwners = slices.Clone(m.replicasOwners[d.Name])
			shown[d.Name] = true
		}
		v.Echoes[name] = ev
	}
	for name, d := range m.deployments {
		if !shown[name] {
			dv := owned.deploymentView(d)
			dv.ReplicasOwners = slices.Clone(m.replicasOwners[d.Name])
			v.Orphans = append(v.Orphans, dv)
		}
	}
	slices.SortFunc(v.Orphans, func(a, b *DeploymentView) int { return cmp.Compare(a.Name, b.Name) })
	v.ConfigMapEdited = m.configMapEdited
	if m.registry != nil {
		v.Registry = maps.Clone(m.registry.Data)
		if v.Registry == nil {
			v.Registry = map[string]string{}
		}
	}
	if l := m.lease; l != nil {
		lv := &LeaseView{Name: l.Name, Holder: holderOf(l)}
		if l.Spec.RenewTime != nil {
			lv.Renewed = l.Spec.RenewTime.Time
		}
		if l.Spec.LeaseDurationSeconds != nil {
			lv.DurationSeconds = *l.Spec.LeaseDurationSeconds
		}
		if l.Spec.LeaseTransitions != nil {
			lv.Transitions = *l.Spec.LeaseTransitions
		}
		v.Lease = lv
	}
	return v
}

// controlled indexes a namespace's ReplicaSets and Pods by their controller's
// UID, once per view: a view then costs one pass over the objects, not one
// per Deployment (500 Echoes make 500 Deployments, ReplicaSets and Pods).
type controlled struct {
	replicaSets map[types.UID][]*appsv1.ReplicaSet
	pods        map[types.UID][]*corev1.Pod
}

func (m *nsModel) byController() controlled {
	c := controlled{replicaSets: make(map[types.UID][]*appsv1.ReplicaSet, len(m.replicaSets)),
		pods: make(map[types.UID][]*corev1.Pod, len(m.replicaSets))}
	for _, rs := range m.replicaSets {
		if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
			c.replicaSets[ref.UID] = append(c.replicaSets[ref.UID], rs)
		}
	}
	for _, p := range m.pods {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
			c.pods[ref.UID] = append(c.pods[ref.UID], p)
		}
	}
	return c
}

func (c controlled) deploymentView(d *appsv1.Deployment) *DeploymentView {
	dv := &DeploymentView{
		Name:          d.Name,
		UID:           string(d.UID),
		Replicas:      1, // the apiserver's default
		ReadyReplicas: d.Status.ReadyReplicas,
		Message:       messageOf(d.Spec.Template.Spec),
		Owner:         controllerOf(d),
		Deleting:      deleting(d),
	}
	if d.Spec.Replicas != nil {
		dv.Replicas = *d.Spec.Replicas
	}
	for _, cond := range d.Status.Conditions {
		if cond.Type == appsv1.DeploymentReplicaFailure && cond.Status == corev1.ConditionTrue {
			dv.Refused = cond.Message
		}
	}
	for _, rs := range c.replicaSets[d.UID] {
		rv := &ReplicaSetView{Name: rs.Name, ReadyReplicas: rs.Status.ReadyReplicas, Deleting: deleting(rs), Replicas: 1}
		if rs.Spec.Replicas != nil {
			rv.Replicas = *rs.Spec.Replicas
		}
		dv.ReplicaSets = append(dv.ReplicaSets, rv)
		for _, p := range c.pods[rs.UID] {
			dv.Pods = append(dv.Pods, &PodView{
				Name:     p.Name,
				Phase:    string(p.Status.Phase),
				Ready:    podReady(p),
				Deleting: deleting(p),
				Created:  p.CreationTimestamp.Time,
			})
		}
	}
	slices.SortFunc(dv.ReplicaSets, func(a, b *ReplicaSetView) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(dv.Pods, func(a, b *PodView) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Name, b.Name))
	})
	return dv
}

func holderOf(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
