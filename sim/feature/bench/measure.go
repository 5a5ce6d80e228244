// Package bench measures a running sandbox the way `rlab bench` reports it:
// edit → converged, drift → repaired, garbage collection, failover, API cost
// at rest and per edit, N Echoes per style to converged, and what the
// sandbox's processes cost at rest. Every figure is a view of something that
// happened in the apiserver, observed by the world, the proxies or the trace.
package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/proxy"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/supervisor"
	"github.com/kkloud/rlab/sim/world"
)

// Dist summarises repeated timings.
type Dist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
	Max float64 `json:"max_ms"`
}

// NewDist summarises ds (nearest-rank percentiles).
func NewDist(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) float64 { return ms(s[int(float64(len(s)-1)*p)]) }
	return Dist{N: len(s), P50: at(0.5), P95: at(0.95), Max: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Median of xs, the mean of the middle two for an even count (0 if empty):
// of milliseconds in the report, of durations in the kwokctl rounds.
func Median[T ~float64 | ~int64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// What Bench uses of the sandbox's parts, each as small as it is used.
type (
	// engine is the sandbox itself: the styles running, their
	// namespaces, and the trace.
	engine interface {
		Styles() []style.Style
		Namespace(style.Style) string
		Bus() *bus.Bus
	}
	// liveModel is the world's live model of the style namespaces.
	liveModel interface {
		Snapshot() world.Snapshot
		WaitFor(ctx context.Context, cond func(world.Snapshot) bool) error
		Settling() int
	}
	// replicas are the operator replicas, and their leaders.
	replicas interface {
		Replicas(style.Style) []string
		Leader(ctx context.Context, st style.Style) (string, *coordinationv1.Lease, error)
		KillLeader(ctx context.Context, st style.Style) (string, error)
		StopLeader(ctx context.Context, st style.Style) (string, error)
		ReplicaStatuses() []supervisor.Status
	}
	// proxies are the replicas' counting proxies.
	proxies interface {
		Proxy(name string) *proxy.Proxy
	}
	// tuner restarts a style's replicas with other workers and limits.
	tuner interface {
		SetTuning(st style.Style, t sandbox.Tuning) error
	}
	// student are the student's edits the measures time.
	student interface {
		SetReplicas(ctx context.Context, name string, replicas int) error
		ScaleDeployment(ctx context.Context, only style.Style, name string, replicas int) error
		CreateEcho(ctx context.Context, name, message string, replicas int) error
		DeleteEcho(ctx context.Context, name string) error
	}
	// loader is rlab's own: the load of the scale measure, and reads.
	loader interface {
		Kube() kubernetes.Interface
		CreateEchoes(ctx context.Context, styles []style.Style, prefix string, count, replicas int, message string) error
		DeleteEchoes(ctx context.Context, styles []style.Style, prefix string) error
	}
)

// Bench measures one running sandbox. Create it before the measurements, so
// that its trace recorder sees every event.
type Bench struct {
	sb       engine
	world    liveModel
	replicas replicas
	proxies  proxies
	flags    tuner
	student  student
	admin    loader
	col      *bus.Collector
	mu       sync.Mutex
	seen     []trace.Event // drift.repaired, the only kind read back
	// tuned is what the last Tune set, nil before any.
	tuned *tuned
}

// New starts recording sb's trace; Close stops it.
func New(sb *sandbox.Sandbox) *Bench {
	b := &Bench{sb: sb, world: sb.World(), replicas: sb.Operators(), proxies: sb.Faults(), flags: sb.Flags(),
		student: sb.Student(), admin: sb.Admin()}
	b.col = sb.Bus().Collect(1<<16, func(events []trace.Event, _ int) {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range events {
			if e.Kind == trace.DriftRepaired {
				b.seen = append(b.seen, e)
			}
		}
	})
	return b
}

// Close stops recording.
func (b *Bench) Close() { b.col.Close() }

func echoOf(sn world.Snapshot, st style.Style, name string) *world.EchoView {
	if ns := sn.Style(st); ns != nil {
		return ns.Echoes[name]
	}
	return nil
}

// converged: the Echo's Deployment has replicas Ready and its status says so.
func converged(sn world.Snapshot, st style.Style, name string, replicas int32) bool {
	e := echoOf(sn, st, name)
	return e != nil && e.Deployment != nil && e.Deployment.Replicas == replicas &&
		e.Deployment.ReadyReplicas == replicas && e.Ready == fmt.Sprintf("%d/%d", replicas, replicas)
}

// apiTotals is each style's requests so far, all replicas together.
func (b *Bench) apiTotals() map[style.Style]int {
	out := map[style.Style]int{}
	for _, st := range b.sb.Styles() {
		for _, r := range b.replicas.Replicas(st) {
			if p := b.proxies.Proxy(st.Source(r)); p != nil {
				out[st] += p.Total()
			}
		}
	}
	return out
}

// leaseTotals is each style's Lease requests so far.
func (b *Bench) leaseTotals() map[style.Style]int {
	out := map[style.Style]int{}
	for _, st := range b.sb.Styles() {
		for _, r := range b.replicas.Replicas(st) {
			p := b.proxies.Proxy(st.Source(r))
			if p == nil {
				continue
			}
			for k, n := range p.Counts() {
				if strings.HasSuffix(k, " leases") {
					out[st] += n
				}
			}
		}
	}
	return out
}

// timeEach runs act, then times each style until each of conds holds for
// it: out[i][st] is when conds[i] first held for style st.
func (b *Bench) timeEach(ctx context.Context, act func() error, conds ...func(sn world.Snapshot, st style.Style) bool) ([]map[style.Style]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var (
		mu   sync.Mutex
		out  = make([]map[style.Style]time.Duration, len(conds))
		errs []error
		wg   sync.WaitGroup
	)
	for i := range out {
		out[i] = map[style.Style]time.Duration{}
	}
	t0 := time.Now()
	if err := act(); err != nil {
		return nil, err
	}
	for i, cond := range conds {
		for _, st := range b.sb.Styles() {
			wg.Go(func() {
				err := b.world.WaitFor(ctx, func(sn world.Snapshot) bool { return cond(sn, st) })
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", st, err))
					return
				}
				out[i][st] = time.Since(t0)
			})
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return out, nil
}

// EditResult is edit → converged per style, and what an edit cost.
type EditResult struct {
	// Converge is until the operator caught up: its Deployment asks for the
	// new replicas and its status says "x/n" (the world's echo.converged).
	Converge map[style.Style]Dist `json:"converge"`
	// Ready is until every Pod is Ready and the status says "n/n": the
	// controller manager, the scheduler and the kubelet (kwok) in the path.
	Ready map[style.Style]Dist `json:"ready"`
	// APIPerEdit leaves the Lease's renewals out: Idle counts those.
	APIPerEdit map[style.Style]float64 `json:"api_requests_per_edit"`
}

// Edits changes the sample's replicas (2↔3) reps times and times each style
// from the edit until it caught up, and until it reports every Pod Ready.
func (b *Bench) Edits(ctx context.Context, reps int) (EditResult, error) {
	caught := map[style.Style][]time.Duration{}
	ready := map[style.Style][]time.Duration{}
	before, lbefore := b.apiTotals(), b.leaseTotals()
	for i := range reps {
		n := int32(3 - i%2)
		res, err := b.timeEach(ctx, func() error { return b.student.SetReplicas(ctx, sandbox.SampleName, int(n)) },
			func(sn world.Snapshot, st style.Style) bool { return caughtUp(sn, st, sandbox.SampleName, n) },
			func(sn world.Snapshot, st style.Style) bool { return converged(sn, st, sandbox.SampleName, n) })
		if err != nil {
			return EditResult{}, fmt.Errorf("edit %d: %w", i+1, err)
		}
		for st, d := range res[0] {
			caught[st] = append(caught[st], d)
		}
		for st, d := range res[1] {
			ready[st] = append(ready[st], d)
		}
	}
	after, lafter := b.apiTotals(), b.leaseTotals()
	out := EditResult{Converge: map[style.Style]Dist{}, Ready: map[style.Style]Dist{}, APIPerEdit: map[style.Style]float64{}}
	for _, st := range b.sb.Styles() {
		out.Converge[st] = NewDist(caught[st])
		out.Ready[st] = NewDist(ready[st])
		// The Lease's renewals go on meanwhile; they are counted at rest.
		n := (after[st] - before[st]) - (lafter[st] - lbefore[st])
		out.APIPerEdit[st] = float64(n) / float64(reps)
	}
	if err := b.student.SetReplicas(ctx, sandbox.SampleName, sandbox.SampleReplicas); err != nil {
		return out, err
	}
	return out, b.settle(ctx)
}

// caughtUp: the operator has done its part of an edit to n replicas: the
// Deployment asks for n and the status is written for n ("x/n").
func caughtUp(sn world.Snapshot, st style.Style, name string, n int32) bool {
	e := echoOf(sn, st, name)
	return e != nil && e.Deployment != nil && e.Deployment.Replicas == n && strings.HasSuffix(e.Ready, fmt.Sprintf("/%d", n))
}

// settle waits until the sample is converged at its own replicas everywhere
// and the world expects nothing more.
func (b *Bench) settle(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return b.world.WaitFor(ctx, func(sn world.Snapshot) bool {
		for _, st := range b.sb.Styles() {
			if !converged(sn, st, sandbox.SampleName, sandbox.SampleReplicas) {
				return false
			}
		}
		return b.world.Settling() == 0
	})
}

// Drift scales the sample's Deployments to 1 by hand reps times and times
// each style until the world saw the drift repaired (drift.repaired): a fast
// repair can come before a snapshot shows the drift at all.
func (b *Bench) Drift(ctx context.Context, reps int) (map[style.Style]Dist, error) {
	got := map[style.Style][]time.Duration{}
	for i := range reps {
		if err := b.settle(ctx); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := b.student.ScaleDeployment(ctx, "", sandbox.SampleName, 1); err != nil {
			return nil, err
		}
		for _, st := range b.sb.Styles() {
			var d time.Duration
			err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				b.mu.Lock()
				defer b.mu.Unlock()
				for _, e := range b.seen {
					if e.Namespace == b.sb.Namespace(st) && e.Time.After(t0) {
						d = e.Time.Sub(t0)
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				return nil, fmt.Errorf("drift %d: %s: no drift.repaired within a minute", i+1, st)
			}
			got[st] = append(got[st], d)
		}
	}
	out := map[style.Style]Dist{}
	for st, ds := range got {
		out[st] = NewDist(ds)
	}
	return out, b.settle(ctx)
}

// GC creates and deletes an Echo reps times and times each style from the
// delete until the garbage collector has removed its Deployment and Pods.
func (b *Bench) GC(ctx context.Context, reps int) (map[style.Style]Dist, error) {
	const name = "gcbench"
	got := map[style.Style][]time.Duration{}
	for i := range reps {
		if _, err := b.timeEach(ctx, func() error { return b.student.CreateEcho(ctx, name, "collect me", 2) },
			func(sn world.Snapshot, st style.Style) bool { return converged(sn, st, name, 2) }); err != nil {
			return nil, fmt.Errorf("gc %d: create: %w", i+1, err)
		}
		t0 := time.Now()
		if err := b.student.DeleteEcho(ctx, name); err != nil {
			return nil, err
		}
		done := map[style.Style]bool{}
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			sn := b.world.Snapshot()
			for _, st := range b.sb.Styles() {
				if done[st] || echoOf(sn, st, name) != nil || len(sn.Style(st).Orphans) > 0 {
					continue
				}
				pods, err := b.admin.Kube().CoreV1().Pods(b.sb.Namespace(st)).List(ctx, metav1.ListOptions{LabelSelector: echo.LabelKey + "=" + name})
				if err == nil && len(pods.Items) == 0 {
					done[st] = true
					got[st] = append(got[st], time.Since(t0))
				}
			}
			return len(done) == len(b.sb.Styles()), nil
		})
		if err != nil {
			return nil, fmt.Errorf("gc %d: not collected within 2 minutes (collected: %v)", i+1, done)
		}
	}
	out := map[style.Style]Dist{}
	for st, ds := range got {
		out[st] = NewDist(ds)
	}
	return out, nil
}

// Failover kills (SIGKILL) or stops (SIGTERM) the leader of each Go style
// reps times and times until another replica holds the Lease.
func (b *Bench) Failover(ctx context.Context, reps int) (map[style.Style]map[string]Dist, error) {
	out := map[style.Style]map[string]Dist{}
	for _, st := range b.sb.Styles() {
		if len(b.replicas.Replicas(st)) < 2 {
			continue
		}
		out[st] = map[string]Dist{}
		for _, how := range []string{"kill", "stop"} {
			var ds []time.Duration
			for range reps {
				old, err := b.waitLeader(ctx, st, "")
				if err != nil {
					return nil, err
				}
				t0 := time.Now()
				if how == "kill" {
					_, err = b.replicas.KillLeader(ctx, st)
				} else {
					_, err = b.replicas.StopLeader(ctx, st)
				}
				if err != nil {
					return nil, err
				}
				if _, err := b.waitLeader(ctx, st, old); err != nil {
					return nil, err
				}
				ds = append(ds, time.Since(t0))
				// The restarted replica comes back as the standby first.
				if err := b.waitReplicas(ctx, st); err != nil {
					return nil, err
				}
			}
			out[st][how] = NewDist(ds)
		}
	}
	return out, nil
}

// waitLeader polls every 10 ms (the measurement's resolution) until a
// replica other than not holds st's Lease.
func (b *Bench) waitLeader(ctx context.Context, st style.Style, not string) (string, error) {
	var got string
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, _, err := b.replicas.Leader(ctx, st)
		got = n
		return err == nil && n != "" && n != not, nil
	})
	if err != nil {
		return "", fmt.Errorf("no new leader of %s within a minute: %w", st, err)
	}
	return got, nil
}

