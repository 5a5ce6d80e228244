package world

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
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

// echoTrack is what the derived events remember about one Echo.
type echoTrack struct {
	uid types.UID
	gen int64 // the generation last seen
	// matchedGen is the Echo generation its Deployment last matched; 0 if it
	// never did. Drift is a mismatch while the Echo is still at matchedGen;
	// a mismatch after an edit is the operator not having caught up yet.
	matchedGen int64
	// deleting is when the Echo was first seen with a deletionTimestamp.
	deleting time.Time
	// edited is when the world saw the spec change last (or the Echo
	// appear); zero for what the initial list found.
	edited time.Time
	// statusByHand is the time of the newest status write by kubectl
	// (its managedFields entry for the status subresource), and
	// statusEdited when the world saw it: a person's status edit, which
	// keeps the generation.
	statusByHand time.Time
	statusEdited time.Time
	drift        *drift    // a drift seen and not yet repaired
	converge     *converge // an edit (or a creation) not yet converged
}

// drift is a mismatch of the Deployment while the Echo had not changed.
//
// The Echo and its Deployment come from separate watches, so an Echo edit
// or deletion can reach the World after the Deployment change it caused
// (seen: the garbage collector's orphaning 30 ms before the Echo's deletion
// timestamp, under load). A drift is therefore confirmed, and published, only
// once the Echo has stayed unchanged for the settle time; a repair within that
// time is published with it.
type drift struct {
	what      string // trace.DriftReplicas, DriftMessage, DriftImage, DriftOwner, DriftDeleted
	since     time.Time
	gen       int64 // the Echo's generation when it was seen
	confirmed bool
	repaired  time.Time // zero until the Deployment matches again
}

