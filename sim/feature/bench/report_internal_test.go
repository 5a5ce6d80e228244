package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kkloud/rlab/operators/style"
)

// TestWriteTableScreens: `rlab up` to its main screen and `rlab lesson
// start 1 --text` to step 1 are a row each, the median of their starts,
// with its ratio to the peer's when there is one; skipped, they say why;
// not measured, they are not there.
func TestWriteTableScreens(t *testing.T) {
	runs := func(starts ...float64) []Peer {
		var ps []Peer
		for _, s := range starts {
			ps = append(ps, Peer{Start: s, Stop: 900})
		}
		return ps
	}
	launches := runs(3000, 3100, 3200)
	tests := []struct {
		name string
		r    Report
		want []string // rows, spaces squeezed
		not  []string
	}{
		{"with kwokctl", Report{Launches: launches, PeerName: "kwokctl", Peers: runs(4000, 4100, 3900),
			Screens: runs(5000, 1000, 2000), Lessons: runs(8000, 9000, 30000)},
			[]string{
				"rlab up: main screen drawn (median of 3)  2.00s",
				"ratio: rlab up / kwokctl  0.50",
				"rlab lesson start 1 --text: step 1 shown (median of 3)  9.00s",
				"ratio: rlab lesson start 1 --text / kwokctl  2.25",
			}, []string{"skipped"}},
		{"an even count: the mean of the middle two", Report{Launches: launches, Screens: runs(1000, 3000), Lessons: runs(2000, 2500, 4000, 6000)},
			[]string{
				"rlab up: main screen drawn (median of 2)  2.00s",
				"rlab lesson start 1 --text: step 1 shown (median of 4)  3.25s",
			}, []string{"ratio"}},
		{"no tmux", Report{Launches: launches, ScreensSkipped: "no tmux"},
			[]string{
				"rlab up: main screen drawn  skipped (no tmux)",
				"rlab lesson start 1 --text: step 1 shown  skipped (no tmux)",
			}, []string{"median of 0"}},
		{"not measured", Report{Launches: launches}, nil,
			[]string{"main screen drawn", "step 1 shown"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := WriteTable(&out, tt.r, []style.Style{style.ClientGo, style.Runtime}); err != nil {
				t.Fatal(err)
			}
			got := squeeze(out.String())
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("table lacks %q:\n%s", w, out.String())
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("table has %q:\n%s", n, out.String())
				}
			}
		})
	}
}
