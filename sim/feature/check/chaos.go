package check

// Chaos (rlab check --chaos): after the normal checks, the same small
// workload runs once clean and once under each fault, at the operator's
// own proxies, and each faulty run is judged against the clean one, as
// Sieve judges: the end state matches (the Deployment as specified, status
// current), no more Deployments are created or deleted than in the clean
// run, the Echo has one Deployment, the writes stay within a bound of the
// clean run's, and it converges within Within after the fault ends.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/fault"
	"github.com/kkloud/rlab/sim/poll"
)

// ChaosScenarios are the faults rlab check --chaos runs, by kind, as each
// is set: on for the whole workload (5 s), then off. conflict and error
// refuse every matching write for those 5 s, a bounded window, rather than
// every Nth: an operator that makes N writes per reconcile would see every
// attempt fail against every Nth, however correct (docs/operators.md, "Why
// these windows", says how the windows are sized).
var ChaosScenarios = []string{
	"stale:2s",           // every watch event 2 s late
	"unobserved:2s",      // of 2 s of events, each object's latest alone
	"conflict,n=1",       // every update and patch refused 409
	"error,n=1,code=500", // every write answered 500
	"latency:500ms",      // every request held 0.5 s
	"crash,n=1",          // killed as its first write succeeds
	"lease:5s",           // Lease requests held past the renew deadline
	"partition:4s",       // every request refused for 4 s
	"disconnect:1s",      // every watch cut 1 s after it starts
}

// retryWindow is the least judging window after a fault that refuses
// writes (conflict, error, partition): kopf retries a failed handler after
// 60 s (DEFAULT_RETRY_DELAY), and a correct kopf operator must converge
// inside it. controller-runtime's and client-go's limiters, 5 ms doubling
// on each failure of an object, are due again well within it after 5 s of
// refusals (docs/operators.md, "Why these windows").
const retryWindow = 75 * time.Second

// refuses says whether fault kind k turns writes down, so that an operator
// must retry them.
func refuses(k fault.Kind) bool {
	return k == fault.Conflict || k == fault.Error || k == fault.Partition
}

// window is how long a run under f may take to converge after the fault
// ends: --within, and for a fault that refuses writes at least retryWindow.
func (r *run) window(f *fault.Fault) time.Duration {
	if f != nil && refuses(f.Kind) {
		return max(r.opts.Within, retryWindow)
	}
	return r.opts.Within
}

// ChaosKinds are the fault kinds --chaos takes, in the order they run.
func ChaosKinds() []string {
	out := make([]string, len(ChaosScenarios))
	for i, s := range ChaosScenarios {
		f, _ := fault.Parse(s)
		out[i] = string(f.Kind)
	}
	return out
}

// ParseChaos reads --chaos: "all", or kinds joined with commas, each with
// its scenario's parameters, or KIND:DURATION for another duration.
func ParseChaos(v string) ([]fault.Fault, error) {
	var specs []string
	switch v = strings.TrimSpace(v); v {
	case "", "all":
		specs = ChaosScenarios
	default:
		for _, w := range strings.Split(v, ",") {
			kind, dur, hasDur := strings.Cut(strings.TrimSpace(w), ":")
			i := slices.Index(ChaosKinds(), kind)
			if i < 0 {
				return nil, fmt.Errorf("--chaos %s: no fault %q; want all, or some of %s", v, kind, strings.Join(ChaosKinds(), ", "))
			}
			spec := ChaosScenarios[i]
			if hasDur {
				spec = kind + ":" + dur
				if _, rest, ok := strings.Cut(ChaosScenarios[i], ","); ok {
					spec += "," + rest
				}
			}
			specs = append(specs, spec)
		}
	}
	out := make([]fault.Fault, 0, len(specs))
	for _, s := range specs {
		f, err := fault.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("--chaos: %w", err)
		}
		out = append(out, f)
	}
	return out, nil
}

// ChaosID is the result ID of a fault's scenario: "chaos-stale".
func ChaosID(k fault.Kind) string { return "chaos-" + string(k) }

