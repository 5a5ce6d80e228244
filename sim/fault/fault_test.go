package fault

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "stale", want: "stale:2s"},
		{in: "stale:500ms", want: "stale:500ms"},
		{in: "unobserved:3s", want: "unobserved:3s"},
		{in: "conflict", want: "conflict,p=0.5"},
		{in: "conflict,n=3", want: "conflict,n=3"},
		{in: "conflict,p=1,resources=echoes/status", want: "conflict,p=1,resources=echoes/status"},
		{in: "error", want: "error,p=0.5,code=500"},
		{in: "error,code=429,retry-after=1s,n=2,verbs=create+patch", want: "error,n=2,code=429,retry-after=1s,verbs=create+patch"},
		{in: "latency:300ms,verbs=get", want: "latency:300ms,verbs=get"},
		{in: "crash", want: "crash,n=1"},
		{in: "crash,n=2,seed=7", want: "crash,n=2,seed=7"},
		{in: "lease", want: "lease:5s"},
		{in: "partition:1s", want: "partition:1s"},
		{in: "disconnect", want: "disconnect"},
		{in: "disconnect:10s", want: "disconnect:10s"},

		{in: "flaky", err: `no fault "flaky"; want one of stale, unobserved`},
		{in: "stale:soon", err: `duration "soon"`},
		{in: "latency", err: "latency needs a duration: latency:2s"},
		{in: "conflict,p=2", err: "p=2: want a probability from 0 to 1"},
		{in: "conflict,n=2,p=0.5", err: "give n (every Nth request) or p"},
		{in: "conflict,verbs=create", err: `verb "create": a conflict is an update's or a patch's`},
		{in: "error,code=404", err: "code=404: want 500, 502, 503, 504 or 429"},
		{in: "crash,p=0.5", err: "crash takes n"},
		{in: "error,colour=red", err: `unknown key "colour"`},
		{in: "error,p", err: `"p" is not key=value`},
		{in: "latency:1s,verbs=poke", err: `verb "poke"`},
		{in: "stale:-1s", err: "must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			f, err := Parse(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse(%q) = %v, %v; want error containing %q", tc.in, f, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.String(); got != tc.want {
				t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got, tc.want)
			}
			if d := f.Describe(); strings.Contains(d, "DURATION") || strings.Contains(d, "Nth") || d == f.String() {
				t.Errorf("Describe() = %q: the parameters are not spelt out", d)
			}
			again, err := Parse(f.String())
			if err != nil || again.String() != f.String() {
				t.Errorf("Parse(%q) = %v, %v: String does not read back", f.String(), again, err)
			}
		})
	}
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 22: "22nd", 101: "101st", 111: "111th"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %q, want %q", n, got, want)
		}
	}
}
