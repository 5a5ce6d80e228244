package check

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/sim/sandbox"
)

func runtimeFromUnstructured(u *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("decode %s: %w", u.GetName(), err)
	}
	return nil
}

// sample is the Echo every check of the Deployment looks at.
const sample = sandbox.SampleName

// deployment: the sample's Deployment appears.
func (r *run) deployment(ctx context.Context) (bool, string, error) {
	took, _, err := r.waitFor(ctx, func(ctx context.Context) (bool, string, error) {
		d, err := r.getDeployment(ctx, sample)
		return d != nil, "", err
	})
	name := echo.DeploymentName(sample)
	return outcome(took, err, "Deployment "+name+" there",
		join(fmt.Sprintf("no Deployment %s %s after Echo %s was created", name, secs(r.waited), sample), r.hint(time.Time{})))
}

// owner: the Deployment names the Echo as its controller.
func (r *run) owner(ctx context.Context) (bool, string, error) {
	e, d, why, err := r.waitPair(ctx, sample)
	if why != "" || err != nil {
		return false, why, err
	}
	ref := metav1.GetControllerOf(d)
	switch {
	case len(d.OwnerReferences) == 0:
		return false, fmt.Sprintf("Deployment %s has no ownerReference: add one to Echo %s (uid %s) with controller: true, or the garbage collector will never remove it", d.Name, e.Name, e.UID), nil
	case ref == nil:
		return false, fmt.Sprintf("Deployment %s has ownerReferences but none with controller: true", d.Name), nil
	case ref.Kind != echov1.Kind || ref.Name != e.Name:
		return false, fmt.Sprintf("Deployment %s is controlled by %s/%s, want Echo/%s", d.Name, ref.Kind, ref.Name, e.Name), nil
	case ref.UID != e.UID:
		return false, fmt.Sprintf("Deployment %s's ownerReference has uid %s, but Echo %s's uid is %s: copy it from the Echo", d.Name, ref.UID, e.Name, e.UID), nil
	case ref.APIVersion != echov1.GroupVersion.String():
		return false, fmt.Sprintf("Deployment %s's ownerReference has apiVersion %q, want %q", d.Name, ref.APIVersion, echov1.GroupVersion.String()), nil
	}
	return true, fmt.Sprintf("Echo/%s controller=true, uid matches", e.Name), nil
}

// pair is Echo name and its Deployment, or why not.
func (r *run) pair(ctx context.Context, name string) (*echov1.Echo, *appsv1.Deployment, string, error) {
	e, err := r.getEcho(ctx, name)
	if err != nil {
		return nil, nil, "", err
	}
	if e == nil {
		return nil, nil, "Echo " + name + " is gone", nil
	}
	d, err := r.getDeployment(ctx, name)
	if err != nil {
		return nil, nil, "", err
	}
	if d == nil {
		return nil, nil, "no Deployment " + echo.DeploymentName(name), nil
	}
	return e, d, "", nil
}

// waitPair is pair once the Deployment is there, within the bound.
func (r *run) waitPair(ctx context.Context, name string) (e *echov1.Echo, d *appsv1.Deployment, why string, err error) {
	_, why, err = r.waitFor(ctx, func(ctx context.Context) (bool, string, error) {
		var why string
		var err error
		e, d, why, err = r.pair(ctx, name)
		return why == "", why, err
	})
	if errors.Is(err, errTimeout) {
		return nil, nil, "not checked: " + why, nil
	}
	return e, d, why, err
}

// replicaCount: Deployment replicas follow spec.replicas.
func (r *run) replicaCount(ctx context.Context) (bool, string, error) {
	var e *echov1.Echo
	var d *appsv1.Deployment
	took, why, err := r.waitFor(ctx, func(ctx context.Context) (bool, string, error) {
		var why string
		var err error
		e, d, why, err = r.pair(ctx, sample)
		if why != "" || err != nil {
			return false, why, err
		}
		return deploymentReplicas(d) == echo.Replicas(e.Spec), fmt.Sprintf("Deployment %s has replicas %d, Echo %s asks for %d", d.Name, deploymentReplicas(d), e.Name, echo.Replicas(e.Spec)), nil
	})
	return outcome(took, err, "replicas match", why)
}

func deploymentReplicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// message: the pod template runs the image rlab handed out with
// -text=<message>.
func (r *run) message(ctx context.Context) (bool, string, error) {
	e, d, why, err := r.waitPair(ctx, sample)
	if why != "" || err != nil {
		return false, why, err
	}
	if why := r.templateProblem(d, e.Spec.Message); why != "" {
		return false, why, nil
	}
	image := d.Spec.Template.Spec.Containers[0].Image
	return true, fmt.Sprintf("args [%s], image %s%s", echo.Arg(e.Spec.Message), image, r.imageNote(image)), nil
}

// imageNote says what an image other than $ECHO_IMAGE means where the
// nodes can run it (nothing is said of $ECHO_IMAGE itself).
func (r *run) imageNote(image string) string {
	if image == r.sb.Image() {
		return ""
	}
	note := " (not $" + sandbox.EnvImage + ", " + r.sb.Image()
	// Envtest's nodes are kwok's: no kubelet pulls anything. An existing
	// cluster's may or may not reach a registry.
	if b := r.sb.Backend(); b.LocalControlPlane && !b.RealKubelets {
		note += ": fine here, where the nodes run no containers; on kind's offline node only " + r.sb.Image() + " runs"
	} else {
		note += ": rlab cannot tell whether this cluster's nodes can pull it"
	}
	if _, tag := splitTag(image); tag == "" || tag == "latest" {
		note += "; an image without a tag is :latest, which Kubernetes pulls on every Pod start (imagePullPolicy Always)"
	}
	return note + ")"
}

// splitTag splits an image reference into its name and tag ("" if none; a
// digest counts as a tag).
func splitTag(image string) (name, tag string) {
	if i := strings.LastIndex(image, "@"); i >= 0 {
		return image[:i], image[i+1:]
	}
	slash := strings.LastIndex(image, "/")
	if i := strings.LastIndex(image, ":"); i > slash {
		return image[:i], image[i+1:]
	}
	return image, ""
}

// imageRequired says whether the pods must run $ECHO_IMAGE: only where the
// nodes cannot run another (kind's offline node holds that one alone).
func (r *run) imageRequired() bool {
	b := r.sb.Backend()
	return b.RealKubelets && b.NodeImage
}

// templateProblem says how d's pod template differs from what an Echo with
// message asks for, or "".
func (r *run) templateProblem(d *appsv1.Deployment, message string) string {
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		return fmt.Sprintf("Deployment %s has %d containers, want 1", d.Name, len(cs))
	}
	want := []string{echo.Arg(message)}
	if !slices.Equal(cs[0].Args, want) {
		return fmt.Sprintf("container args are %q, want %q: pass the message as one argument, -text=<message>", cs[0].Args, want)
	}
	if cs[0].Image != r.sb.Image() && r.imageRequired() {
		return fmt.Sprintf("container image is %q, want %q: use $%s, the image this cluster's nodes can run", cs[0].Image, r.sb.Image(), sandbox.EnvImage)
	}
	return ""
}

// status: status.ready reports the ready pods.
func (r *run) status(ctx context.Context) (bool, string, error) {
	t0 := time.Now()
	took, why, err := r.waitFor(ctx, func(ctx context.Context) (bool, string, error) {
		return r.matches(ctx, sample, true)
	})
	return outcome(took, err, "status.ready right", join(why, r.hint(t0)))
}

// matches says whether Echo name's Deployment has spec.replicas, all Ready,
// and with status, whether status.ready says so; or why not.
func (r *run) matches(ctx context.Context, name string, status bool) (bool, string, error) {
	e, d, why, err := r.pair(ctx, name)
	if why != "" || err != nil {
		return false, why, err
	}
	n := echo.Replicas(e.Spec)
	want := fmt.Sprintf("%d/%d", n, n)
	switch {
	case deploymentReplicas(d) != n:
		return false, fmt.Sprintf("Deployment %s has replicas %d, Echo %s asks for %d", d.Name, deploymentReplicas(d), name, n), nil
	case d.Status.ReadyReplicas != n:
		return false, fmt.Sprintf("Deployment %s has %d of %d pods ready", d.Name, d.Status.ReadyReplicas, n), nil
	case status && e.Status.Ready != want:
		return false, fmt.Sprintf("status.ready is %q with %d of %d pods ready, want %q: write \"<ready>/<replicas>\" to the Echo's status subresource", e.Status.Ready, d.Status.ReadyReplicas, n, want), nil
	}
	return true, "", nil
}

