package sandbox_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/world"
)

// Per-style speed, measured on the sandbox of TestMain (shell loop polling
// every second). Run: make bench (go test -run '^$' -bench . -benchtime 1x
// ./sim/sandbox/). Each benchmark runs all its repetitions in one iteration
// and reports p50/p95 in milliseconds per style.

const reps = 20

func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return float64(s[i].Microseconds()) / 1000
}

func reportStyles(b *testing.B, what string, got map[style.Style][]time.Duration) {
	for _, st := range style.All() {
		b.ReportMetric(percentile(got[st], 0.5), st.String()+"-"+what+"-p50-ms")
		b.ReportMetric(percentile(got[st], 0.95), st.String()+"-"+what+"-p95-ms")
	}
}

// timeEach starts act at t0 and records, per style, when cond first holds.
func timeEach(b *testing.B, act func() error, cond func(st style.Style) func(world.Snapshot) bool) map[style.Style]time.Duration {
	var (
		mu  sync.Mutex
		out = map[style.Style]time.Duration{}
		wg  sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(b.Context(), 2*time.Minute)
	defer cancel()
	t0 := time.Now()
	if err := act(); err != nil {
		b.Fatal(err)
	}
	for _, st := range style.All() {
		wg.Go(func() {
			if err := sb.World().WaitFor(ctx, cond(st)); err != nil {
				b.Errorf("%s: %v", st, err)
				return
			}
			mu.Lock()
			out[st] = time.Since(t0)
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func apiTotals() map[style.Style]int {
	out := map[style.Style]int{}
	for _, st := range style.All() {
		for _, r := range sandbox.Replicas(st) {
			out[st] += sb.Proxy(st.Source(r)).Total()
		}
	}
	return out
}

// BenchmarkEditConverge: replicas edits (2↔3), from the edit to the
// Deployment updated and status.ready written for the new replica count;
// and the API requests each style spent per edit.
func BenchmarkEditConverge(b *testing.B) {
	ctx := b.Context()
	got := map[style.Style][]time.Duration{}
	for b.Loop() {
		before := apiTotals()
		for i := range reps {
			n := int32(3 - i%2)
			res := timeEach(b, func() error { return sb.SetReplicas(ctx, sandbox.SampleName, int(n)) },
				func(st style.Style) func(world.Snapshot) bool {
					return func(sn world.Snapshot) bool {
						e := echoOf(sn, st, sandbox.SampleName)
						return e != nil && e.Deployment != nil && e.Deployment.Replicas == n &&
							strings.HasSuffix(e.Ready, fmt.Sprintf("/%d", n))
					}
				})
			for st, d := range res {
				got[st] = append(got[st], d)
			}
		}
		after := apiTotals()
		for _, st := range style.All() {
			b.ReportMetric(float64(after[st]-before[st])/reps, st.String()+"-api-req/edit")
		}
	}
	reportStyles(b, "converge", got)
	if err := sb.SetReplicas(ctx, sandbox.SampleName, sandbox.SampleReplicas); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDriftRepair: the Deployment scaled to 1 by hand, until it is
// back at the Echo's replicas, as the world observed it (drift.repaired).
// A fast repair can come before the world has even rendered the drift, so
// the event, not a snapshot, is the measure.
func BenchmarkDriftRepair(b *testing.B) {
	ctx := b.Context()
	got := map[style.Style][]time.Duration{}
	want := int32(sandbox.SampleReplicas)
	for b.Loop() {
		for range reps {
			// Start from the converged, settled state each time.
			if err := sb.World().WaitFor(ctx, func(sn world.Snapshot) bool {
				for _, st := range style.All() {
					if e := echoOf(sn, st, sandbox.SampleName); e == nil || e.Deployment == nil || e.Deployment.Replicas != want {
						return false
					}
				}
				return sb.World().Settling() == 0
			}); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			if err := sb.ScaleDeployment(ctx, "", sandbox.SampleName, 1); err != nil {
				b.Fatal(err)
			}
			for _, st := range style.All() {
				var d time.Duration
				err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
					for _, e := range events.Of(trace.DriftRepaired) {
						if e.Namespace == sb.Namespace(st) && e.Time.After(t0) {
							d = e.Time.Sub(t0)
							return true, nil
						}
					}
					return false, nil
				})
				if err != nil {
					b.Fatalf("%s: no drift.repaired within a minute", st)
				}
				got[st] = append(got[st], d)
			}
		}
	}
	reportStyles(b, "repair", got)
}

// BenchmarkIdleAPI: API requests per minute per style with nothing to do:
// the cost of polling versus watching (and of renewing a Lease).
func BenchmarkIdleAPI(b *testing.B) {
	const window = 20 * time.Second
	for b.Loop() {
		before := apiTotals()
		select {
		case <-time.After(window):
		case <-b.Context().Done():
			b.Fatal(b.Context().Err())
		}
		after := apiTotals()
		for _, st := range style.All() {
			b.ReportMetric(float64(after[st]-before[st])*float64(time.Minute)/float64(window), st.String()+"-idle-req/min")
		}
	}
}

// BenchmarkFailover: time until the other replica holds the Lease, after a
// kill -9 of the leader and after a graceful stop.
func BenchmarkFailover(b *testing.B) {
	ctx := b.Context()
	const n = 5
	for b.Loop() {
		for _, st := range []style.Style{style.ClientGo, style.Runtime} {
			for _, how := range []string{"kill", "stop"} {
				var ds []time.Duration
				for range n {
					old := waitLeader(b, st, "")
					t0 := time.Now()
					var err error
					if how == "kill" {
						_, err = sb.KillLeader(ctx, st)
					} else {
						_, err = sb.StopLeader(ctx, st)
					}
					if err != nil {
						b.Fatal(err)
					}
					waitLeader(b, st, old)
					ds = append(ds, time.Since(t0))
					// Let the restarted replica come back as the standby.
					waitReplicas(b, st)
				}
				b.ReportMetric(percentile(ds, 0.5), st.String()+"-failover-"+how+"-p50-ms")
				b.ReportMetric(percentile(ds, 1), st.String()+"-failover-"+how+"-max-ms")
			}
		}
	}
}

// waitLeader polls every 10 ms (the resolution of the measurement) until a
// running replica other than not holds the style's Lease, and returns it.
func waitLeader(b *testing.B, st style.Style, not string) string {
	var got string
	err := wait.PollUntilContextTimeout(b.Context(), 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, _, err := sb.Leader(ctx, st)
		got = n
		return err == nil && n != not, nil
	})
	if err != nil {
		b.Fatalf("no new leader of %s within a minute", st)
	}
	return got
}

// waitReplicas waits until every replica of a style runs.
func waitReplicas(b *testing.B, st style.Style) {
	err := simtest.Poll(b.Context(), time.Minute, simtest.True(func() bool {
		running := 0
		for _, s := range sb.Supervisor().Statuses() {
			if s.Style == st && s.Running {
				running++
			}
		}
		return running == len(sandbox.Replicas(st))
	}))
	if err != nil {
		b.Fatalf("%s replicas not back: %v", st, err)
	}
}

// BenchmarkStartup reports how long TestMain's sandbox took to start, in
// all and per phase (the backend's, then the operators' and the sample's):
// the figure a student waits for before the screen shows 2/2.
func BenchmarkStartup(b *testing.B) {
	for b.Loop() {
		b.ReportMetric(float64(sb.Ready.Milliseconds()), "ready-ms")
		for _, p := range sb.Phases() {
			b.ReportMetric(float64(p.Took.Milliseconds()), strings.ReplaceAll(p.Name, " ", "_")+"-ms")
		}
	}
}

// BenchmarkEchoGC: an Echo deleted, until the garbage collector has removed
// its Deployment and every Pod, per style.
func BenchmarkEchoGC(b *testing.B) {
	ctx := b.Context()
	const name, n = "gcbench", 5
	got := map[style.Style][]time.Duration{}
	for b.Loop() {
		for range n {
			if err := sb.CreateEcho(ctx, name, "collect me", 2); err != nil {
				b.Fatal(err)
			}
			if err := sb.World().WaitFor(ctx, func(sn world.Snapshot) bool {
				for _, st := range style.All() {
					if !converged(st, name, 2, "collect me")(sn) {
						return false
					}
				}
				return true
			}); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			if err := sb.DeleteEcho(ctx, name); err != nil {
				b.Fatal(err)
			}
			// All styles at once: each is timed when first seen collected.
			done := map[style.Style]bool{}
			err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				sn := sb.World().Snapshot()
				for _, st := range style.All() {
					if done[st] || echoOf(sn, st, name) != nil || len(sn.Style(st).Orphans) > 0 {
						continue
					}
					pods, err := sb.Kube().CoreV1().Pods(sb.Namespace(st)).List(ctx, metav1.ListOptions{LabelSelector: echo.LabelKey + "=" + name})
					if err == nil && len(pods.Items) == 0 {
						done[st] = true
						got[st] = append(got[st], time.Since(t0))
					}
				}
				return len(done) == len(style.All()), nil
			})
			if err != nil {
				b.Fatalf("Deployments and Pods of a deleted Echo not collected within 2 minutes (collected: %v)", done)
			}
		}
	}
	reportStyles(b, "gc", got)
}
