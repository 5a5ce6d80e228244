package check

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kkloud/rlab/sim/poll"
	"github.com/kkloud/rlab/sim/proc"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/ship"
)

// restart: every replica killed and restarted finds the world as it wants
// it, changes nothing, and then follows an edit again.
func (r *run) restart(ctx context.Context) (bool, string, error) {
	if ok, why, err := r.settled(ctx, sample, "before the restart"); !ok || err != nil {
		return ok, why, err
	}
	if err := r.quiet(ctx); err != nil {
		return false, "", err
	}
	before, err := r.versions(ctx)
	if err != nil {
		return false, "", err
	}
	t0 := time.Now()
	for _, rep := range r.replicas {
		if err := r.kill(rep); err != nil {
			return false, "", err
		}
	}
	// The supervisor restarts them after its backoff.
	if _, why, err := r.waitFor(ctx, func(context.Context) (bool, string, error) {
		for _, s := range r.sb.ReplicaStatuses() {
			if s.Style == r.st && (!s.Running || s.Restarts <= r.restarts[s.Replica]) {
				return false, s.Name + " has not restarted", nil
			}
		}
		return true, "", nil
	}); err != nil {
		return outcome(0, err, "", why)
	}
	r.restarts = r.restartCounts() // the kills were ours
	up := time.Now()
	// Since the kill, not since up: a watcher that elects no leader makes
	// its list and watch as it starts, maybe before this loop saw it
	// running, and then nothing. (An answer the killed process never got,
	// code 0, is not the new one's.)
	if _, _, err := r.waitFor(ctx, func(context.Context) (bool, string, error) {
		return slices.ContainsFunc(r.rec.Requests(t0), func(q Request) bool { return q.Code != 0 }), "", nil
	}); err != nil {
		return outcome(0, err, "", fmt.Sprintf("it made no request %s after its restart (see its log, %s)", secs(r.waited), r.sb.LogFile(r.st, r.replicas[0])))
	}
	select {
	case <-ctx.Done():
		return false, "", ctx.Err()
	case <-time.After(r.opts.Settle):
	}
	after, err := r.versions(ctx)
	if err != nil {
		return false, "", err
	}
	var changed []string
	for name, v := range after {
		if before[name] != v {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	writes := 0
	for _, q := range r.rec.Requests(t0) {
		if q.Code != 0 && q.Write() && !q.Housekeeping() {
			writes++
		}
	}
	if len(changed) > 0 {
		return false, fmt.Sprintf("after a restart it changed %s although nothing had changed (%d writes in %s): compare with what is there before you write",
			strings.Join(changed, ", "), writes, secs(r.opts.Settle)), nil
	}
	if err := r.setReplicas(ctx, sample, 3); err != nil {
		return false, "", err
	}
	ok, why, err := r.follows(ctx, sample, "after the restart, spec.replicas 4 → 3")
	if !ok || err != nil {
		return ok, why, err
	}
	noop := ""
	if writes > 0 {
		noop = fmt.Sprintf(" (%d write requests changed nothing)", writes)
	}
	return true, fmt.Sprintf("restarted %s after the kill, no object changed in %s%s, then %s", secs(up.Sub(t0)), secs(r.opts.Settle), noop, why), nil
}

// kill kills replica rep, as a crash would. One that has already exited
// (crash looping) is left to its restart, which the check then waits for.
func (r *run) kill(rep string) error {
	err := r.sb.KillReplica(r.st.Source(rep))
	switch {
	case errors.Is(err, proc.ErrExited):
		return nil
	case err != nil:
		return fmt.Errorf("kill %s: %w", r.st.Source(rep), err)
	}
	r.killed[rep]++ // its failed exit is rlab's, not the operator's
	return nil
}

// versions are the resourceVersions of the Echoes and Deployments in the
// operator's namespace, by kind/name; not of the Deployment of an operator
// that runs in the cluster, whose status its restart changes.
func (r *run) versions(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	ds, err := r.kube.AppsV1().Deployments(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Deployments: %w", err)
	}
	for _, d := range ds.Items {
		if r.opts.InCluster && d.Labels[ship.LabelApp] == r.st.Operator() {
			continue
		}
		out["Deployment/"+d.Name] = d.ResourceVersion
	}
	es, err := r.echoes.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Echoes: %w", err)
	}
	for _, e := range es.Items {
		out["Echo/"+e.GetName()] = e.GetResourceVersion()
	}
	return out, nil
}

// restLimit is the request rate at rest above which an operator is busy
// doing nothing: ten requests a second.
const restLimit = 600

// rest: requests per minute while nothing changes.
func (r *run) rest(ctx context.Context) (bool, string, error) {
	if ok, why, err := r.settled(ctx, sample, "before the rest"); !ok || err != nil {
		return ok, why, err
	}
	if err := r.quiet(ctx); err != nil {
		return false, "", err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return false, "", ctx.Err()
	case <-time.After(r.opts.Rest):
	}
	n := map[string]int{}
	total, lease := 0, 0
	for _, q := range r.rec.Requests(t0) {
		if q.Time.After(t0.Add(r.opts.Rest)) {
			break
		}
		total++
		if q.Housekeeping() {
			lease++
		}
		n[q.Key()]++
	}
	perMin := float64(total) / r.opts.Rest.Minutes()
	how := "watching: nothing asked"
	switch {
	case n["list echoes"]+n["get echoes"] > 1:
		how = "polling"
	case total > lease:
		how = "acting on events"
	case lease > 0:
		how = "watching; the requests are leader election"
	}
	top := counted(n)
	if len(top) > 4 {
		top = top[:4]
	}
	reason := fmt.Sprintf("%.0f requests/min (%s)", perMin, how)
	if len(top) > 0 {
		reason += ": " + strings.Join(top, ", ")
	}
	if perMin > restLimit {
		return false, reason + fmt.Sprintf("; over %d/min at rest: it is working while nothing changes", restLimit), nil
	}
	return true, reason, nil
}

// selfReviews are the resources every authenticated user may create
// (ClusterRole system:basic-user).
var selfReviews = sets.New("selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews")

// courseRules are sandbox.CourseRules, built once: beyondCourse reads
// them for every request a check judges.
var courseRules = sandbox.CourseRules()

// beyondCourse says whether the course's Role would deny q. Discovery and
// the other non-resource paths are open to every authenticated user, and so
// is asking what one may do (system:basic-user: a Java Operator SDK manager
// asks before it elects a leader).
func beyondCourse(q Request) bool {
	if q.Resource == "discovery" || strings.HasPrefix(q.Resource, "/") || (q.Verb == "create" && selfReviews.Has(q.Resource)) {
		return false
	}
	_, name, _ := strings.Cut(q.Object, "/")
	for _, r := range courseRules {
		if slices.Contains(r.Resources, q.Resource) && slices.Contains(r.Verbs, q.Verb) &&
			(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, name)) {
			return false
		}
	}
	return true
}

