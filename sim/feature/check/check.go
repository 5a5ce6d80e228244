// Package check grades an Echo operator from outside, the way `rlab check`
// does: whatever it is written in, rlab sees its requests (its counting
// proxies) and what the cluster shows, and nothing else. Each check passes
// or fails with a one-line reason a student can act on.
package check

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/fault"
	"github.com/kkloud/rlab/sim/rbac"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/supervisor"
)

// IDs of the checks, in the order they run.
const (
	Deployment   = "deployment"
	Owner        = "owner"
	Replicas     = "replicas"
	Message      = "message"
	Status       = "status"
	Scale        = "scale"
	Conditions   = "conditions"
	DriftScaled  = "drift-scaled"
	DriftDeleted = "drift-deleted"
	Quoting      = "quoting"
	Invalid      = "invalid"
	GC           = "gc"
	Restart      = "restart"
	Rest         = "rest"
	Rewrites     = "rewrites"
	Privilege    = "privilege"
	Leader       = "leader"
	Failover     = "failover"
)

const rewritesTitle = "every write changes something: no rewrite on every pass"

// Info describes one check.
type Info struct {
	ID, Title string
	// Required checks decide the exit status; the others inform.
	Required bool
	// Replicated checks run only with two replicas or more.
	Replicated bool
}

// All lists every check in the order it runs.
func All() []Info {
	return []Info{
		{ID: Deployment, Title: "creates the Deployment echo-<name>", Required: true},
		{ID: Owner, Title: "Deployment has a controller ownerReference to its Echo", Required: true},
		{ID: Replicas, Title: "spec.replicas → Deployment replicas", Required: true},
		{ID: Message, Title: "spec.message → container args; image " + sandbox.EnvImage + " where the nodes need it", Required: true},
		{ID: Status, Title: "status.ready says ready/replicas", Required: true},
		{ID: Scale, Title: "scale 2 → 4", Required: true},
		{ID: Conditions, Title: "status.observedGeneration follows the spec; condition Ready says the pods are ready", Required: false},
		{ID: DriftScaled, Title: "drift: Deployment scaled by hand is repaired", Required: true},
		{ID: DriftDeleted, Title: "drift: Deployment deleted is recreated", Required: true},
		{ID: Quoting, Title: "a message with quotes, $ and unicode arrives intact", Required: true},
		{ID: Invalid, Title: "an invalid spec is rejected by the server; the operator keeps running", Required: true},
		{ID: GC, Title: "Echo deleted → children removed by the garbage collector", Required: true},
		{ID: Restart, Title: "kill and restart → no extra writes, converges again", Required: true},
		{ID: Rest, Title: "API cost at rest", Required: false},
		{ID: Rewrites, Title: rewritesTitle, Required: false},
		{ID: Privilege, Title: "least privilege: nothing denied, nothing beyond the course's Role", Required: true},
		{ID: Leader, Title: "only one replica writes at a time", Required: true, Replicated: true},
		{ID: Failover, Title: "a killed leader is replaced", Required: true, Replicated: true},
	}
}

// Result is one check's outcome.
type Result struct {
	ID       string  `json:"id"`
	Title    string  `json:"title"`
	Required bool    `json:"required"`
	Pass     bool    `json:"pass"`
	Seconds  float64 `json:"seconds"`
	// Reason is one line: on a failure what to fix, on a pass what was
	// measured.
	Reason string `json:"reason"`
	// Warning, on a pass, is what rlab could not settle and why it did not
	// fail the check (a retry backing off past the judging window).
	Warning string `json:"warning,omitempty"`
}

// Options configure a run.
type Options struct {
	// Operator is the style to check; the sandbox runs it (a custom
	// operator or a built-in style) with the sample Echo created.
	Operator style.Style
	// Within bounds every wait for the operator to act (default 30 s).
	Within time.Duration
	// Settle is how long a restarted operator is watched for writes
	// (DefaultSettle); Rest how long API cost at rest is counted
	// (DefaultRest).
	Settle, Rest time.Duration
	// Only runs these checks (IDs), if set. A check that needs state an
	// earlier one makes (scale needs the Deployment) sets it up itself.
	Only []string
	// Progress is told each result as it comes.
	Progress func(Result)
	// Waiting, if set, is told every WaitingEvery while a check waits for
	// the operator: how long so far, and why not yet.
	Waiting func(id string, waited time.Duration, why string)
	// Chaos, if set, runs the chaos workload after the checks, clean and
	// under each of these faults (chaos.go).
	Chaos []fault.Fault
	// RBAC is what the operator was granted instead of the course's Role
	// (sandbox.Custom.RBAC), if it was: privilege then compares what it
	// declared, what it used and what the course needs.
	RBAC *rbac.Grant
	// InCluster: the operator runs in the cluster (InCluster), its requests
	// read from the apiserver's audit log. Writes that changed nothing are
	// not seen there, and there is no proxy to put a fault in: Chaos is
	// refused.
	InCluster bool
}