// Faults is what chaos needs of a Target besides the rest: the faults at
// the style's proxies.
type Faults interface {
	SetFault(st style.Style, f fault.Fault) error
	ClearFault(st style.Style, kind fault.Kind)
}

// The workload's timing: the fault is on chaosSettle before the first
// edit (turning stale, unobserved or disconnect on cuts the watches, and
// client-go watches again within a second or two), the edits come
// chaosStep apart, and the fault stays on chaosStep after the last.
const (
	chaosSettle = 2 * time.Second
	chaosStep   = time.Second
)

// The messages of the workload.
const (
	chaosBefore = "before the fault"
	chaosUnder  = "under the fault"
)

// chaosRun is what one run of the workload showed.
type chaosRun struct {
	converged bool
	why       string        // why not converged, or ""
	took      time.Duration // from the fault's end (clean: the last edit) to converged
	creates   int           // Deployments created (2xx)
	deletes   int           // Deployments deleted (2xx)
	writes    int           // every write but Lease and Event ones, answered or not
	refused   int           // of those, answered 409, 429 or 5xx
	retried   int           // of those, the ones another attempt at the same object followed
	unchanged int           // of the writes answered 2xx, those that changed nothing
	// Writes answered after the fault ended: of Deployments, and of the
	// Echo's status (what tells a lost retry from a slow one).
	deploysAfter, statusAfter int
	owned                     []string // the Deployments the Echo controls at the end
	// The trails of the Deployment's and the status's writes, and when the
	// fault ended and the judging window closed: what tells a retry that
	// backs off from a write that was dropped (retry.go).
	deployTrail, statusTrail trail
	ended, deadline          time.Time
}

// changing is how many of the run's writes could have changed something:
// the bound on writes is on these, so that an operator that rewrites on
// every pass (its own finding, rewrites) is not failed for it again here.
func (c chaosRun) changing() int { return c.writes - c.unchanged }

// chaos runs the clean workload, then one run per fault, and returns a
// result per fault.
func (r *run) chaos(ctx context.Context, faults []fault.Fault) ([]Result, error) {
	ft, ok := r.sb.(Faults)
	if !ok {
		return nil, fmt.Errorf("this sandbox cannot inject faults")
	}
	t0 := time.Now()
	clean, err := r.workload(ctx, ft, nil)
	if err != nil {
		return nil, err
	}
	var out []Result
	if len(r.opts.Only) > 0 && !slices.Contains(r.opts.Only, Rewrites) {
		// The clean run's rewrites, named once, as their own finding.
		res := Result{ID: Rewrites, Title: rewritesTitle + " (the clean run)"}
		res.Pass, res.Reason, _ = rewriteFinding(r.rec.Requests(t0))
		res.Seconds = time.Since(t0).Seconds()
		out = append(out, res)
		if r.opts.Progress != nil {
			r.opts.Progress(res)
		}
	}
	for _, f := range faults {
		t0 := time.Now()
		res := Result{ID: ChaosID(f.Kind), Title: "under " + f.String() + ": " + f.Describe(), Required: true}
		switch {
		case !clean.converged:
			res.Reason = "not checked: without a fault the workload did not converge: " + clean.why
		default:
			got, err := r.workload(ctx, ft, &f)
			if err != nil {
				return out, err
			}
			res.Pass, res.Reason, res.Warning = judge(f, clean, got)
		}
		res.Seconds = time.Since(t0).Seconds()
		out = append(out, res)
		if r.opts.Progress != nil {
			r.opts.Progress(res)
		}
	}
	return out, nil
}