// follows waits until Echo name's Deployment matches its spec after a
// change (what): replicas, all Ready. Status is the status check's alone,
// so that one mistake fails one check.
func (r *run) follows(ctx context.Context, name, what string) (bool, string, error) {
	t0 := time.Now()
	r.changed = t0
	took, why, err := r.waitFor(ctx, func(ctx context.Context) (bool, string, error) {
		return r.matches(ctx, name, false)
	})
	return outcome(took, err, "Deployment followed", join(what+": "+why, r.hint(t0)))
}

// settled is the precondition of a check that changes Echo name's world:
// its Deployment matches the spec. If not, the check cannot be made, and
// says so: an earlier check's failure shows here too.
func (r *run) settled(ctx context.Context, name, when string) (bool, string, error) {
	took, why, err := r.waitFor(ctx, func(ctx context.Context) (bool, string, error) {
		return r.matches(ctx, name, false)
	})
	ok, _, err := outcome(took, err, "", "")
	if ok || err != nil {
		return ok, "", err
	}
	return false, fmt.Sprintf("not checked: %s, %s", when, why), nil
}

// scale: the Echo scaled 2 → 4 is followed.
func (r *run) scale(ctx context.Context) (bool, string, error) {
	if err := r.setReplicas(ctx, sample, 4); err != nil {
		return false, "", err
	}
	return r.follows(ctx, sample, "after spec.replicas 2 → 4")
}

// conditions: after the scale, the status is about the spec as it is now
// (status.observedGeneration = metadata.generation), and its condition
// Ready is True, as every pod is. Informative: a bash loop that writes
// status.ready alone (lesson 12's) passes every required check.
func (r *run) conditions(ctx context.Context) (bool, string, error) {
	if ok, why, err := r.settled(ctx, sample, "before its status is read"); !ok || err != nil {
		return ok, why, err
	}
	t0 := time.Now()
	took, why, err := r.waitFor(ctx, func(ctx context.Context) (bool, string, error) {
		e, err := r.getEcho(ctx, sample)
		if err != nil || e == nil {
			return false, "Echo " + sample + " is gone", err
		}
		ready := meta.FindStatusCondition(e.Status.Conditions, echo.ConditionReady)
		switch {
		case e.Status.ObservedGeneration != e.Generation:
			return false, fmt.Sprintf("status.observedGeneration is %d, metadata.generation %d: write the generation your status is about",
				e.Status.ObservedGeneration, e.Generation), nil
		case ready == nil:
			return false, "no condition Ready in status.conditions: set one (meta.SetStatusCondition), True when every pod is ready", nil
		case ready.Status != metav1.ConditionTrue:
			return false, fmt.Sprintf("condition Ready is %s (%s: %s) with every pod ready", ready.Status, ready.Reason, ready.Message), nil
		}
		return true, "", nil
	})
	return outcome(took, err, "observedGeneration current, Ready True", join(why, r.hint(t0)))
}

// triggered says why an operator did not repair drift: it made no request
// at all since (nothing triggered a reconcile), or it looked and left it.
func (r *run) triggered(since time.Time, what string) string {
	var seen []string
	for _, q := range r.rec.Requests(since) {
		if q.Verb != "watch" && !q.Housekeeping() && q.Resource != "discovery" {
			seen = append(seen, q.Key())
		}
	}
	if len(seen) == 0 {
		return "nothing triggered a reconcile: does it watch the Deployments it owns?"
	}
	return fmt.Sprintf("it made %d requests since (%s) but left the %s", len(seen), seen[0], what)
}