type converge struct {
	since   time.Time
	created bool // from the Echo's creation, not an edit
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (m *nsModel) event(now time.Time, kind trace.Kind, object string, p trace.Payload) trace.Event {
	return trace.Event{Time: now, Source: Source, Kind: kind, Namespace: m.name, Object: object, Payload: p}
}

func (m *nsModel) upsertEcho(e *echov1.Echo, initial bool, now time.Time) []trace.Event {
	m.echoes[e.Name] = e
	tr := m.tracks[e.Name]
	fresh := tr == nil || tr.uid != e.UID
	if fresh {
		tr = &echoTrack{uid: e.UID, gen: e.Generation}
		m.tracks[e.Name] = tr
	}
	var evs []trace.Event
	switch {
	case deleting(e):
		// Whatever happens to its children now is garbage collection.
		tr.drift, tr.converge = nil, nil
		if tr.deleting.IsZero() {
			tr.deleting = now
			evs = append(evs, m.event(now, trace.EchoDeleting, trace.Object(echov1.Kind, e.Name),
				trace.Deleting{Finalizers: strings.Join(e.Finalizers, ",")}))
		}
	case fresh && !initial:
		tr.converge = &converge{since: now, created: true}
		tr.edited = now
	case !fresh && e.Generation != tr.gen:
		// An edit of the Echo is not drift: the operator has to converge.
		tr.drift = nil
		tr.converge = &converge{since: now}
		tr.edited = now
	}
	tr.gen = e.Generation
	if t := handStatusWrite(e); t.After(tr.statusByHand) {
		if !initial { // not one made before the world started
			tr.statusEdited = now
		}
		tr.statusByHand = t
	}
	return append(evs, m.evaluate(e.Name, false, now)...)
}

// handStatusWrite is when kubectl (a field manager kubectl, kubectl-patch,
// kubectl-edit, ...) last wrote e's status subresource, zero if never.
func handStatusWrite(e *echov1.Echo) time.Time {
	var t time.Time
	for _, mf := range e.GetManagedFields() {
		if mf.Subresource == "status" && strings.HasPrefix(mf.Manager, "kubectl") && mf.Time != nil && mf.Time.After(t) {
			t = mf.Time.Time
		}
	}
	return t
}

// deleteEcho forgets a deleted Echo and says how long its finalizers held
// it (0 if it was never seen waiting).
func (m *nsModel) deleteEcho(e *echov1.Echo, now time.Time) []trace.Event {
	cur := m.echoes[e.Name]
	if cur == nil || cur.UID != e.UID {
		return nil
	}
	var waited time.Duration
	if tr := m.tracks[e.Name]; tr != nil && !tr.deleting.IsZero() {
		waited = now.Sub(tr.deleting)
	}
	delete(m.echoes, e.Name)
	delete(m.tracks, e.Name)
	return []trace.Event{m.event(now, trace.EchoDeleted, trace.Object(echov1.Kind, e.Name), trace.Deleted{WaitedMS: ms(waited)})}
}

// setRegistry records the registry ConfigMap (nil: deleted).
func (m *nsModel) setRegistry(cm *corev1.ConfigMap) []trace.Event {
	if cm == nil || cm.Name == echo.RegistryName {
		m.registry = cm
	}
	return nil
}

// setDefaults records the ConfigMap echo-defaults (nil: deleted). What an
// Echo with an empty message wants changes with it, as a spec change would:
// until its Deployment matches again, a change of that Deployment is not
// drift.
func (m *nsModel) setDefaults(cm *corev1.ConfigMap) []trace.Event {
	if cm != nil && cm.Name != echo.DefaultsName {
		return nil
	}
	if echo.Message("", cm) != echo.Message("", m.defaults) {
		for name, e := range m.echoes {
			if tr := m.tracks[name]; tr != nil && e.Spec.Message == "" {
				tr.matchedGen = 0
			}
		}
	}
	m.defaults = cm
	return nil
}

// configMapChanged notes when a ConfigMap a person would write (not the
// operators' registry, nor the kube-root-ca.crt every namespace gets) was
// added, changed or deleted.
func (m *nsModel) configMapChanged(cm *corev1.ConfigMap, now time.Time) {
	if cm.Name != echo.RegistryName && cm.Name != rootCA {
		m.configMapEdited = now
	}
}

// rootCA is the ConfigMap the cluster puts in every namespace.
const rootCA = "kube-root-ca.crt"

// echoFor is the Echo name a Deployment belongs to by its name, echo-<name>.
func echoFor(deployment string) (string, bool) {
	return strings.CutPrefix(deployment, echo.DeploymentName(""))
}

func (m *nsModel) upsertDeployment(d *appsv1.Deployment, now time.Time) []trace.Event {
	m.deployments[d.Name] = d
	var evs []trace.Event
	owners, had := fieldOwners(d, "spec", "replicas"), m.replicasOwners[d.Name]
	m.replicasOwners[d.Name] = owners
	name, ok := echoFor(d.Name)
	// It changed owners when a manager that owned it lost it to another (a
	// forced apply, an Update). One that joins by applying the same value
	// takes nothing from anyone.
	if len(had) > 0 && len(owners) > 0 && slices.ContainsFunc(had, func(o string) bool { return !slices.Contains(owners, o) }) {
		fields := trace.Ownership{Path: "spec.replicas", From: strings.Join(had, ","), To: strings.Join(owners, ",")}
		if ok {
			fields.Echo = name
		}
		evs = append(evs, m.event(now, trace.Handover, trace.Object("Deployment", d.Name), fields))
	}
	if ok {
		evs = append(evs, m.evaluate(name, true, now)...)
	}
	return evs
}

// fieldOwners are the field managers whose managedFields entry of d holds
// the field at path (of the object itself, not of its status), sorted; nil
// if none does. A manager's set is JSON like {"f:spec":{"f:replicas":{}}}.
func fieldOwners(d metav1.Object, path ...string) []string {
	var out []string
	for _, mf := range d.GetManagedFields() {
		if mf.FieldsV1 == nil || mf.Subresource == "status" {
			continue
		}
		var set map[string]any
		if json.Unmarshal(mf.FieldsV1.Raw, &set) != nil {
			continue
		}
		for i, p := range path {
			next, ok := set["f:"+p]
			if !ok {
				set = nil
				break
			}
			if i < len(path)-1 {
				set, _ = next.(map[string]any)
			}
		}
		if set != nil && !slices.Contains(out, mf.Manager) {
			out = append(out, mf.Manager)
		}
	}
	slices.Sort(out)
	return out
}

func (m *nsModel) deleteDeployment(d *appsv1.Deployment, now time.Time) []trace.Event {
	evs := m.collected(d, "Deployment", now)
	forget(m.deployments, d)
	if m.deployments[d.Name] == nil {
		delete(m.replicasOwners, d.Name)
	}
	if name, ok := echoFor(d.Name); ok {
		evs = append(evs, m.evaluate(name, true, now)...)
	}
	return evs
}

func (m *nsModel) upsertReplicaSet(rs *appsv1.ReplicaSet, _ time.Time) []trace.Event {
	m.replicaSets[rs.Name] = rs
	return nil
}

func (m *nsModel) deleteReplicaSet(rs *appsv1.ReplicaSet, now time.Time) []trace.Event {
	evs := m.collected(rs, "ReplicaSet", now)
	forget(m.replicaSets, rs)
	return evs
}

func (m *nsModel) upsertPod(p *corev1.Pod, _ time.Time) []trace.Event {
	m.pods[p.Name] = p
	return nil
}

func (m *nsModel) deletePod(p *corev1.Pod, now time.Time) []trace.Event {
	evs := m.collected(p, "Pod", now)
	forget(m.pods, p)
	return evs
}

// forget removes deleted object o from objs, unless a newer object of the
// same name has replaced it there already.
func forget[T metav1.Object](objs map[string]T, o T) {
	if cur, ok := objs[o.GetName()]; ok && cur.GetUID() == o.GetUID() {
		delete(objs, o.GetName())
	}
}

// collected derives gc.collected for o, just deleted, if its controller
// owner is gone from the cache or being deleted. A Pod removed by its
// ReplicaSet's scale-down has a live owner, and is not garbage collection.
// An owner that still looks alive is looked at again after the settle time:
// its own deletion may come through its informer a little later.
func (m *nsModel) collected(o metav1.Object, kind string, now time.Time) []trace.Event {
	ref := metav1.GetControllerOfNoCopy(o)
	if ref == nil {
		return nil
	}
	owner := ref.Kind + "/" + ref.Name
	object := kind + "/" + o.GetName()
	fields := trace.GC{Owner: owner}
	alive, known := m.ownerAlive(ref.Kind, ref.UID)
	switch {
	case !known:
		return nil // an owner this model does not watch: cannot tell
	case !alive:
		return []trace.Event{m.event(now, trace.GCCollected, object, fields)}
	}
	at, refKind, uid := now, ref.Kind, ref.UID
	m.later(func(m *nsModel, _ time.Time) []trace.Event {
		if alive, _ := m.ownerAlive(refKind, uid); alive {
			return nil
		}
		return []trace.Event{m.event(at, trace.GCCollected, object, fields)}
	})
	return nil
}

// ownerAlive says whether the owner of kind and uid is in the cache and not
// being deleted; known is false for kinds the model does not watch.
func (m *nsModel) ownerAlive(kind string, uid types.UID) (alive, known bool) {
	var owner metav1.Object
	switch kind {
	case echov1.Kind:
		owner = findUID(m.echoes, uid)
	case "Deployment":
		owner = findUID(m.deployments, uid)
	case "ReplicaSet":
		owner = findUID(m.replicaSets, uid)
	default:
		return false, false
	}
	return owner != nil && !deleting(owner), true
}

func findUID[T metav1.Object](objs map[string]T, uid types.UID) metav1.Object {
	for _, o := range objs {
		if o.GetUID() == uid {
			return o
		}
	}
	return nil
}

// evaluate compares Echo name's Deployment with what the Echo asks for and
// derives drift.detected/repaired and echo.converged. fromDeployment says the
// Deployment changed (only that can be drift).
func (m *nsModel) evaluate(name string, fromDeployment bool, now time.Time) []trace.Event {
	e, tr := m.echoes[name], m.tracks[name]
	if e == nil || tr == nil || deleting(e) {
		return nil
	}
	d := m.deployments[echo.DeploymentName(name)]
	what := trace.DriftDeleted
	if d != nil {
		what = echo.Drift(d, echo.DesiredDeployment(e, m.defaults, "", m.image))
	}
	if what != "" {
		if fromDeployment && tr.drift == nil && tr.matchedGen != 0 && tr.matchedGen == e.Generation {
			dr := &drift{what: what, since: now, gen: e.Generation}
			tr.drift = dr
			m.later(func(m *nsModel, _ time.Time) []trace.Event { return m.confirmDrift(name, dr) })
		}
		return nil
	}
	var evs []trace.Event
	tr.matchedGen = e.Generation
	if dr := tr.drift; dr != nil {
		switch {
		case dr.confirmed:
			tr.drift = nil
			evs = append(evs, m.repaired(name, dr, now))
		case dr.repaired.IsZero():
			dr.repaired = now // published when confirmed
		}
	}
	if c := tr.converge; c != nil && statusCaughtUp(e, c.created) {
		tr.converge = nil
		fields := trace.Convergence{LatencyMS: ms(now.Sub(c.since)), Generation: e.Generation, Echo: name}
		if c.created {
			fields.Created = true
		}
		evs = append(evs, m.event(now, trace.Converged, trace.Object(echov1.Kind, name), fields))
	}
	return evs
}

// confirmDrift publishes drift dr of Echo name if, a settle time after it was
// seen, it still stands: the same Echo, not edited, not being deleted.
func (m *nsModel) confirmDrift(name string, dr *drift) []trace.Event {
	tr, e := m.tracks[name], m.echoes[name]
	if tr == nil || tr.drift != dr {
		return nil // cancelled by an edit or deletion of the Echo
	}
	if e == nil || deleting(e) || e.Generation != dr.gen {
		tr.drift = nil
		return nil
	}
	evs := []trace.Event{m.event(dr.since, trace.DriftDetected, trace.Object("Deployment", echo.DeploymentName(name)),
		trace.Drift{What: dr.what, Echo: name})}
	if dr.repaired.IsZero() {
		dr.confirmed = true
		return evs
	}
	tr.drift = nil
	return append(evs, m.repaired(name, dr, dr.repaired))
}

func (m *nsModel) repaired(name string, dr *drift, at time.Time) trace.Event {
	return m.event(at, trace.DriftRepaired, trace.Object("Deployment", echo.DeploymentName(name)),
		trace.Drift{What: dr.what, LatencyMS: ms(at.Sub(dr.since)), Echo: name})
}

// statusCaughtUp: after an edit, status.ready is written for the new replica
// count; after a creation, every replica is ready.
func statusCaughtUp(e *echov1.Echo, created bool) bool {
	n := echo.Replicas(e.Spec)
	if created {
		return e.Status.Ready == fmt.Sprintf("%d/%d", n, n)
	}
	return strings.HasSuffix(e.Status.Ready, "/"+strconv.Itoa(int(n)))
}

// setLease records the leader Lease (l nil: deleted) and derives
// leader.observed when its holder changed, including to nobody.
func (m *nsModel) setLease(name string, l *coordinationv1.Lease, now time.Time) []trace.Event {
	switch {
	case m.leases != nil:
		// A student's operator: the Lease it made, whatever its name.
		if l == nil {
			delete(m.leases, name)
		} else {
			m.leases[name] = l
		}
		l, name = m.firstLease(name)
	case name != echo.LeaseName:
		return nil
	}
	prev := holderOf(m.lease)
	m.lease = l
	cur := holderOf(l)
	if cur == prev {
		return nil
	}
	var transitions int32
	if l != nil && l.Spec.LeaseTransitions != nil {
		transitions = *l.Spec.LeaseTransitions
	}
	return []trace.Event{m.event(now, trace.LeaderObserved, "Lease/"+name, trace.Leader{
		Identity: cur, Previous: prev, Transitions: int(transitions), Lease: name,
	})}
}

// firstLease is the Lease shown of a student's operator's namespace: the
// first by name, so that the choice is stable; nil and fallback if none.
func (m *nsModel) firstLease(fallback string) (*coordinationv1.Lease, string) {
	var first *coordinationv1.Lease
	for n, l := range m.leases {
		if first == nil || n < first.Name {
			first = l
		}
	}
	if first == nil {
		return nil, fallback
	}
	return first, first.Name
}