// judge compares a faulty run with the clean one. A run that did not
// converge because its retry backs off past the window passes with a
// warning: waiting longer would measure the backoff, not the operator.
func judge(f fault.Fault, clean, got chaosRun) (pass bool, reason, warning string) {
	under := "under " + f.String()
	bound := 4*clean.changing() + 10
	switch {
	case len(got.owned) > 1:
		names := got.owned
		if len(names) > 3 {
			names = append(names[:3:3], fmt.Sprintf("and %d more", len(got.owned)-3))
		}
		return false, fmt.Sprintf("%s Echo has %d Deployments, %s (a clean run: 1): it created one it had already made, seeing none", under,
			len(got.owned), strings.Join(names, ", ")), ""
	case got.creates > clean.creates:
		return false, fmt.Sprintf("%s it created Deployments %d times, a clean run %d", under, got.creates, clean.creates), ""
	case got.deletes > clean.deletes:
		return false, fmt.Sprintf("%s it deleted Deployments %d times, a clean run %d", under, got.deletes, clean.deletes), ""
	case !got.converged:
		cause, slow := stuckCause(f, got)
		if slow != "" {
			return true, fmt.Sprintf("%s it had not converged %s, but it was retrying (warning)", under, got.why), slow
		}
		return false, fmt.Sprintf("%s it did not converge after the fault ended: %s%s", under, got.why, cause), ""
	case got.changing() > bound:
		return false, fmt.Sprintf("%s it wrote %d times that could change something, more than %d (4 × a clean run's %d, plus 10)",
			under, got.changing(), bound, clean.changing()), ""
	}
	reason = fmt.Sprintf("converged %s after the fault; %d create, %d writes (a clean run: %d, %d)",
		secs(got.took), got.creates, got.writes, clean.creates, clean.writes)
	if got.unchanged > 0 {
		reason += fmt.Sprintf(", %d of them changing nothing (a clean run: %d)", got.unchanged, clean.unchanged)
	}
	if got.refused > 0 {
		reason += fmt.Sprintf("; %d refused, %d of them tried again", got.refused, got.retried)
	}
	return true, reason, ""
}

// stuckCause says why a run that did not converge stayed where it was, where
// the requests tell: the object behind got.why was not written again after
// the fault ended ("" when it was: then it is slow, or wrong, not stuck).
// slow is set instead when the operator was retrying with a backoff whose
// next try fell after the window.
func stuckCause(f fault.Fault, got chaosRun) (cause, slow string) {
	after, what, tr := got.deploysAfter, "no Deployment", got.deployTrail
	if strings.Contains(got.why, "status.") {
		after, what, tr = got.statusAfter, "no status", got.statusTrail
	}
	if after > 0 {
		return "", ""
	}
	switch f.Kind {
	case fault.Conflict, fault.Error, fault.Partition:
		ft := judgeTrail(tr, got.refused, got.ended, got.deadline)
		switch {
		case ft.backingOff:
			return "", ft.line
		case ft.dropped:
			return fmt.Sprintf("; it wrote %s after the fault ended, so the %d writes refused under it were dropped, not retried: %s. "+
				"Return the error (requeue it), since no event comes for a refusal that changed nothing", what, got.refused, ft.line), ""
		}
	case fault.Crash:
		return fmt.Sprintf("; after its restart it wrote %s: it did not compare what the Echo asks with what it found, "+
			"so the edits made while it was down were never applied", what), ""
	}
	return fmt.Sprintf("; it wrote %s after the fault ended: nothing brought it back to this Echo", what), ""
}

