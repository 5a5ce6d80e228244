package lessons

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/proxy"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/world"
)

// Player plays lessons against a running sandbox: it performs the steps'
// actions (autoplay) and evaluates their checks over the world model and
// the trace events seen since each step began.
type Player struct {
	sb   *sandbox.Sandbox
	sub  *bus.Sub
	stop chan struct{}
	done chan struct{}
	// Poll is how often a check is evaluated while it waits.
	Poll time.Duration

	mu     sync.Mutex
	events []trace.Event                // since the current step began
	byKind map[trace.Kind][]trace.Event // the same, by kind
	began  time.Time
	seq    int // annotation values, so every write changes the Echo
}

// NewPlayer subscribes to the sandbox's trace. Close it when done.
func NewPlayer(sb *sandbox.Sandbox) *Player {
	p := &Player{sb: sb, sub: sb.Bus().Subscribe(1 << 16), stop: make(chan struct{}), done: make(chan struct{}),
		Poll: 100 * time.Millisecond}
	go p.record()
	return p
}

// Close stops recording.
func (p *Player) Close() {
	close(p.stop)
	<-p.done
	p.sub.Close()
}

func (p *Player) record() {
	defer close(p.done)
	for {
		select {
		case <-p.sub.Wait():
			evs, _ := p.sub.Drain()
			p.mu.Lock()
			p.keep(evs)
			p.mu.Unlock()
		case <-p.stop:
			return
		}
	}
}

// Begin starts a step: events from now on are the step's, and the Lease
// holders of now are the ones a new leader is compared with.
func (p *Player) Begin() (began time.Time, holders map[string]string) {
	// Whatever is pending was published before the step began.
	_, _ = p.sub.Drain()
	now := time.Now()
	p.mu.Lock()
	p.events, p.byKind, p.began = nil, map[trace.Kind][]trace.Event{}, now
	p.mu.Unlock()
	holders = map[string]string{}
	sn := p.sb.World().Snapshot()
	for _, st := range p.sb.Styles() {
		if ns := sn.Namespaces[sandbox.Namespace(st)]; ns != nil && ns.Lease != nil {
			holders[st] = ns.Lease.Holder
		}
	}
	return now, holders
}

// View is what the checks see now.
func (p *Player) View(began, acted time.Time, holders map[string]string) View {
	// Take what the bus holds first, so nothing published before now is missed.
	evs, _ := p.sub.Drain()
	p.mu.Lock()
	p.keep(evs)
	// No copies: keep only appends, so the first len elements never change
	// (an append past cap moves to a new array; Begin starts new ones).
	events := p.events[:len(p.events):len(p.events)]
	byKind := make(map[trace.Kind][]trace.Event, len(p.byKind))
	for k, l := range p.byKind {
		byKind[k] = l[:len(l):len(l)]
	}
	p.mu.Unlock()
	return View{
		Snapshot: p.sb.World().Snapshot(),
		Events:   events,
		Began:    began, Acted: acted, Now: time.Now(),
		Holders:  holders,
		Replicas: p.sb.Supervisor().Statuses(),
		ByKind:   byKind,
	}
}

// keep records the events of the current step. p.mu is held.
func (p *Player) keep(evs []trace.Event) {
	if p.byKind == nil {
		p.byKind = map[trace.Kind][]trace.Event{}
	}
	for _, e := range evs {
		if !e.Time.Before(p.began) {
			p.events = append(p.events, e)
			p.byKind[e.Kind] = append(p.byKind[e.Kind], e)
		}
	}
}

