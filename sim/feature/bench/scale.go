package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/proc"
	"github.com/kkloud/rlab/sim/sandbox"
)

// ScalePrefix names the Echoes Scale creates (scale-001, …).
const ScalePrefix = "scale"

// ScaleResult is N Echoes per style, applied at once, to converged.
type ScaleResult struct {
	Echoes   int     `json:"echoes_per_style"`
	Replicas int     `json:"replicas"`
	Applied  float64 `json:"applied_ms"` // until the apiserver had accepted every Echo
	// Converged is per style the time from the first create until every one
	// of its Echoes had its Deployment Ready and its status written; a style
	// that did not make it within the timeout is absent from Converged and
	// has its count in Done.
	Converged map[style.Style]float64 `json:"converged_ms"`
	Done      map[style.Style]int     `json:"done"`
	// API is each style's requests from the apply until its convergence
	// (or the timeout); Requests the same by "verb resource".
	API      map[style.Style]int            `json:"api_requests"`
	Requests map[style.Style]map[string]int `json:"requests_by_kind"`
	// Tuning is the Go operators' flags during the run (Bench.Tune), and
	// Workers and Limits what each Go style ran with: its workers (the
	// libraries run one unless told), and the client-side limit its
	// replicas said (client.limits) when they restarted. Absent if the run
	// came before any Tune.
	Tuning  string                `json:"tuning,omitempty"`
	Workers map[style.Style]int   `json:"workers,omitempty"`
	Limits  map[style.Style]Limit `json:"client_limits,omitempty"`
	// ClientGoFloor is the least time client-go's client-side limit let it
	// take, from the requests its leader made until it converged (or the
	// timeout); nil with no limit or no Tune.
	ClientGoFloor *Floor `json:"clientgo_limit_floor,omitempty"`
	// RSS is rlab's resident set at the end, and its peak so far, in MiB.
	RSSMiB     float64 `json:"rlab_rss_mib"`
	PeakRSSMiB float64 `json:"rlab_peak_rss_mib"`
}

