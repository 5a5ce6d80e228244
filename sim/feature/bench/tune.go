package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/sandbox"
)

// Limit is a client-side rate limit as a replica's client.limits event
// said it: QPS < 0 is none.
type Limit struct {
	QPS   float64 `json:"qps"`
	Burst int     `json:"burst"`
}

func (l Limit) String() string {
	if l.QPS < 0 {
		return "no limit"
	}
	return fmt.Sprintf("%g/s burst %d", l.QPS, l.Burst)
}

// tuned is what the Go operators run with since the last Tune.
type tuned struct {
	tuning  sandbox.Tuning
	workers map[style.Style]int
	limits  map[style.Style]Limit
}

// goStyles are the sandbox's styles that take a Tuning.
func (b *Bench) goStyles() []style.Style {
	var out []style.Style
	for _, st := range b.sb.Styles() {
		if t := st.Traits(); t.Builtin && !t.Polls {
			out = append(out, st)
		}
	}
	return out
}

// Tune restarts every Go style's replicas with t (Operators.SetTuning; the
// zero Tuning is the libraries' defaults) and waits until each style has
// reconciled since its last replica restarted: a leader that began since
// has synced its caches and runs its workers, so what is measured next is
// not the restart. Every replica must say (client.limits) the same limit
// as its style's others. Scale reports what the last Tune set.
func (b *Bench) Tune(ctx context.Context, t sandbox.Tuning) error {
	var (
		mu     sync.Mutex
		starts = map[string]time.Time{} // the replica's latest start since
		limits = map[string]Limit{}
		ends   []trace.Event // reconcile.end of the Go styles
	)
	col := b.sb.Bus().Collect(1<<14, func(evs []trace.Event, _ int) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range evs {
			switch e.Kind {
			case trace.ProcessStart:
				starts[e.Object] = e.Time
			case trace.ClientLimits:
				l, _ := e.Limits()
				limits[e.Source] = Limit{QPS: l.QPS, Burst: l.Burst}
			case trace.ReconcileEnd:
				ends = append(ends, e)
			}
		}
	})
	defer col.Close()
	for _, st := range b.goStyles() {
		if err := b.flags.SetTuning(st, t); err != nil {
			return fmt.Errorf("tune %s: %w", st, err)
		}
	}
	out := tuned{tuning: t, workers: map[style.Style]int{}, limits: map[style.Style]Limit{}}
	var why string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		col.Flush()
		mu.Lock()
		defer mu.Unlock()
		for _, st := range b.goStyles() {
			var last time.Time
			for _, r := range b.replicas.Replicas(st) {
				src := st.Source(r)
				began, restarted := starts[src]
				if _, said := limits[src]; !restarted || !said {
					why = src + " has not restarted and said its client limits"
					return false, nil
				}
				if began.After(last) {
					last = began
				}
			}
			ready := false
			for _, e := range ends {
				if strings.HasPrefix(e.Source, st.String()+"/") && e.Time.After(last) {
					ready = true
					break
				}
			}
			if !ready {
				why = st.String() + " has not reconciled since its replicas restarted"
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("tune %s: %s: %w", t, why, err)
	}
	for _, st := range b.goStyles() {
		out.workers[st] = max(1, t.Workers) // 0: both libraries run one
		for i, r := range b.replicas.Replicas(st) {
			l := limits[st.Source(r)]
			if i > 0 && l != out.limits[st] {
				return fmt.Errorf("tune %s: %s says %s, %s %s", t, st.Source(r), l, st, out.limits[st])
			}
			out.limits[st] = l
		}
	}
	b.mu.Lock()
	b.tuned = &out
	b.mu.Unlock()
	return b.settle(ctx)
}

// clientGoLimiter names the client-side limiter of the client-go operator
// (operators/clientgo/run.go) that a request for resource waits on. Its
// dynamic client (Echoes) has one; its clientset has one per API group
// while QPS is unset (each group's REST client defaults its own) and one
// for all its groups once QPS is set (kubernetes.NewForConfig shares it).
func clientGoLimiter(resource string, qpsSet bool) string {
	switch {
	case resource == "echoes" || strings.HasPrefix(resource, "echoes/"):
		return "dynamic client"
	case qpsSet:
		return "clientset"
	}
	group := map[string]string{"deployments": "apps", "replicasets": "apps", "leases": "coordination.k8s.io"}[strings.Split(resource, "/")[0]]
	if group == "" {
		group = "core" // events, configmaps, pods
	}
	return "clientset " + group
}

// Floor is the least time a client-side limit lets a run take: the
// busiest limiter's requests beyond its burst, at its rate.
type Floor struct {
	Limiter  string  `json:"limiter"`  // the busiest: "dynamic client", "clientset apps", …
	Requests int     `json:"requests"` // through it, by the leader, during the run
	QPS      float64 `json:"qps"`
	Burst    int     `json:"burst"`
	Ms       float64 `json:"floor_ms"` // (Requests - Burst) / QPS
	// AllMs is the same for all the style's requests as if through one
	// limiter: the floor if the operator had one client.
	AllRequests int     `json:"all_requests"`
	AllMs       float64 `json:"all_floor_ms"`
}

// clientGoFloor is client-go's floor for the requests each of its replicas
// made ("clientgo/a" → "verb resource" → n) under limit l, or nil if l is
// no limit. qpsSet: the operator was given --qps (one clientset limiter).
func clientGoFloor(byReplica map[string]map[string]int, l Limit, qpsSet bool) *Floor {
	if l.QPS <= 0 {
		return nil
	}
	at := func(n int) float64 { return 1000 * float64(max(0, n-l.Burst)) / l.QPS }
	f := &Floor{QPS: l.QPS, Burst: l.Burst}
	for _, counts := range byReplica {
		per := map[string]int{}
		all := 0
		for key, n := range counts {
			_, resource, _ := strings.Cut(key, " ")
			per[clientGoLimiter(resource, qpsSet)] += n
			all += n
		}
		for lim, n := range per {
			if n > f.Requests || n == f.Requests && lim < f.Limiter {
				f.Limiter, f.Requests = lim, n
			}
		}
		f.AllRequests = max(f.AllRequests, all)
	}
	f.Ms, f.AllMs = at(f.Requests), at(f.AllRequests)
	return f
}

// counts is each replica's requests so far by "verb resource", by
// "<style>/<replica>".
func (b *Bench) counts() map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, st := range b.sb.Styles() {
		for _, r := range b.replicas.Replicas(st) {
			if p := b.proxies.Proxy(st.Source(r)); p != nil {
				out[st.Source(r)] = p.Counts()
			}
		}
	}
	return out
}

// since is after's counts less before's, of st's replicas, zeros left out.
func since(before, after map[string]map[string]int, st style.Style) map[string]map[string]int {
	out := map[string]map[string]int{}
	for src, counts := range after {
		if !strings.HasPrefix(src, st.String()+"/") {
			continue
		}
		for k, n := range counts {
			if d := n - before[src][k]; d > 0 {
				if out[src] == nil {
					out[src] = map[string]int{}
				}
				out[src][k] = d
			}
		}
	}
	return out
}