func (b *Bench) waitReplicas(ctx context.Context, st style.Style) error {
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		running := 0
		for _, s := range b.replicas.ReplicaStatuses() {
			if s.Style == st && s.Running {
				running++
			}
		}
		return running == len(b.replicas.Replicas(st)), nil
	})
	if err != nil {
		return fmt.Errorf("%s replicas not back within a minute: %w", st, err)
	}
	return nil
}

// IdleAPI is what a style asks of the apiserver with nothing to do.
type IdleAPI struct {
	PerMin      float64 `json:"requests_per_min"`
	LeasePerMin float64 `json:"lease_requests_per_min"` // of PerMin: leader election
}

// Idle counts each style's requests over window while nothing changes.
func (b *Bench) Idle(ctx context.Context, window time.Duration) (map[style.Style]IdleAPI, error) {
	if err := b.settle(ctx); err != nil {
		return nil, err
	}
	before, lbefore := b.apiTotals(), b.leaseTotals()
	t := time.NewTimer(window)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	after, lafter := b.apiTotals(), b.leaseTotals()
	perMin := func(n int) float64 { return float64(n) * float64(time.Minute) / float64(window) }
	out := map[style.Style]IdleAPI{}
	for _, st := range b.sb.Styles() {
		out[st] = IdleAPI{PerMin: perMin(after[st] - before[st]), LeasePerMin: perMin(lafter[st] - lbefore[st])}
	}
	return out, nil
}