// Await evaluates c until it holds (for c.Hold if set), ctx ends, or it can
// never pass. tick, if not nil, gets every outcome.
func (p *Player) Await(ctx context.Context, c *Check, began, acted time.Time, holders map[string]string, tick func(Outcome)) (Outcome, error) {
	t := time.NewTicker(p.Poll)
	defer t.Stop()
	var holding time.Time
	var last Outcome
	for {
		last = c.Eval(p.View(began, acted, holders))
		if tick != nil {
			tick(last)
		}
		switch {
		case last.Final:
			return last, errors.New("can no longer pass: " + last.Detail)
		case !last.OK:
			holding = time.Time{}
		case c.Hold == 0:
			return last, nil
		case holding.IsZero():
			holding = time.Now()
		case time.Since(holding) >= c.Hold:
			return last, nil
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-t.C:
		}
	}
}

// StepResult is how one autoplayed step went.
type StepResult struct {
	Took   time.Duration
	Detail string
}

// PlayStep autoplays one step: its action, then its check within its deadline.
func (p *Player) PlayStep(ctx context.Context, s *Step) (StepResult, error) {
	began, holders := p.Begin()
	if s.Action != nil {
		for _, op := range s.Action.Play {
			if err := p.Do(ctx, op); err != nil {
				return StepResult{Took: time.Since(began)}, fmt.Errorf("%s (line %d): %w", op.Name, op.Line, err)
			}
		}
	}
	acted := time.Now()
	if s.Check == nil {
		return StepResult{Took: time.Since(began)}, nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.Check.Within)
	defer cancel()
	out, err := p.Await(cctx, s.Check, began, acted, holders, nil)
	res := StepResult{Took: time.Since(began), Detail: out.Detail}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("check not passed within %s: %s", s.Check.Within, out.Detail)
		}
		return res, err
	}
	return res, nil
}

func (p *Player) styles(style string) []string {
	var out []string
	for _, st := range ExpandStyle(style) {
		if slices.Contains(p.sb.Styles(), st) {
			out = append(out, st)
		}
	}
	return out
}

// forEach runs fn for each style in turn.
func (p *Player) forEach(style string, fn func(st string) error) error {
	for _, st := range p.styles(style) {
		if err := fn(st); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	return nil
}

// leader waits (a bounded while) until someone holds st's Lease.
func (p *Player) leader(ctx context.Context, st string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		name, _, err := p.sb.Leader(ctx, st)
		if err == nil {
			return name, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no leader: %w", err)
		case <-time.After(p.Poll):
		}
	}
}

// Do performs one action, and checks the apiserver's refusal if the lesson
// expects one.
func (p *Player) Do(ctx context.Context, op Op) error {
	err := p.do(ctx, op)
	want := op.Args.Str("expect_error")
	if want == "" {
		return err
	}
	got := map[string]func(error) bool{"invalid": apierrors.IsInvalid, "conflict": apierrors.IsConflict, "forbidden": apierrors.IsForbidden}[want]
	if err == nil {
		return fmt.Errorf("want the apiserver to refuse it (%s), and it did not", want)
	}
	if !got(err) {
		return fmt.Errorf("want a %s error, got: %w", want, err)
	}
	return nil
}

