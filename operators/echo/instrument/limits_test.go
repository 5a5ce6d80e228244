package instrument

import (
	"bytes"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kkloud/rlab/operators/trace"
)

// TestEmitClientLimits: client.limits says what the clients built from the
// config really limit to: the QPS of their limiter (none for a negative
// QPS), and its burst, counted as the requests a fresh limiter lets through
// at once. Both the clientset's (one group's client) and the dynamic
// client's are checked, as the client-go operator has both.
func TestEmitClientLimits(t *testing.T) {
	tests := []struct {
		name       string
		qps        float32
		burst      int
		wantQPS    float64
		wantBurst  int
		wantLimits bool
	}{
		{"unset: client-go's defaults", 0, 0, 5, 10, true},
		{"set", 50, 100, 50, 100, true},
		{"fractional", 2.5, 4, 2.5, 4, true},
		{"no limit", -1, 0, -1, 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &rest.Config{Host: "https://127.0.0.1:1", QPS: tt.qps, Burst: tt.burst}
			var buf bytes.Buffer
			em := NewEmitter(&buf, "clientgo/a")
			em.EmitClientLimits("ns", cfg)
			em.Close()
			var got []trace.Event
			_ = trace.Decode(&buf, func(e trace.Event) { got = append(got, e) }, func(l string) { t.Fatalf("malformed %q", l) })
			if len(got) != 1 || got[0].Kind != trace.ClientLimits {
				t.Fatalf("events %+v, want one %s", got, trace.ClientLimits)
			}
			q := trace.As[trace.Limits](got[0]).QPS
			b := trace.As[trace.Limits](got[0]).Burst
			if q != tt.wantQPS || int(b) != tt.wantBurst {
				t.Errorf("event says qps %v burst %v, want %v and %v", q, b, tt.wantQPS, tt.wantBurst)
			}

			kube, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// The REST client dynamic.NewForConfig builds, which it keeps to itself.
			dyn, err := rest.UnversionedRESTClientFor(dynamic.ConfigFor(cfg))
			if err != nil {
				t.Fatal(err)
			}
			for which, rc := range map[string]rest.Interface{"clientset (apps)": kube.AppsV1().RESTClient(), "dynamic": dyn} {
				rl := rc.GetRateLimiter()
				if (rl != nil) != tt.wantLimits {
					t.Fatalf("%s: limiter %v, want one: %v", which, rl, tt.wantLimits)
				}
				if rl == nil {
					continue
				}
				if float64(rl.QPS()) != q {
					t.Errorf("%s: limiter QPS %v, event %v", which, rl.QPS(), q)
				}
				n := 0
				for n < 1000 && rl.TryAccept() {
					n++
				}
				// A token may come back while counting at a high rate.
				if n < int(b) || n > int(b)+1 {
					t.Errorf("%s: %d requests at once, event says burst %v", which, n, b)
				}
			}
		})
	}
}