// Defaults of Options. A restarted operator that writes what is already
// there does so at once (a watcher syncs on start, a poller polls); three of
// the shell loop's default polls fit in the rest window.
const (
	DefaultSettle = 5 * time.Second
	DefaultRest   = 15 * time.Second
)

// WaitingEvery is how often Options.Waiting is told of a wait.
const WaitingEvery = 10 * time.Second

// Target is what the checks drive: a sandbox running the operator under
// test (Sandbox), its cluster and its operators.
type Target interface {
	Styles() []style.Style
	Namespace(st style.Style) string
	Replicas(st style.Style) []string
	Image() string
	Backend() backend.Backend
	LogFile(st style.Style, replica string) string
	Kube() kubernetes.Interface
	Echoes(st style.Style) dynamic.ResourceInterface
	ReplicaStatuses() []supervisor.Status
	KillReplica(name string) error
}

// sandboxTarget is a sandbox seen as a Target (and Faults): the replicas
// from its Operators, rlab's clients from its Admin, the faults from its
// Faults (the three method sets do not overlap), the rest from the
// sandbox and its cluster.
type sandboxTarget struct {
	*sandbox.Operators
	*sandbox.Admin
	*sandbox.Faults
	sb *sandbox.Sandbox
}

// chaos asserts a Target to Faults: a sandbox's must be one.
var _ Faults = sandboxTarget{}

// Sandbox is the Target of sb.
func Sandbox(sb *sandbox.Sandbox) Target {
	return sandboxTarget{sb.Operators(), sb.Admin(), sb.Faults(), sb}
}

// Styles are the styles the sandbox runs.
func (t sandboxTarget) Styles() []style.Style { return t.sb.Styles() }

// Namespace is the namespace of style st.
func (t sandboxTarget) Namespace(st style.Style) string { return t.sb.Namespace(st) }

// Image is what Echo pods run on the sandbox's cluster.
func (t sandboxTarget) Image() string { return t.sb.Cluster().Image() }

// Backend is the kind of cluster the sandbox runs on.
func (t sandboxTarget) Backend() backend.Backend { return t.sb.Cluster().Type() }