// privilege: no request was denied, and none needed more than the course's
// Role (which matters when the operator runs with a wider one, or its own
// RBAC: see judgePrivilege).
func (r *run) privilege(ctx context.Context) (bool, string, error) {
	if err := r.quiet(ctx); err != nil { // what it does about the last change counts too
		return false, "", err
	}
	if r.opts.RBAC != nil {
		// Which requests were across all namespaces is half the verdict.
		if _, err := r.scope().load(); err != nil {
			return false, "", err
		}
	}
	qs, probes := r.requests(time.Time{})
	pass, reason := r.judgePrivilege(qs, probes)
	return pass, reason, nil
}

// writes are the requests that change Echoes or their children, oldest
// first.
func (r *run) writes() []Request {
	var out []Request
	for _, q := range r.rec.Requests(time.Time{}) {
		if q.Write() && !q.Housekeeping() {
			out = append(out, q)
		}
	}
	return out
}

// maxHandovers is how often writing may pass from one replica to another in
// a run: the restart check kills every replica once.
const maxHandovers = 2

// leader: one replica writes at a time. Writing passes from one replica to
// another only when the leader goes.
func (r *run) leader(ctx context.Context) (bool, string, error) {
	if err := r.quiet(ctx); err != nil {
		return false, "", err
	}
	ws := r.writes()
	handovers, by := 0, map[string]int{}
	for i, q := range ws {
		by[q.Replica]++
		if i > 0 && q.Replica != ws[i-1].Replica {
			handovers++
		}
	}
	var who []string
	for _, rep := range r.replicas {
		if by[rep] > 0 {
			who = append(who, fmt.Sprintf("%s %d", rep, by[rep]))
		}
	}
	switch {
	case len(ws) == 0:
		return false, "no replica wrote anything", nil
	case handovers > maxHandovers:
		return false, fmt.Sprintf("the replicas took turns writing %d times (writes: %s): elect a leader, so that only the one holding a Lease acts", handovers, strings.Join(who, ", ")), nil
	}
	return true, fmt.Sprintf("writes: %s; writing passed between replicas %d times (up to %d allowed: the restart check kills them all)", strings.Join(who, ", "), handovers, maxHandovers), nil
}

// failover: killing the replica that writes leaves the Echo in the hands
// of another.
func (r *run) failover(ctx context.Context) (bool, string, error) {
	if ok, why, err := r.settled(ctx, sample, "before the kill"); !ok || err != nil {
		return ok, why, err
	}
	ws := r.writes()
	if len(ws) == 0 {
		return false, "no replica wrote anything: no leader to kill", nil
	}
	leader := ws[len(ws)-1].Replica
	// A standby that crash-loops cannot take over, however well the leader
	// does after its own restart. (Once may be a Lease lost under load.)
	exits := r.exits()
	for _, rep := range r.replicas {
		if n := exits[rep]; n >= crashLoop && rep != leader {
			r.lost = true
			return false, fmt.Sprintf("%s exited %d time%s: it is no standby for %s", r.st.Source(rep), n, plural(int32(n)), r.st.Source(leader)), nil
		}
	}
	t0 := time.Now()
	if err := r.kill(leader); err != nil {
		return false, "", err
	}
	if err := r.setReplicas(ctx, sample, 2); err != nil {
		return false, "", err
	}
	ok, why, err := r.follows(ctx, sample, fmt.Sprintf("after %s was killed, spec.replicas → 2", r.st.Source(leader)))
	r.restarts = r.restartCounts()
	if !ok || err != nil {
		return ok, why, err
	}
	// The write that converged it may reach the log after the Deployment
	// changed: an audit log is read a moment behind the apiserver.
	var after string
	_ = poll.Until(ctx, 50*time.Millisecond, 5*time.Second, "", poll.True(func() bool {
		for _, q := range r.rec.Requests(t0) {
			if q.Write() && !q.Housekeeping() {
				after = q.Replica
				return true
			}
		}
		return false
	}))
	if after == "" {
		return true, fmt.Sprintf("%s was killed; the Echo converged %s after the kill (no write of a replica was seen yet)", leader, secs(time.Since(t0))), nil
	}
	if after == leader {
		return true, fmt.Sprintf("%s was killed; it restarted and acted again, %s after the kill (no standby took over first)", leader, secs(time.Since(t0))), nil
	}
	return true, fmt.Sprintf("%s was killed; %s took over and converged %s after the kill", leader, after, secs(time.Since(t0))), nil
}