// Scale creates n Echoes (replicas each) in every style's namespace at once
// (Sandbox.CreateEchoes), and times each style until all are converged, for at
// most timeout. It deletes them again and waits until they are gone.
// progress, if set, is told the counts now and then.
func (b *Bench) Scale(ctx context.Context, n, replicas int, timeout time.Duration, progress func(string)) (ScaleResult, error) {
	out := ScaleResult{Echoes: n, Replicas: replicas, Converged: map[style.Style]float64{},
		Done: map[style.Style]int{}, API: map[style.Style]int{}, Requests: map[style.Style]map[string]int{}}
	b.mu.Lock()
	tu := b.tuned
	b.mu.Unlock()
	if tu != nil {
		out.Tuning, out.Workers, out.Limits = tu.tuning.String(), tu.workers, tu.limits
	}
	name := func(i int) string { return sandbox.SetName(ScalePrefix, i+1) }
	// A style's requests until it converged, or until the end.
	counted := map[style.Style]map[string]map[string]int{}
	count := func(st style.Style, before, now map[string]map[string]int) {
		counted[st] = since(before, now, st)
		out.Requests[st] = map[string]int{}
		for _, c := range counted[st] {
			for k, n := range c {
				out.Requests[st][k] += n
			}
		}
	}
	before, beforeCounts := b.apiTotals(), b.counts()
	t0 := time.Now()
	defer func() { _ = b.deleteScale(context.WithoutCancel(ctx)) }()
	if err := b.admin.CreateEchoes(ctx, nil, ScalePrefix, n, replicas, "echo"); err != nil {
		return out, err
	}
	out.Applied = ms(time.Since(t0))

	// Poll the world (not WaitFor: a snapshot per change would cost more
	// than the thing measured): 100 ms is the resolution.
	deadline := time.Now().Add(timeout)
	lastSaid := time.Now()
	for {
		sn := b.world.Snapshot()
		pending := 0
		for _, st := range b.sb.Styles() {
			if _, ok := out.Converged[st]; ok {
				continue
			}
			done := 0
			for i := range n {
				if converged(sn, st, name(i), int32(replicas)) {
					done++
				}
			}
			out.Done[st] = done
			if done == n {
				out.Converged[st] = ms(time.Since(t0))
				out.API[st] = b.apiTotals()[st] - before[st]
				count(st, beforeCounts, b.counts())
			} else {
				pending++
			}
		}
		if pending == 0 || time.Now().After(deadline) {
			break
		}
		if progress != nil && time.Since(lastSaid) >= 5*time.Second {
			lastSaid = time.Now()
			progress(fmt.Sprintf("%d Echoes per style: %s after %.0fs", n, doneString(b.sb.Styles(), out.Done, n), time.Since(t0).Seconds()))
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	after, afterCounts := b.apiTotals(), b.counts()
	for _, st := range b.sb.Styles() {
		if _, ok := out.Converged[st]; !ok {
			out.API[st] = after[st] - before[st]
			count(st, beforeCounts, afterCounts)
		}
	}
	if tu != nil {
		out.ClientGoFloor = clientGoFloor(counted[style.ClientGo], tu.limits[style.ClientGo], tu.tuning.QPS > 0)
	}
	if now, peak, err := proc.RSS(); err == nil {
		out.RSSMiB, out.PeakRSSMiB = float64(now)/(1<<20), float64(peak)/(1<<20)
	}
	return out, nil
}

func doneString(sts []style.Style, done map[style.Style]int, n int) string {
	s := ""
	for i, st := range sts {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d/%d", st, done[st], n)
	}
	return s
}

// deleteScale deletes Scale's Echoes and waits until the world has seen
// them and their Deployments go (the garbage collector's work).
func (b *Bench) deleteScale(ctx context.Context) error {
	if err := b.admin.DeleteEchoes(ctx, nil, ScalePrefix); err != nil {
		return fmt.Errorf("delete scale Echoes: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for {
		sn := b.world.Snapshot()
		left := 0
		for _, st := range b.sb.Styles() {
			if ns := sn.Style(st); ns != nil {
				left += len(ns.Echoes) - 1 + len(ns.Orphans) // the sample stays
			}
		}
		if left <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("scale Echoes not gone: %d left: %w", left, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// CPU is processor time as a share of one core over a window, in percent.
type CPU struct {
	Window  float64            `json:"window_s"`
	Sandbox float64            `json:"sandbox_pct"` // rlab and every process it started
	Rlab    float64            `json:"rlab_pct"`
	By      map[string]float64 `json:"by_process_pct"`
}

// IdleCPU measures, over window, the processor time of rlab and of every
// process the sandbox recorded in pidDir, once the world has settled.
func (b *Bench) IdleCPU(ctx context.Context, pidDir string, window time.Duration) (CPU, error) {
	if err := b.settle(ctx); err != nil {
		return CPU{}, err
	}
	entries, err := proc.Entries(pidDir)
	if err != nil {
		return CPU{}, err
	}
	self := os.Getpid()
	type sample struct {
		name string
		pid  int
		t    time.Duration
	}
	read := func() ([]sample, error) {
		var out []sample
		t, err := proc.CPUTime(self)
		if err != nil {
			return nil, err
		}
		out = append(out, sample{"rlab", self, t})
		for _, e := range entries {
			if t, err := proc.CPUTime(e.PID); err == nil {
				out = append(out, sample{e.Name, e.PID, t})
			}
		}
		return out, nil
	}
	first, err := read()
	if err != nil {
		return CPU{}, err
	}
	began := time.Now()
	t := time.NewTimer(window)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return CPU{}, ctx.Err()
	}
	second, err := read()
	if err != nil {
		return CPU{}, err
	}
	took := time.Since(began)
	pct := func(d time.Duration) float64 { return 100 * float64(d) / float64(took) }
	prev := map[int]time.Duration{}
	for _, s := range first {
		prev[s.pid] = s.t
	}
	out := CPU{Window: took.Seconds(), By: map[string]float64{}}
	for _, s := range second {
		p, ok := prev[s.pid]
		if !ok {
			continue // started during the window (a restart): not idle
		}
		out.By[s.name] += pct(s.t - p)
		out.Sandbox += pct(s.t - p)
	}
	out.Rlab = out.By["rlab"]
	return out, nil
}