// Run runs the checks on opts.Operator in sb and returns every result. rec
// must record the operator's proxies from before its start (NewRequestLog).
// The error is for a sandbox that could not be driven at all; a failing
// operator is a failing Result.
func Run(ctx context.Context, sb Target, rec *RequestLog, opts Options) ([]Result, error) {
	if opts.Within == 0 {
		opts.Within = 30 * time.Second
	}
	if opts.Settle == 0 {
		opts.Settle = DefaultSettle
	}
	if opts.Rest == 0 {
		opts.Rest = DefaultRest
	}
	st := opts.Operator
	if opts.InCluster && len(opts.Chaos) > 0 {
		return nil, errors.New("chaos needs rlab's proxy between each replica and the apiserver, and an operator in the cluster has none: run it on this machine for --chaos")
	}
	if !slices.Contains(sb.Styles(), st) {
		return nil, fmt.Errorf("operator %s is not running in this sandbox", st)
	}
	ns := sb.Namespace(st)
	r := &run{
		sb: sb, st: st, ns: ns, rec: rec, opts: opts, began: time.Now(),
		kube: sb.Kube(), echoes: sb.Echoes(st),
		replicas: sb.Replicas(st),
		failed:   map[string]int{}, killed: map[string]int{},
	}
	r.restarts = r.restartCounts()
	for _, s := range sb.ReplicaStatuses() {
		if s.Style == st {
			r.failed[s.Replica] = s.Failed
		}
	}
	var out []Result
	for _, c := range All() {
		if len(opts.Only) > 0 && !slices.Contains(opts.Only, c.ID) {
			continue
		}
		if c.Replicated && len(r.replicas) < 2 && len(opts.Only) == 0 {
			continue
		}
		t0 := time.Now()
		res := Result{ID: c.ID, Title: c.Title, Required: c.Required}
		if c.Replicated && len(r.replicas) < 2 {
			// Asked for by name (a lesson's step): it fails, saying why,
			// rather than pass by not running.
			res.Reason = fmt.Sprintf("%s runs one replica (%s): this check needs two or more", st, r.st.Source(r.replicas[0]))
			out = append(out, res)
			if opts.Progress != nil {
				opts.Progress(res)
			}
			continue
		}
		if r.cause != nil && r.cause.blocking && !c.independent() {
			res.Reason = "not checked: see " + r.named
		} else {
			r.current, r.lost, r.changed = c.ID, false, time.Time{}
			pass, reason, err := r.do(ctx, c.ID)
			if err != nil && ctx.Err() != nil {
				return out, ctx.Err()
			}
			if err != nil {
				// rlab's own trouble is this check's failure, not the
				// end of the report.
				pass, reason = false, fmt.Sprintf("rlab could not finish this check: %v", err)
			}
			if !pass && r.lost {
				reason = r.attribute(c.ID, reason)
			}
			res.Pass, res.Reason = pass, reason
		}
		res.Seconds = time.Since(t0).Seconds()
		out = append(out, res)
		if opts.Progress != nil {
			opts.Progress(res)
		}
	}
	if len(opts.Chaos) == 0 {
		return out, nil
	}
	if r.cause != nil && r.cause.blocking {
		for _, f := range opts.Chaos {
			res := Result{ID: ChaosID(f.Kind), Title: "under " + f.String(), Required: true, Reason: "not checked: see " + r.named}
			out = append(out, res)
			if opts.Progress != nil {
				opts.Progress(res)
			}
		}
		return out, nil
	}
	r.current = "chaos"
	rs, err := r.chaos(ctx, opts.Chaos)
	out = append(out, rs...)
	switch {
	case err != nil && ctx.Err() != nil:
		return out, ctx.Err()
	case err != nil:
		// rlab's own trouble fails the scenarios left, not the report.
		for _, f := range opts.Chaos[len(rs):] {
			res := Result{ID: ChaosID(f.Kind), Title: "under " + f.String(), Required: true,
				Reason: fmt.Sprintf("rlab could not finish this check: %v", err)}
			out = append(out, res)
			if opts.Progress != nil {
				opts.Progress(res)
			}
		}
	}
	return out, nil
}

// independent says whether a check can be made without the operator: the
// apiserver's answer, what the requests already say.
func (c Info) independent() bool { return c.ID == Invalid || c.ID == Privilege }

// attribute words the failure of check id, which waited for the operator in
// vain: the first such failure with a known cause names it; later ones point
// to that one.
func (r *run) attribute(id, reason string) string {
	if r.named != "" {
		if r.cause.blocking {
			return "not checked: see " + r.named
		}
		return reason + "; see " + r.named
	}
	c := r.diagnose()
	if c == nil {
		return reason
	}
	r.cause, r.named = c, id
	return c.line
}

// Passed says whether every required check passed.
func Passed(rs []Result) bool {
	for _, r := range rs {
		if r.Required && !r.Pass {
			return false
		}
	}
	return true
}

// run is one Run's state.
type run struct {
	sb       Target
	st       style.Style
	ns       string
	rec      *RequestLog
	opts     Options
	began    time.Time
	kube     kubernetes.Interface
	echoes   dynamic.ResourceInterface
	replicas []string
	restarts map[string]int // per replica at the start
	scopes   *scopes        // which resources are namespaced (scope())

	// Diagnosis: failed exits at the start and those of rlab's own kills,
	// by replica.
	failed, killed map[string]int
	// current is the check running; lost says it waited for the operator
	// in vain. cause, once named by check named, is why.
	current, named string
	lost           bool
	cause          *cause
	// changed is when the check changed what the operator must act on (zero
	// if the wait is not for its act); waited is how long the last wait
	// took, given up or not.
	changed time.Time
	waited  time.Duration
}

// The Echoes the checks use besides the sample.
const (
	quotesEcho  = "check-quotes"
	driftEcho   = "check-drift"
	gcEcho      = "check-gc"
	invalidEcho = "check-invalid"
	// trickyMessage is what a shell operator that does not quote mangles.
	trickyMessage = `it's "quoted" — $HOME, 100% ünïcode \ and a * glob`
)