// driftScaled: a hand scale of the Deployment is undone.
func (r *run) driftScaled(ctx context.Context) (bool, string, error) {
	if ok, why, err := r.settled(ctx, sample, "before the hand scale"); !ok || err != nil {
		return ok, why, err
	}
	if err := r.quiet(ctx); err != nil {
		return false, "", err
	}
	e, err := r.getEcho(ctx, sample)
	if err != nil || e == nil {
		return false, "Echo " + sample + " is gone", err
	}
	want, hand := echo.Replicas(e.Spec), int32(1)
	if want == 1 {
		hand = 2
	}
	scale := func(n int32) error {
		_, err := r.kube.AppsV1().Deployments(r.ns).Patch(ctx, echo.DeploymentName(sample), types.MergePatchType,
			fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n), metav1.PatchOptions{FieldManager: "kubectl-scale"})
		return err
	}
	t0 := time.Now()
	r.changed = t0
	if err := scale(hand); err != nil {
		return false, "", fmt.Errorf("scale by hand: %w", err)
	}
	took, _, err := r.waitFor(ctx, func(ctx context.Context) (bool, string, error) {
		d, err := r.getDeployment(ctx, sample)
		return d != nil && deploymentReplicas(d) == want, "", err
	})
	ok, why, err := outcome(took, err, fmt.Sprintf("back to %d replicas", want),
		fmt.Sprintf("Deployment %s still has %d replica%s %s after a hand scale (Echo asks for %d): %s", echo.DeploymentName(sample), hand, plural(hand), secs(r.waited), want,
			r.triggered(t0, fmt.Sprintf("Deployment at %d", hand))))
	if !ok && err == nil {
		_ = scale(want) // put back by rlab, so that the next checks test what they test
	}
	return ok, why, err
}

// driftDeleted: a deleted Deployment comes back. It is its own Echo's, so
// that a failure here leaves the sample as it was for the next checks.
func (r *run) driftDeleted(ctx context.Context) (bool, string, error) {
	if err := r.createEcho(ctx, driftEcho, "delete my Deployment", 1); err != nil {
		return false, "", fmt.Errorf("create Echo %s: %w", driftEcho, err)
	}
	defer r.cleanup(driftEcho)
	if ok, why, err := r.settled(ctx, driftEcho, "for a new Echo "+driftEcho); !ok || err != nil {
		return ok, why, err
	}
	if err := r.quiet(ctx); err != nil {
		return false, "", err
	}
	d, err := r.getDeployment(ctx, driftEcho)
	if err != nil || d == nil {
		return false, "no Deployment to delete", err
	}
	t0 := time.Now()
	r.changed = t0
	if err := r.kube.AppsV1().Deployments(r.ns).Delete(ctx, d.Name, metav1.DeleteOptions{}); err != nil {
		return false, "", fmt.Errorf("delete Deployment: %w", err)
	}
	took, _, err := r.waitFor(ctx, func(ctx context.Context) (bool, string, error) {
		n, err := r.getDeployment(ctx, driftEcho)
		return n != nil && n.UID != d.UID && n.DeletionTimestamp == nil, "", err
	})
	return outcome(took, err, "recreated",
		fmt.Sprintf("Deployment %s was not recreated %s after it was deleted: %s", d.Name, secs(r.waited), r.triggered(t0, "Deployment missing")))
}

// quoting: a message full of shell metacharacters reaches the container
// unchanged.
func (r *run) quoting(ctx context.Context) (bool, string, error) {
	if err := r.createEcho(ctx, quotesEcho, trickyMessage, 1); err != nil {
		return false, "", fmt.Errorf("create Echo %s: %w", quotesEcho, err)
	}
	defer r.cleanup(quotesEcho)
	t0 := time.Now()
	r.changed = t0
	took, why, err := r.waitFor(ctx, func(ctx context.Context) (bool, string, error) {
		d, err := r.getDeployment(ctx, quotesEcho)
		if d == nil || err != nil {
			return false, "no Deployment " + echo.DeploymentName(quotesEcho), err
		}
		why := r.templateProblem(d, trickyMessage)
		return why == "", why, nil
	})
	return outcome(took, err, "message intact", join(fmt.Sprintf("Echo %s with message %q: %s", quotesEcho, trickyMessage, why), r.hint(t0)))
}

// cleanup deletes a check's own Echo and waits (briefly) until its
// Deployment is gone, so that the next check starts clean.
func (r *run) cleanup(name string) {
	// Its wait is rlab's, not the operator's: it tells nothing of it.
	lost, changed := r.lost, r.changed
	r.changed = time.Time{}
	defer func() { r.lost, r.changed = lost, changed }()
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.Within)
	defer cancel()
	_ = r.echoes.Delete(ctx, name, metav1.DeleteOptions{})
	_ = r.kube.AppsV1().Deployments(r.ns).Delete(ctx, echo.DeploymentName(name), metav1.DeleteOptions{})
	_, _, _ = r.waitFor(ctx, func(ctx context.Context) (bool, string, error) {
		e, err := r.getEcho(ctx, name)
		if err != nil || e != nil {
			return false, "", err
		}
		d, err := r.getDeployment(ctx, name)
		return d == nil, "", err
	})
}