// workload creates an Echo, scales it and changes its message, under f
// (nil: clean), then waits until it converges, and deletes it.
func (r *run) workload(ctx context.Context, ft Faults, f *fault.Fault) (chaosRun, error) {
	name := "chaos-clean"
	if f != nil {
		name = "chaos-" + string(f.Kind)
	}
	since := time.Now()
	if f != nil {
		if err := ft.SetFault(r.st, *f); err != nil {
			return chaosRun{}, fmt.Errorf("fault %s: %w", f, err)
		}
		defer ft.ClearFault(r.st, f.Kind)
		if err := poll.Sleep(ctx, chaosSettle); err != nil {
			return chaosRun{}, err
		}
	}
	defer r.cleanup(name)
	if err := r.createEcho(ctx, name, chaosBefore, 2); err != nil {
		return chaosRun{}, fmt.Errorf("create Echo %s: %w", name, err)
	}
	if err := poll.Sleep(ctx, chaosStep); err != nil {
		return chaosRun{}, err
	}
	if err := r.setReplicas(ctx, name, 3); err != nil {
		return chaosRun{}, err
	}
	if err := poll.Sleep(ctx, chaosStep); err != nil {
		return chaosRun{}, err
	}
	if _, err := r.echoes.Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"spec":{"message":%q}}`, chaosUnder),
		metav1.PatchOptions{FieldManager: "rlab-check"}); err != nil {
		return chaosRun{}, fmt.Errorf("edit Echo %s: %w", name, err)
	}
	if err := poll.Sleep(ctx, chaosStep); err != nil {
		return chaosRun{}, err
	}
	if f != nil {
		ft.ClearFault(r.st, f.Kind)
	}
	ended := time.Now()

	var res chaosRun
	var why string
	within := r.window(f)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		ok, w, err := r.chaosDone(ctx, name)
		if err != nil && ctx.Err() != nil {
			return false, nil // the bound cut a request short: keep the last why
		}
		why = w
		return ok, err
	})
	switch {
	case err == nil:
		res.converged, res.took = true, time.Since(ended)
	case ctx.Err() != nil:
		return chaosRun{}, ctx.Err()
	case wait.Interrupted(err):
		res.why = fmt.Sprintf("within %s, %s", secs(within), why)
	default:
		return chaosRun{}, err
	}
	owned, err := r.owned(ctx, name)
	if err != nil {
		return chaosRun{}, err
	}
	res.owned = owned
	res.ended, res.deadline = ended, ended.Add(within)
	reqs, deliveries := r.rec.Requests(since), r.rec.Deliveries(since)
	res.deployTrail = trailOf(reqs, deliveries, "deployments", "Deployment/echo-"+name, name)
	res.statusTrail = trailOf(reqs, deliveries, "echoes/status", "Echo/"+name, name)
	res.retried = retriedCount(reqs)
	for _, q := range reqs {
		if q.Write() && !q.Housekeeping() && q.Unchanged && q.Code/100 == 2 {
			res.unchanged++
		}
		if q.Write() && !q.Housekeeping() && q.Code != 0 && !q.Time.Before(ended) {
			switch q.Resource {
			case "deployments":
				res.deploysAfter++
			case "echoes/status":
				res.statusAfter++
			}
		}
		if q.Write() && !q.Housekeeping() && q.Refused() {
			res.refused++
		}
		switch {
		case q.Housekeeping() || !q.Write():
		case q.Key() == "create deployments" && q.Code/100 == 2:
			res.creates++
			res.writes++
		case q.Key() == "delete deployments" && q.Code/100 == 2:
			res.deletes++
			res.writes++
		default:
			res.writes++
		}
	}
	return res, nil
}

// chaosDone says whether Echo name has converged after the workload: its
// Deployment as specified, every pod ready, status.ready and
// observedGeneration current if the operator writes it.
func (r *run) chaosDone(ctx context.Context, name string) (bool, string, error) {
	ok, why, err := r.matches(ctx, name, true)
	if !ok || err != nil {
		return ok, why, err
	}
	e, d, why, err := r.pair(ctx, name)
	if why != "" || err != nil {
		return false, why, err
	}
	if why := r.templateProblem(d, e.Spec.Message); why != "" {
		return false, why, nil
	}
	if !controlledBy(d, e) {
		return false, fmt.Sprintf("Deployment %s has no controller ownerReference to Echo %s", d.Name, name), nil
	}
	if g := e.Status.ObservedGeneration; g != 0 && g != e.Generation {
		return false, fmt.Sprintf("status.observedGeneration is %d, metadata.generation %d", g, e.Generation), nil
	}
	return true, "", nil
}

// owned lists the Deployments that Echo name controls (ownerReference
// controller=true, its uid).
func (r *run) owned(ctx context.Context, name string) ([]string, error) {
	e, err := r.getEcho(ctx, name)
	if err != nil || e == nil {
		return nil, err
	}
	ds, err := r.kube.AppsV1().Deployments(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Deployments: %w", err)
	}
	var out []string
	for _, d := range ds.Items {
		if controlledBy(&d, e) {
			out = append(out, d.Name)
		}
	}
	return out, nil
}

func controlledBy(d *appsv1.Deployment, e *echov1.Echo) bool {
	ref := metav1.GetControllerOf(d)
	return ref != nil && ref.UID == e.UID
}