func (r *run) do(ctx context.Context, id string) (bool, string, error) {
	switch id {
	case Deployment:
		return r.deployment(ctx)
	case Owner:
		return r.owner(ctx)
	case Replicas:
		return r.replicaCount(ctx)
	case Message:
		return r.message(ctx)
	case Status:
		return r.status(ctx)
	case Scale:
		return r.scale(ctx)
	case Conditions:
		return r.conditions(ctx)
	case DriftScaled:
		return r.driftScaled(ctx)
	case DriftDeleted:
		return r.driftDeleted(ctx)
	case Quoting:
		return r.quoting(ctx)
	case Invalid:
		return r.invalid(ctx)
	case GC:
		return r.gc(ctx)
	case Restart:
		return r.restart(ctx)
	case Rest:
		return r.rest(ctx)
	case Rewrites:
		return r.rewrites(ctx, r.began)
	case Privilege:
		return r.privilege(ctx)
	case Leader:
		return r.leader(ctx)
	case Failover:
		return r.failover(ctx)
	}
	return false, "", fmt.Errorf("unknown check %q", id)
}

// waitFor polls cond every 100 ms until it holds or Within passes. cond
// says why not yet, for the failure's reason. It gives up early, with
// errBlocked, once the operator can no longer act (see diagnose).
func (r *run) waitFor(ctx context.Context, cond func(ctx context.Context) (bool, string, error)) (time.Duration, string, error) {
	t0 := time.Now()
	var why string
	var looked, told time.Time
	blocked, idle := false, false
	defer func() { r.waited = time.Since(t0) }()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, r.opts.Within, true, func(pctx context.Context) (bool, error) {
		ok, w, err := cond(pctx)
		if err != nil && pctx.Err() != nil {
			return false, nil // the bound cut a request short: keep the last why
		}
		why = w
		if ok || err != nil {
			return ok, err
		}
		if time.Since(looked) >= time.Second {
			looked = time.Now()
			if c := r.diagnose(); c != nil && c.blocking {
				blocked = true
				return false, errBlocked
			}
			if r.idle() {
				idle = true
				return false, errTimeout
			}
		}
		if r.opts.Waiting != nil && time.Since(t0) >= WaitingEvery && time.Since(told) >= WaitingEvery {
			told = time.Now()
			r.opts.Waiting(r.current, time.Since(t0), why)
		}
		return false, nil
	})
	switch {
	case blocked:
		r.lost = true
		return 0, why, errBlocked
	case idle:
		r.lost = true
		return 0, why, errTimeout
	case err != nil && !wait.Interrupted(err):
		return 0, why, err
	case err != nil && ctx.Err() != nil:
		return 0, why, ctx.Err()
	case err != nil:
		r.lost = true
		return 0, why, errTimeout
	}
	return time.Since(t0), "", nil
}

// idleAfter is how long a watching operator may make no request after a
// change it must act on before it counts as not acting: one that watches
// acts within a second.
const idleAfter = 8 * time.Second

// idle says whether a watching operator has made no request since the
// check's change, for idleAfter: it is not going to act. An operator that
// does not watch (polls) is given the whole bound: its interval may be
// long. So is one that elects a leader (any Lease request counts as a
// request): a standby acts only once the Lease it waits for expires, 15 s
// for controller-runtime's.
func (r *run) idle() bool {
	if r.changed.IsZero() || time.Since(r.changed) < idleAfter {
		return false
	}
	watches := false
	for _, q := range r.rec.Requests(time.Time{}) {
		if q.Verb == trace.VerbWatch && q.Code == 200 {
			watches = true
		}
		if !q.Time.Before(r.changed) && q.Verb != trace.VerbWatch {
			return false
		}
	}
	return watches
}

// quietFor is how long an operator must make no request (leader election
// aside) to be at rest.
const quietFor = 2 * time.Second

