package bench

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/kkloud/rlab/operators/style"
)

// TestClientGoFloor: the floor is the busiest of client-go's limiters, the
// leader's requests through it beyond the burst at the rate. Unset, the
// clientset has a limiter per API group; set, one; the dynamic client
// (Echoes) has its own either way.
func TestClientGoFloor(t *testing.T) {
	leader := map[string]int{
		"create deployments": 500, "update echoes/status": 1000, "get echoes": 10,
		"update leases": 300, "create events": 5,
	}
	standby := map[string]int{"get leases": 300}
	both := map[string]map[string]int{"clientgo/a": leader, "clientgo/b": standby}
	tests := []struct {
		name   string
		counts map[string]map[string]int
		limit  Limit
		qpsSet bool
		want   *Floor
	}{
		{"defaults: Echo status writes on the dynamic client's 5/s", both, Limit{5, 10}, false,
			&Floor{Limiter: "dynamic client", Requests: 1010, QPS: 5, Burst: 10, Ms: 200_000, AllRequests: 1815, AllMs: 361_000}},
		{"defaults: Deployments on the apps group's own", map[string]map[string]int{"clientgo/a": {"create deployments": 510, "update echoes/status": 400}},
			Limit{5, 10}, false, &Floor{Limiter: "clientset apps", Requests: 510, QPS: 5, Burst: 10, Ms: 100_000, AllRequests: 910, AllMs: 180_000}},
		{"set: one clientset limiter", map[string]map[string]int{"clientgo/a": {"create deployments": 500, "update leases": 300, "create events": 300, "update echoes/status": 1000}},
			Limit{100, 200}, true, &Floor{Limiter: "clientset", Requests: 1100, QPS: 100, Burst: 200, Ms: 9_000, AllRequests: 2100, AllMs: 19_000}},
		{"within the burst", map[string]map[string]int{"clientgo/a": {"update echoes/status": 8}}, Limit{5, 10}, false,
			&Floor{Limiter: "dynamic client", Requests: 8, QPS: 5, Burst: 10, AllRequests: 8}},
		{"no limit", both, Limit{-1, 10}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := clientGoFloor(tt.counts, tt.limit, tt.qpsSet)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestWriteTableScale: a compared scale run prints both runs, the settings
// each ran with, client-go's floor and the ratios.
func TestWriteTableScale(t *testing.T) {
	cg, rt := style.ClientGo, style.Runtime
	run := func(tuning string, cgMs, rtMs float64, l Limit, workers int, floor *Floor) *ScaleResult {
		return &ScaleResult{Echoes: 500, Replicas: 1, Converged: map[style.Style]float64{cg: cgMs, rt: rtMs},
			Done: map[style.Style]int{cg: 500, rt: 500}, API: map[style.Style]int{cg: 1500, rt: 1500},
			Tuning: tuning, Workers: map[style.Style]int{cg: workers, rt: workers},
			Limits: map[style.Style]Limit{cg: l, rt: {-1, 10}}, ClientGoFloor: floor}
	}
	r := Report{
		ScaleDefaults: run("the library's defaults", 220_000, 60_000, Limit{5, 10}, 1,
			&Floor{Limiter: "dynamic client", Requests: 1010, QPS: 5, Burst: 10, Ms: 200_000, AllRequests: 1815, AllMs: 361_000}),
		Scale: run("--workers=10 --qps=100 --burst=200", 22_000, 15_000, Limit{100, 200}, 10, nil),
	}
	var out bytes.Buffer
	if err := WriteTable(&out, r, []style.Style{cg, rt}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Go operators: the library's defaults  1 worker(s), 5/s burst 10  1 worker(s), no limit",
		"Go operators: --workers=10 --qps=100 --burst=200  10 worker(s), 100/s burst 200",
		"client limit floor (busiest limiter; as one)  200.00s dynamic client (1010 req); 361.00s",
		"converged ÷ floor  1.10",
		"converged, tuned ÷ defaults  0.10  0.25",
	} {
		if !strings.Contains(squeeze(out.String()), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// squeeze is s with runs of spaces as two, as the table's columns are apart.
func squeeze(s string) string {
	for strings.Contains(s, "   ") {
		s = strings.ReplaceAll(s, "   ", "  ")
	}
	return s
}
