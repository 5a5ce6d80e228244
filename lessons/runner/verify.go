package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/checks"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/proxy"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/world"
)

// Baseline says whether the sandbox is as a lesson must find and leave it:
// in every style only the sample Echo with its message and 2 replicas,
// every replica running; in the built-in styles the sample 2/2 and its
// status about its current spec, its
// Deployment 2 ready, nothing orphaned, and the Go styles led.
func Baseline(sn world.Snapshot, running []string, styles []style.Style, replicasOf func(style.Style) []string) (bool, string) {
	var problems []string
	for _, st := range styles {
		name := st.String()
		ns := sn.Style(st)
		if ns == nil {
			problems = append(problems, name+": not watched")
			continue
		}
		for echoName := range ns.Echoes {
			if echoName != sandbox.SampleName {
				problems = append(problems, name+": extra Echo "+echoName)
			}
		}
		want := fmt.Sprintf("%d/%d", sandbox.SampleReplicas, sandbox.SampleReplicas)
		e := ns.Echoes[sandbox.SampleName]
		switch {
		case e == nil:
			problems = append(problems, name+": no Echo "+sandbox.SampleName)
		case e.Message != sandbox.SampleMessage || e.Replicas != sandbox.SampleReplicas:
			problems = append(problems, fmt.Sprintf("%s: %s is %q, %d replicas, ready %q", name, e.Name, e.Message, e.Replicas, e.Ready))
		case !st.Traits().Builtin:
			// The student's operator is graded by its lesson's checks: a
			// starter writes no status and owns nothing, and that is where
			// the lesson begins. Only the sample's spec must be as found.
		case e.Ready != want:
			problems = append(problems, fmt.Sprintf("%s: %s is %q, %d replicas, ready %q", name, e.Name, e.Message, e.Replicas, e.Ready))
		case !e.StatusCurrent():
			problems = append(problems, fmt.Sprintf("%s: %s's status is about generation %d, its spec is at %d", name, e.Name, e.ObservedGeneration, e.Generation))
		case e.Deployment == nil || e.Deployment.Replicas != sandbox.SampleReplicas || e.Deployment.ReadyReplicas != sandbox.SampleReplicas:
			problems = append(problems, name+": Deployment not 2/2")
		}
		for _, d := range ns.Orphans {
			if st.Traits().Builtin {
				problems = append(problems, name+": orphaned Deployment "+d.Name)
			}
		}
		if st.Traits().ElectsLeader && (ns.Lease == nil || ns.Lease.Holder == "") {
			problems = append(problems, name+": no leader")
		}
		var replicas []string
		for _, r := range replicasOf(st) {
			replicas = append(replicas, st.Source(r))
		}
		for _, r := range replicas {
			if !slices.Contains(running, r) {
				problems = append(problems, r+" not running")
			}
		}
		for _, r := range running {
			if style.FromSource(r) == st && !slices.Contains(replicas, r) {
				problems = append(problems, "extra replica "+r)
			}
		}
	}
	return len(problems) == 0, strings.Join(problems, "; ")
}

// AwaitBaseline waits until Baseline holds.
func (p *Player) AwaitBaseline(ctx context.Context) (string, error) {
	return p.awaitBaseline(ctx, nil)
}

// awaitBaseline waits until Baseline holds; tick, if not nil, gets what is
// missing each time it looks.
func (p *Player) awaitBaseline(ctx context.Context, tick func(why string)) (string, error) {
	// The operators may still be starting behind the screen (an Early
	// Start): nothing of theirs holds before they run.
	if err := p.sb.WaitOperators(ctx); err != nil {
		return "the operators to start", err
	}
	var last string
	for {
		var running []string
		for _, r := range p.sb.Operators().ReplicaStatuses() {
			if r.Running && !r.Paused {
				running = append(running, r.Name)
			}
		}
		ok, why := Baseline(p.sb.World().Snapshot(), running, p.sb.Styles(), p.sb.Operators().Replicas)
		if ok {
			return "", nil
		}
		last = why
		if tick != nil {
			tick(why)
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(p.Poll):
		}
	}
}