// quiet waits until the operator is at rest: no request but its Lease's
// for quietFor, so that a check sees what it does about the check's change
// and not the tail of the last one. An operator never at rest within the
// bound is left as it is: the rest check reports its cost.
func (r *run) quiet(ctx context.Context) error {
	lost := r.lost
	_, _, err := r.waitFor(ctx, func(context.Context) (bool, string, error) {
		qs, _ := r.requests(time.Now().Add(-quietFor))
		for _, q := range qs {
			if !q.Housekeeping() && q.Verb != "watch" {
				return false, "it is still making requests (" + q.Key() + ")", nil
			}
		}
		return true, "", nil
	})
	if errors.Is(err, errTimeout) {
		r.lost = lost // being busy is not losing
		return nil
	}
	return err
}

// errTimeout is a wait the operator did not finish within the bound, and
// errBlocked (one too) a wait it can no longer finish; the checks turn them
// into a failing result.
var (
	errTimeout = errors.New("timed out")
	errBlocked = fmt.Errorf("%w: the operator cannot act", errTimeout)
)

// outcome turns a waitFor into a check result: a timeout fails with reason,
// any other error is the sandbox's.
func outcome(took time.Duration, err error, pass, fail string) (bool, string, error) {
	if errors.Is(err, errTimeout) {
		return false, fail, nil
	}
	if err != nil {
		return false, "", err
	}
	return true, fmt.Sprintf("%s in %s", pass, secs(took)), nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// getEcho returns Echo name, nil if absent.
func (r *run) getEcho(ctx context.Context, name string) (*echov1.Echo, error) {
	u, err := r.echoes.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get Echo %s: %w", name, err)
	}
	var e echov1.Echo
	if err := runtimeFromUnstructured(u, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// getDeployment returns Echo name's Deployment, nil if absent.
func (r *run) getDeployment(ctx context.Context, echoName string) (*appsv1.Deployment, error) {
	d, err := r.kube.AppsV1().Deployments(r.ns).Get(ctx, echo.DeploymentName(echoName), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get Deployment %s: %w", echo.DeploymentName(echoName), err)
	}
	return d, nil
}

// createEcho creates Echo name as the student would, with kubectl apply.
func (r *run) createEcho(ctx context.Context, name, message string, replicas int64) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": echov1.GroupVersion.String(), "kind": echov1.Kind,
		"metadata": map[string]any{"name": name, "namespace": r.ns},
		"spec":     map[string]any{"message": message, "replicas": replicas},
	}}
	_, err := r.echoes.Create(ctx, u, metav1.CreateOptions{FieldManager: "rlab-check"})
	return err
}

// setReplicas sets spec.replicas of Echo name.
func (r *run) setReplicas(ctx context.Context, name string, n int) error {
	_, err := r.echoes.Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n),
		metav1.PatchOptions{FieldManager: "rlab-check"})
	if err != nil {
		return fmt.Errorf("scale Echo %s: %w", name, err)
	}
	return nil
}

// hint says what else tells about a wait the operator lost: it is not
// running, it made no request at all, or it was denied some.
func (r *run) hint(since time.Time) string {
	if why := r.restarted(); why != "" {
		return why
	}
	qs, _ := r.requests(since)
	if len(qs) == 0 {
		return "it made no request since (its log: " + r.sb.LogFile(r.st, r.replicas[0]) + ")"
	}
	if d := r.denied(qs); len(d) > 0 {
		return "it was denied " + strings.Join(d, ", ")
	}
	return ""
}

// requests are the operator's requests since t, without kubectl's lookups
// of the operator's own namespace after a 404 (only to word its error: a
// denial that costs the operator nothing), which are counted apart.
func (r *run) requests(since time.Time) (qs []Request, probes int) {
	for _, q := range r.rec.Requests(since) {
		if q.Key() == "get namespaces" && q.Object == "Namespace/"+r.ns {
			probes++
			continue
		}
		qs = append(qs, q)
	}
	return qs, probes
}

// denied lists the distinct requests answered 403, with counts, each
// saying if it was across all namespaces.
func (r *run) denied(qs []Request) []string {
	n := map[string]int{}
	for _, q := range qs {
		if q.Code == 403 {
			n[r.scopedKey(q)]++
		}
	}
	return counted(n)
}

// counted formats "verb resource ×n", most first.
func counted(n map[string]int) []string {
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if n[keys[i]] != n[keys[j]] {
			return n[keys[i]] > n[keys[j]]
		}
		return keys[i] < keys[j]
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s ×%d", k, n[k])
	}
	return out
}

// join adds a hint to a reason, if there is one.
func join(reason, hint string) string {
	if hint == "" {
		return reason
	}
	return reason + "; " + hint
}
