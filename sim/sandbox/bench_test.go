package sandbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/feature/bench"
)

// Per-style speed, measured on the sandbox of TestMain (shell loop polling
// every second) with the measurements of `rlab bench` (sim/feature/bench). Run:
// make bench (go test -run '^$' -bench . -benchtime 1x ./sim/sandbox/).
// Each benchmark runs all its repetitions in one iteration and reports
// p50/p95 in milliseconds per style.

const reps = 20

func reportDists(b *testing.B, what string, got map[style.Style]bench.Dist) {
	for st, d := range got {
		b.ReportMetric(d.P50, st.String()+"-"+what+"-p50-ms")
		b.ReportMetric(d.P95, st.String()+"-"+what+"-p95-ms")
	}
}

// BenchmarkEditConverge: replicas edits (2↔3), from the edit to the
// Deployment updated and status.ready written for the new replica count;
// and the API requests each style spent per edit.
func BenchmarkEditConverge(b *testing.B) {
	m := bench.New(sb)
	defer m.Close()
	for b.Loop() {
		res, err := m.Edits(b.Context(), reps)
		if err != nil {
			b.Fatal(err)
		}
		reportDists(b, "converge", res.Converge)
		reportDists(b, "ready", res.Ready)
		for st, n := range res.APIPerEdit {
			b.ReportMetric(n, st.String()+"-api-req/edit")
		}
	}
}

// BenchmarkDriftRepair: the Deployment scaled to 1 by hand, until the world
// saw it back at the Echo's replicas (drift.repaired).
func BenchmarkDriftRepair(b *testing.B) {
	m := bench.New(sb)
	defer m.Close()
	for b.Loop() {
		res, err := m.Drift(b.Context(), reps)
		if err != nil {
			b.Fatal(err)
		}
		reportDists(b, "repair", res)
	}
}

// BenchmarkIdleAPI: API requests per minute per style with nothing to do:
// the cost of polling versus watching, and of renewing a Lease.
func BenchmarkIdleAPI(b *testing.B) {
	m := bench.New(sb)
	defer m.Close()
	for b.Loop() {
		res, err := m.Idle(b.Context(), 20*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		for st, r := range res {
			b.ReportMetric(r.PerMin, st.String()+"-idle-req/min")
			b.ReportMetric(r.LeasePerMin, st.String()+"-idle-lease-req/min")
		}
	}
}

// BenchmarkFailover: time until the other replica holds the Lease, after a
// kill -9 of the leader and after a graceful stop.
func BenchmarkFailover(b *testing.B) {
	m := bench.New(sb)
	defer m.Close()
	for b.Loop() {
		res, err := m.Failover(b.Context(), 5)
		if err != nil {
			b.Fatal(err)
		}
		for st, hows := range res {
			for how, d := range hows {
				b.ReportMetric(d.P50, st.String()+"-failover-"+how+"-p50-ms")
				b.ReportMetric(d.Max, st.String()+"-failover-"+how+"-max-ms")
			}
		}
	}
}

// BenchmarkStartup reports how long TestMain's sandbox took to start, in
// all and per phase (the backend's, then the operators' and the sample's).
func BenchmarkStartup(b *testing.B) {
	for b.Loop() {
		b.ReportMetric(float64(sb.ClusterReady.Milliseconds()), "cluster-ready-ms")
		b.ReportMetric(float64(sb.Ready.Milliseconds()), "ready-ms")
		for _, p := range sb.Cluster().Phases() {
			b.ReportMetric(float64(p.Took.Milliseconds()), strings.ReplaceAll(p.Name, " ", "_")+"-ms")
		}
	}
}

// BenchmarkEchoGC: an Echo deleted, until the garbage collector has removed
// its Deployment and every Pod, per style.
func BenchmarkEchoGC(b *testing.B) {
	m := bench.New(sb)
	defer m.Close()
	for b.Loop() {
		res, err := m.GC(b.Context(), 5)
		if err != nil {
			b.Fatal(err)
		}
		reportDists(b, "gc", res)
	}
}