func (p *Player) do(ctx context.Context, op Op) error {
	a := op.Args
	name := a.Str("name")
	n, _ := a.Int("replicas")
	switch op.Name {
	case "create_echo":
		return p.sb.CreateEcho(ctx, name, a.Str("message"), n)
	case "delete_echo":
		if a.Str("cascade") == "orphan" {
			return p.sb.DeleteEchoOrphan(ctx, name)
		}
		return p.sb.DeleteEcho(ctx, name)
	case "set_replicas":
		return p.sb.SetReplicas(ctx, name, n)
	case "set_message":
		return p.sb.SetMessage(ctx, name, a.Str("message"))
	case "burst_messages":
		count, _ := a.Int("count")
		for i := 1; i <= count; i++ {
			if err := p.sb.SetMessage(ctx, name, fmt.Sprintf("burst %d of %d", i, count)); err != nil {
				return err
			}
		}
		return nil
	case "annotate":
		end := time.Now().Add(a.Dur("for"))
		every := a.Dur("every")
		if every == 0 {
			every = 50 * time.Millisecond
		}
		for {
			if err := p.annotate(ctx, name); err != nil {
				return err
			}
			if time.Now().Add(every).After(end) {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(every):
			}
		}
	case "stale_update":
		return p.forEach(StyleAll, func(st string) error { return p.staleUpdate(ctx, st, name) })
	case "delete_deployment":
		return p.forEach(a.Str("style"), func(st string) error { return p.sb.DeleteDeployment(ctx, st, name) })
	case "scale_deployment":
		return p.forEach(a.Str("style"), func(st string) error { return p.sb.ScaleDeployment(ctx, st, name, n) })
	case "watch_owned":
		return p.forEach(a.Str("style"), func(st string) error { return p.sb.SetWatchOwned(st, a.Bool("watch")) })
	case "kill_leader", "stop_leader":
		return p.forEach(a.Str("style"), func(st string) error {
			if _, err := p.leader(ctx, st); err != nil {
				return err
			}
			var err error
			if op.Name == "kill_leader" {
				_, err = p.sb.KillLeader(ctx, st)
			} else {
				_, err = p.sb.StopLeader(ctx, st)
			}
			return err
		})
	case "partition_leader":
		mode := proxy.Refuse
		if a.Str("mode") == "hang" {
			mode = proxy.Hang
		}
		return p.forEach(a.Str("style"), func(st string) error {
			who, err := p.leader(ctx, st)
			if err != nil {
				return err
			}
			return p.sb.Partition(who, mode)
		})
	case "heal":
		return p.forEach(a.Str("style"), func(st string) error {
			for _, r := range sandbox.Replicas(st) {
				if err := p.sb.Partition(st+"/"+r, proxy.Normal); err != nil {
					return err
				}
			}
			return nil
		})
	case "set_latency":
		d, err := time.ParseDuration(a.Str("latency"))
		if err != nil {
			return err
		}
		return p.forEach(a.Str("style"), func(st string) error {
			for _, r := range sandbox.Replicas(st) {
				px := p.sb.Proxy(st + "/" + r)
				if px == nil {
					return fmt.Errorf("no proxy for %s/%s", st, r)
				}
				px.SetLatency(d)
			}
			return nil
		})
	case "role_verbs":
		return p.forEach(a.Str("style"), func(st string) error {
			return p.sb.SetRoleVerbs(ctx, st, a.Str("resource"), a.List("verbs"))
		})
	case "role_reset":
		return p.forEach(a.Str("style"), func(st string) error { return p.sb.ResetRole(ctx, st) })
	case "finalizer":
		return p.forEach(a.Str("style"), func(st string) error { return p.sb.SetFinalizer(st, a.Bool("on")) })
	case "add_shell_replica":
		return p.sb.AddShellReplica(a.Str("suffix"))
	case "remove_shell_replica":
		return p.sb.RemoveShellReplica()
	case "pause_operators":
		return p.forEach(a.Str("style"), p.sb.PauseOperators)
	case "resume_operators":
		return p.forEach(a.Str("style"), p.sb.ResumeOperators)
	}
	return fmt.Errorf("unknown action %q", op.Name) // the loader lets none through
}

// Annotation is what the lessons write to touch an Echo without changing
// its spec.
const Annotation = "lessons.rlab.kkloud.io/touch"