// invalid: the CRD's schema rejects a bad spec before any operator sees
// it, and the operator is unharmed.
func (r *run) invalid(ctx context.Context) (bool, string, error) {
	err := r.createEcho(ctx, invalidEcho, "too many", 9)
	if err == nil {
		r.cleanup(invalidEcho)
		return false, "Echo with replicas 9 was accepted: the Echo CRD's schema (maximum 5) is not installed as the course wrote it", nil
	}
	if !apierrors.IsInvalid(err) {
		return false, "", fmt.Errorf("create invalid Echo: %w", err)
	}
	said := err.Error()
	if why := r.restarted(); why != "" {
		r.lost = true // the operator's doing: diagnose it
		return false, why, nil
	}
	return true, "the apiserver said: " + said, nil
}

// restartCounts are the replicas' restarts now.
func (r *run) restartCounts() map[string]int {
	out := map[string]int{}
	for _, s := range r.sb.ReplicaStatuses() {
		if s.Style == r.st {
			out[s.Replica] = s.Restarts
		}
	}
	return out
}

// restarted says which replicas failed (exited non-zero, or were killed by
// other than rlab) since the run began, or is "".
func (r *run) restarted() string {
	out := r.exited(r.exits())
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, ", ") + ": see its log, " + r.sb.LogFile(r.st, r.replicas[0])
}

// gc: deleting an Echo removes its Deployment through the garbage
// collector; the operator sends no DELETE of its own.
func (r *run) gc(ctx context.Context) (bool, string, error) {
	if err := r.createEcho(ctx, gcEcho, "collect me", 1); err != nil {
		return false, "", fmt.Errorf("create Echo %s: %w", gcEcho, err)
	}
	defer r.cleanup(gcEcho)
	name := echo.DeploymentName(gcEcho)
	if _, why, err := r.waitFor(ctx, func(ctx context.Context) (bool, string, error) {
		d, err := r.getDeployment(ctx, gcEcho)
		return d != nil, "no Deployment " + name + " for the new Echo " + gcEcho, err
	}); err != nil {
		return outcome(0, err, "", why)
	}
	t0 := time.Now()
	if err := r.echoes.Delete(ctx, gcEcho, metav1.DeleteOptions{}); err != nil {
		return false, "", fmt.Errorf("delete Echo %s: %w", gcEcho, err)
	}
	var owned bool
	took, _, err := r.waitFor(ctx, func(ctx context.Context) (bool, string, error) {
		d, err := r.getDeployment(ctx, gcEcho)
		if d != nil {
			owned = metav1.GetControllerOf(d) != nil
		}
		return d == nil, "", err
	})
	r.lost = false // the garbage collector's wait: what the operator did is said below
	if qerr := r.quiet(ctx); qerr != nil {
		return false, "", qerr
	}
	var deletes []string
	for _, q := range r.rec.Requests(t0) {
		if q.Verb == "delete" && strings.HasPrefix(q.Resource, "deployments") {
			deletes = append(deletes, fmt.Sprintf("%s by %s/%s (%d)", q.Object, r.st, q.Replica, q.Code))
		}
	}
	if len(deletes) > 0 && err == nil {
		return false, fmt.Sprintf("the operator deleted the Deployment itself (DELETE %s): leave it to the garbage collector, which follows the controller ownerReference", strings.Join(deletes, ", ")), nil
	}
	fail := fmt.Sprintf("Deployment %s is still there %s after Echo %s was deleted", name, secs(r.waited), gcEcho)
	if !owned {
		fail += ": it has no controller ownerReference to the Echo, so the garbage collector leaves it"
	}
	return outcome(took, err, "collected by the garbage collector", fail)
}

// plural is "s" unless n is 1.
func plural(n int32) string {
	if n == 1 {
		return ""
	}
	return "s"
}