// Restore brings the sandbox back to its baseline after a lesson that
// failed half-way: every change a lesson can make is undone.
func (p *Player) Restore(ctx context.Context) error {
	// A reset may come while the operators still start behind the screen.
	if err := p.sb.WaitOperators(ctx); err != nil {
		return err
	}
	var errs []error
	for _, st := range p.sb.Styles() {
		for _, r := range p.sb.Operators().Replicas(st) {
			if px := p.sb.Faults().Proxy(st.Source(r)); px != nil {
				px.ClearFaults()
				px.SetMode(proxy.Normal)
				px.SetLatency(0)
			}
		}
		errs = append(errs, p.sb.Admin().ResetRole(ctx, st), p.sb.Operators().Resume(st))
		if st == style.Shell { // resumed first: a frozen loop does not stop
			errs = append(errs, p.sb.Operators().RemoveShellReplica())
		}
		if !st.Traits().Builtin { // shipped or another version swapped in: the starter again, here
			errs = append(errs, p.sb.Unship(ctx, st), p.sb.Customs().ResetCustom(st))
			continue
		}
		// Restarted with a flag a lesson set: restarted without it.
		if args, err := p.sb.Operators().ReplicaArgs(st.Source("a")); err == nil {
			if slices.Contains(args, "--finalizer") {
				errs = append(errs, p.sb.Flags().SetFinalizer(st, false))
			}
			if !st.Traits().Polls && slices.Contains(args, "--watch-owned=false") {
				errs = append(errs, p.sb.Flags().SetWatchOwned(st, true))
			}
			if slices.Contains(args, "--warmup") {
				errs = append(errs, p.sb.Flags().SetWarmup(st, false))
			}
			if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--generation-predicate") }) {
				errs = append(errs, p.sb.Flags().SetGenerationPredicate(st, echo.GenerationOff))
			}
			if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--defaults-cache") }) {
				errs = append(errs, p.sb.Flags().SetDefaultsCache(st, echo.DefaultsCacheAll))
			}
			if t, err := p.sb.Flags().Tuning(st); err != nil {
				errs = append(errs, err)
			} else if t != (sandbox.Tuning{}) {
				errs = append(errs, p.sb.Flags().SetTuning(st, sandbox.Tuning{}))
			}
		}
	}
	sn := p.sb.World().Snapshot()
	for _, st := range p.sb.Styles() {
		ns := sn.Style(st)
		if ns == nil {
			continue
		}
		for echoName := range ns.Echoes {
			if echoName != sandbox.SampleName {
				err := p.sb.Admin().Echoes(st).Delete(ctx, echoName, metav1.DeleteOptions{})
				if !apierrors.IsNotFound(err) {
					errs = append(errs, err)
				}
			}
		}
		// The ConfigMaps a lesson made (echo-defaults, say); the registry
		// and the cluster's kube-root-ca.crt stay.
		if cms, err := p.sb.Admin().Kube().CoreV1().ConfigMaps(p.sb.Namespace(st)).List(ctx, metav1.ListOptions{}); err != nil {
			errs = append(errs, err)
		} else {
			for _, cm := range cms.Items {
				if cm.Name == echo.RegistryName || cm.Name == "kube-root-ca.crt" {
					continue
				}
				err := p.sb.Admin().Kube().CoreV1().ConfigMaps(p.sb.Namespace(st)).Delete(ctx, cm.Name, metav1.DeleteOptions{})
				if !apierrors.IsNotFound(err) {
					errs = append(errs, err)
				}
			}
		}
		// The orphans (any Deployment with no owner, as Baseline counts
		// them), and every Echo's Deployment but the sample's: one the
		// garbage collector is still orphaning (an Echo deleted with
		// --cascade=orphan a moment ago) is no orphan in a snapshot yet.
		deps := p.sb.Admin().Kube().AppsV1().Deployments(p.sb.Namespace(st))
		gone := map[string]bool{}
		for _, d := range ns.Orphans {
			gone[d.Name] = true
		}
		if dl, err := deps.List(ctx, metav1.ListOptions{LabelSelector: echo.LabelKey}); err != nil {
			errs = append(errs, err)
		} else {
			for _, d := range dl.Items {
				gone[d.Name] = d.Name != echo.DeploymentName(sandbox.SampleName)
			}
		}
		for name, del := range gone {
			if !del {
				continue
			}
			if err := deps.Delete(ctx, name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	// Lesson 16's admission policy, before the sample's spec: it would
	// refuse more replicas than it allows.
	// Lesson 19's webhook, before the sample too: with its server down it
	// would refuse every edit in controller-runtime's namespace.
	errs = append(errs, p.sb.Admin().DeletePolicy(ctx), p.sb.Admin().DeleteWebhook(ctx), p.sb.Admin().ResetSample(ctx))
	return errors.Join(errs...)
}

// LessonResult is how one autoplayed lesson went.
type LessonResult struct {
	Lesson *lessons.Lesson
	Took   time.Duration
	Err    error
}

// Verify autoplays each lesson in turn, or with hand follows it by hand
// on the screen's Session (handLesson); every step's check must pass, and each lesson must leave the
// sandbox at its baseline. It writes a line per step and per lesson to out.
func (p *Player) Verify(ctx context.Context, ls []*lessons.Lesson, hand *Hand, out io.Writer) []LessonResult {
	var results []LessonResult
	for _, l := range ls {
		t0 := time.Now()
		fmt.Fprintf(out, "lesson %d: %s\n", l.Number, l.Title)
		err := p.verifyOne(ctx, l, hand, out)
		r := LessonResult{Lesson: l, Took: time.Since(t0), Err: err}
		if err != nil {
			fmt.Fprintf(out, "FAIL lesson %d %s in %s: %v\n", l.Number, l.Slug, checks.Secs(r.Took), err)
			// What the operators did last, to see why.
			for _, e := range p.Tail(30) {
				fmt.Fprintf(out, "  | %s\n", e.Line())
			}
			rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			if err := p.Restore(rctx); err != nil {
				fmt.Fprintf(out, "  restore: %v\n", err)
			}
			if why, err := p.AwaitBaseline(rctx); err != nil {
				fmt.Fprintf(out, "  sandbox not restored: %s\n", why)
			}
			cancel()
		} else {
			fmt.Fprintf(out, "ok   lesson %d %s in %s\n", l.Number, l.Slug, checks.Secs(r.Took))
		}
		results = append(results, r)
		if ctx.Err() != nil {
			break
		}
	}
	return results
}

// playLesson autoplays each step of l in turn and awaits its check; it
// writes a line per step to out.
func (p *Player) playLesson(ctx context.Context, l *lessons.Lesson, out io.Writer) error {
	for i := range l.Steps {
		s := &l.Steps[i]
		r, err := p.PlayStep(ctx, s)
		if err != nil {
			return fmt.Errorf("step %d %q: %w", i+1, s.Title, err)
		}
		fmt.Fprintf(out, "  step %d/%d %-44s ok %6s  %s\n", i+1, len(l.Steps), s.Title, checks.Secs(r.Took), r.Detail)
	}
	return nil
}

func (p *Player) verifyOne(ctx context.Context, l *lessons.Lesson, hand *Hand, out io.Writer) error {
	bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if why, err := p.AwaitBaseline(bctx); err != nil {
		return fmt.Errorf("the sandbox is not at its baseline before the lesson: %s", why)
	}
	follow := p.playLesson
	if hand != nil {
		follow = func(ctx context.Context, l *lessons.Lesson, out io.Writer) error {
			return p.handLesson(ctx, l, *hand, out)
		}
	}
	if err := follow(ctx, l, out); err != nil {
		return err
	}
	// A bound of its own: a lesson longer than the first bound would get
	// one look, and fail on a Lease that changes hands just then.
	actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if why, err := p.AwaitBaseline(actx); err != nil {
		return fmt.Errorf("the lesson left the sandbox changed: %s", why)
	}
	return nil
}