func (p *Player) annotate(ctx context.Context, name string) error {
	p.mu.Lock()
	p.seq++
	v := strconv.Itoa(p.seq)
	p.mu.Unlock()
	patch := []byte(`{"metadata":{"annotations":{"` + Annotation + `":"` + v + `"}}}`)
	var wg sync.WaitGroup
	errs := make([]error, len(p.sb.Styles()))
	for i, st := range p.sb.Styles() {
		wg.Go(func() {
			_, errs[i] = p.sb.Dynamic().Resource(echov1.Resource).Namespace(sandbox.Namespace(st)).
				Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-annotate"})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// staleUpdate is `kubectl get -o yaml > f; (someone edits); kubectl replace -f f`:
// an update carrying a resourceVersion that is no longer current must be
// refused with 409 Conflict.
func (p *Player) staleUpdate(ctx context.Context, st, name string) error {
	echoes := p.sb.Dynamic().Resource(echov1.Resource).Namespace(sandbox.Namespace(st))
	old, err := echoes.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := p.annotate(ctx, name); err != nil {
		return err
	}
	_, err = echoes.Update(ctx, old, metav1.UpdateOptions{FieldManager: "kubectl-replace"})
	if err == nil {
		return errors.New("an update with a stale resourceVersion was accepted")
	}
	if !apierrors.IsConflict(err) {
		return fmt.Errorf("want 409 Conflict, got: %w", err)
	}
	return nil
}

// Baseline says whether the sandbox is as a lesson must find and leave it:
// in every style only the sample Echo, 2/2 with its message, its
// Deployment 2 ready and nothing orphaned; every replica running and the
// Go styles led.
func Baseline(sn world.Snapshot, running []string, styles []string) (bool, string) {
	var problems []string
	for _, st := range styles {
		ns := sn.Namespaces[sandbox.Namespace(st)]
		if ns == nil {
			problems = append(problems, st+": not watched")
			continue
		}
		for name := range ns.Echoes {
			if name != sandbox.SampleName {
				problems = append(problems, st+": extra Echo "+name)
			}
		}
		want := fmt.Sprintf("%d/%d", sandbox.SampleReplicas, sandbox.SampleReplicas)
		e := ns.Echoes[sandbox.SampleName]
		switch {
		case e == nil:
			problems = append(problems, st+": no Echo "+sandbox.SampleName)
		case e.Ready != want || e.Message != sandbox.SampleMessage || e.Replicas != sandbox.SampleReplicas:
			problems = append(problems, fmt.Sprintf("%s: %s is %q, %d replicas, ready %q", st, e.Name, e.Message, e.Replicas, e.Ready))
		case e.Deployment == nil || e.Deployment.Replicas != sandbox.SampleReplicas || e.Deployment.ReadyReplicas != sandbox.SampleReplicas:
			problems = append(problems, st+": Deployment not 2/2")
		}
		for _, d := range ns.Orphans {
			problems = append(problems, st+": orphaned Deployment "+d.Name)
		}
		if st != sandbox.Shell && (ns.Lease == nil || ns.Lease.Holder == "") {
			problems = append(problems, st+": no leader")
		}
		for _, r := range sandbox.Replicas(st) {
			if !slices.Contains(running, st+"/"+r) {
				problems = append(problems, st+"/"+r+" not running")
			}
		}
		for _, name := range running {
			if r, ok := strings.CutPrefix(name, st+"/"); ok && !slices.Contains(sandbox.Replicas(st), r) {
				problems = append(problems, "extra replica "+name)
			}
		}
	}
	return len(problems) == 0, strings.Join(problems, "; ")
}

// AwaitBaseline waits until Baseline holds.
func (p *Player) AwaitBaseline(ctx context.Context) (string, error) {
	var last string
	for {
		var running []string
		for _, r := range p.sb.Supervisor().Statuses() {
			if r.Running && !r.Paused {
				running = append(running, r.Name)
			}
		}
		ok, why := Baseline(p.sb.World().Snapshot(), running, p.sb.Styles())
		if ok {
			return "", nil
		}
		last = why
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
	var errs []error
	for _, st := range p.sb.Styles() {
		for _, r := range sandbox.Replicas(st) {
			if px := p.sb.Proxy(st + "/" + r); px != nil {
				px.SetMode(proxy.Normal)
				px.SetLatency(0)
			}
		}
		errs = append(errs, p.sb.ResetRole(ctx, st), p.sb.ResumeOperators(st))
		if st == sandbox.Shell {
			errs = append(errs, p.sb.RemoveShellReplica())
		}
		if spec, err := p.sb.Supervisor().Spec(st + "/a"); err == nil && slices.Contains(spec.Args, "--finalizer") {
			errs = append(errs, p.sb.SetFinalizer(st, false))
		}
		if st != sandbox.Shell {
			spec, err := p.sb.Supervisor().Spec(st + "/a")
			if err == nil && slices.Contains(spec.Args, "--watch-owned=false") {
				errs = append(errs, p.sb.SetWatchOwned(st, true))
			}
		}
	}
	sn := p.sb.World().Snapshot()
	for _, st := range p.sb.Styles() {
		ns := sn.Namespaces[sandbox.Namespace(st)]
		if ns == nil {
			continue
		}
		for name := range ns.Echoes {
			if name != sandbox.SampleName {
				err := p.sb.Dynamic().Resource(echov1.Resource).Namespace(sandbox.Namespace(st)).Delete(ctx, name, metav1.DeleteOptions{})
				if !apierrors.IsNotFound(err) {
					errs = append(errs, err)
				}
			}
		}
		for _, d := range ns.Orphans {
			err := p.sb.Kube().AppsV1().Deployments(sandbox.Namespace(st)).Delete(ctx, d.Name, metav1.DeleteOptions{})
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	errs = append(errs,
		p.sb.SetReplicas(ctx, sandbox.SampleName, sandbox.SampleReplicas),
		p.sb.SetMessage(ctx, sandbox.SampleName, sandbox.SampleMessage))
	return errors.Join(errs...)
}

// tail is the step's last n events, but for the Lease renewals that fill
// any quiet moment.
func (p *Player) tail(n int) []trace.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []trace.Event
	for i := len(p.events) - 1; i >= 0 && len(out) < n; i-- {
		if e := p.events[i]; !(e.Kind == trace.APIRequest && e.Str("resource") == "leases") {
			out = append(out, e)
		}
	}
	slices.Reverse(out)
	return out
}

// LessonResult is how one autoplayed lesson went.
type LessonResult struct {
	Lesson *Lesson
	Took   time.Duration
	Err    error
}

// Verify autoplays each lesson in turn, every step's check must pass, and
// each must leave the sandbox at its baseline. It writes a line per step
// and per lesson to out.
func (p *Player) Verify(ctx context.Context, ls []*Lesson, out io.Writer) []LessonResult {
	var results []LessonResult
	for _, l := range ls {
		t0 := time.Now()
		fmt.Fprintf(out, "lesson %d: %s\n", l.Number, l.Title)
		err := p.verifyOne(ctx, l, out)
		r := LessonResult{Lesson: l, Took: time.Since(t0), Err: err}
		if err != nil {
			fmt.Fprintf(out, "FAIL lesson %d %s in %s: %v\n", l.Number, l.Slug, secs(r.Took), err)
			// What the operators did last, to see why.
			for _, e := range p.tail(30) {
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
			fmt.Fprintf(out, "ok   lesson %d %s in %s\n", l.Number, l.Slug, secs(r.Took))
		}
		results = append(results, r)
		if ctx.Err() != nil {
			break
		}
	}
	return results
}

func (p *Player) verifyOne(ctx context.Context, l *Lesson, out io.Writer) error {
	bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if why, err := p.AwaitBaseline(bctx); err != nil {
		return fmt.Errorf("the sandbox is not at its baseline before the lesson: %s", why)
	}
	for i := range l.Steps {
		s := &l.Steps[i]
		r, err := p.PlayStep(ctx, s)
		if err != nil {
			return fmt.Errorf("step %d %q: %w", i+1, s.Title, err)
		}
		fmt.Fprintf(out, "  step %d/%d %-44s ok %6s  %s\n", i+1, len(l.Steps), s.Title, secs(r.Took), r.Detail)
	}
	if why, err := p.AwaitBaseline(bctx); err != nil {
		return fmt.Errorf("the lesson left the sandbox changed: %s", why)
	}
	return nil
}
