package bench

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/kkloud/rlab/operators/style"
)

// Startup is one sandbox start (and stop) in milliseconds.
type Startup struct {
	ClusterReady float64            `json:"cluster_ready_ms"` // the screen opens: cluster ready, operators started
	Ready        float64            `json:"ready_ms"`         // the sample 2/2 in every style
	Stop         float64            `json:"stop_ms"`
	Phases       map[string]float64 `json:"phases_ms"`
	Converged    map[string]float64 `json:"converged_ms"` // per style, after the operators started
}

// Peer is one start and stop of a peer's bare cluster (kwokctl).
type Peer struct {
	Start float64 `json:"start_ms"`
	Stop  float64 `json:"stop_ms"`
}

// Report is everything `rlab bench` measured, in one place: the table and
// the JSON are two renderings of it.
type Report struct {
	Backend   string    `json:"backend"`
	Version   string    `json:"version"`
	Startups  []Startup `json:"startups"`
	PhaseList []string  `json:"phase_order"`
	// Peer is kwokctl's bare cluster, started alternately with the sandbox
	// (absent unless asked for).
	PeerName string `json:"peer,omitempty"`
	Peers    []Peer `json:"peer_runs,omitempty"`
	// Launches are `rlab run --operators none` launched as a process, timed
	// to its cluster ready line (Start) and from SIGINT to its exit (Stop),
	// alternated with the peer: start-up as a user meets it.
	Launches []Peer `json:"launch_runs,omitempty"`
	// SlowestLaunch is the start-up timeline the slowest of them printed
	// (rlab run --timings): where an outlier's time went.
	SlowestLaunch string `json:"slowest_launch_timeline,omitempty"`
	// Screens are `rlab up` launched in a terminal (tmux), timed to the
	// first frame of its main screen (Start) and from q to its exit
	// (Stop); Lessons are `rlab lesson start 1 --text --from-start` so
	// launched, timed to lesson 1's step 1 printed and from q to its exit.
	// Both alternate with the launches and the peer (ScreenStartStop).
	Screens []Peer `json:"screen_runs,omitempty"`
	Lessons []Peer `json:"lesson_runs,omitempty"`
	// ScreensSkipped says why there are none of either (no tmux).
	ScreensSkipped string `json:"screens_skipped,omitempty"`

	Edit     *EditResult                     `json:"edit,omitempty"`
	Drift    map[style.Style]Dist            `json:"drift_repair,omitempty"`
	GC       map[style.Style]Dist            `json:"gc,omitempty"`
	Failover map[style.Style]map[string]Dist `json:"failover,omitempty"`
	Idle     map[style.Style]IdleAPI         `json:"idle_api,omitempty"`
	CPU      *CPU                            `json:"idle_cpu,omitempty"`
	Scale    *ScaleResult                    `json:"scale,omitempty"`
	RSSMiB   float64                         `json:"rlab_rss_mib,omitempty"`
	Errors   []string                        `json:"errors,omitempty"`

	// ScaleDefaults is, when the scale run was compared (rlab bench
	// --tune-compare), the run at the libraries' defaults before Scale's.
	ScaleDefaults *ScaleResult `json:"scale_defaults,omitempty"`
}

func medianOf(xs []Startup, f func(Startup) float64) float64 {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		v = append(v, f(x))
	}
	return Median(v)
}

// WriteTable prints r as one table: a row per figure, a column per style
// where the figure is per style.
func WriteTable(w io.Writer, r Report, styles []style.Style) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "measure\t"
	for _, st := range styles {
		head += st.String() + "\t"
	}
	fmt.Fprintf(tw, "%s\n", head)
	row := func(name string, cells ...string) { fmt.Fprintf(tw, "%s\t%s\t\n", name, strings.Join(cells, "\t")) }
	one := func(name, v string) { // a figure for the whole sandbox
		cells := make([]string, len(styles))
		if len(cells) > 0 {
			cells[len(cells)-1] = v
		}
		row(name, cells...)
	}
	perStyle := func(name string, f func(st style.Style) string) {
		cells := make([]string, 0, len(styles))
		for _, st := range styles {
			cells = append(cells, f(st))
		}
		row(name, cells...)
	}
	secs := func(msv float64) string { return fmt.Sprintf("%.2fs", msv/1000) }
	starts := func(ps []Peer) float64 {
		v := make([]float64, 0, len(ps))
		for _, p := range ps {
			v = append(v, p.Start)
		}
		return Median(v)
	}
	peer := starts(r.Peers)
	if n := len(r.Launches); n > 0 {
		launched := starts(r.Launches)
		one(fmt.Sprintf("rlab run --operators none, launched: cluster ready line (median of %d)", n), secs(launched))
		if peer > 0 {
			one(fmt.Sprintf("%s create cluster --wait, launched (median of %d)", r.PeerName, len(r.Peers)), secs(peer))
			one("  ratio: rlab launched / "+r.PeerName, fmt.Sprintf("%.2f", launched/peer))
		}
	}
	screened := func(s Screened, runs []Peer) {
		switch {
		case r.ScreensSkipped != "":
			one(s.Name, "skipped ("+r.ScreensSkipped+")")
		case len(runs) > 0:
			m := starts(runs)
			one(fmt.Sprintf("%s (median of %d)", s.Name, len(runs)), secs(m))
			if peer > 0 {
				cmd, _, _ := strings.Cut(s.Name, ":")
				one("  ratio: "+cmd+" / "+r.PeerName, fmt.Sprintf("%.2f", m/peer))
			}
		}
	}
	screened(UpMain, r.Screens)
	screened(LessonStep, r.Lessons)
	if n := len(r.Startups); n > 0 {
		sfx := fmt.Sprintf(" (median of %d)", n)
		one("in process: cluster ready, operators started"+sfx, secs(medianOf(r.Startups, func(s Startup) float64 { return s.ClusterReady })))
		for _, p := range r.PhaseList {
			one("  "+p, secs(medianOf(r.Startups, func(s Startup) float64 { return s.Phases[p] })))
		}
		perStyle("  hello 2/2 after operators started", func(st style.Style) string {
			return secs(medianOf(r.Startups, func(s Startup) float64 { return s.Converged[st.String()] }))
		})
		one("ready: hello 2/2 everywhere"+sfx, secs(medianOf(r.Startups, func(s Startup) float64 { return s.Ready })))
		one("stop"+sfx, secs(medianOf(r.Startups, func(s Startup) float64 { return s.Stop })))
	}
	if len(r.Peers) > 0 && peer > 0 && len(r.Startups) > 0 {
		one("  ratio: in process, cluster ready / "+r.PeerName, fmt.Sprintf("%.2f", medianOf(r.Startups, func(s Startup) float64 { return s.ClusterReady })/peer))
	}
	dist := func(name string, m map[style.Style]Dist) {
		if m == nil {
			return
		}
		perStyle(name+" p50", func(st style.Style) string { return msCell(m[st].P50, m[st].N) })
		perStyle(name+" p95", func(st style.Style) string { return msCell(m[st].P95, m[st].N) })
	}
	if r.Edit != nil {
		dist("edit → converged", r.Edit.Converge)
		dist("edit → every Pod Ready", r.Edit.Ready)
		perStyle("API requests per edit (Lease aside)", func(st style.Style) string { return fmt.Sprintf("%.1f", r.Edit.APIPerEdit[st]) })
	}
	dist("drift → repaired", r.Drift)
	dist("Echo deleted → children collected", r.GC)
	for _, how := range []string{"kill", "stop"} {
		if r.Failover == nil {
			break
		}
		perStyle("failover after "+how+" p50", func(st style.Style) string {
			if d, ok := r.Failover[st][how]; ok {
				return msCell(d.P50, d.N)
			}
			return "-"
		})
	}
	if r.Idle != nil {
		perStyle("API at rest, requests/min", func(st style.Style) string { return fmt.Sprintf("%.1f", r.Idle[st].PerMin) })
		perStyle("  of which the Lease", func(st style.Style) string { return fmt.Sprintf("%.1f", r.Idle[st].LeasePerMin) })
	}
	scale := func(s *ScaleResult) {
		if s == nil {
			return
		}
		perStyle(fmt.Sprintf("%d Echoes (replicas %d) → converged", s.Echoes, s.Replicas), func(st style.Style) string {
			if v, ok := s.Converged[st]; ok {
				return secs(v)
			}
			return fmt.Sprintf("%d/%d", s.Done[st], s.Echoes)
		})
		if s.Tuning != "" {
			perStyle("  Go operators: "+s.Tuning, func(st style.Style) string {
				l, ok := s.Limits[st]
				if !ok {
					return "-"
				}
				return fmt.Sprintf("%d worker(s), %s", s.Workers[st], l)
			})
		}
		perStyle("  API requests meanwhile", func(st style.Style) string { return fmt.Sprint(s.API[st]) })
		if f := s.ClientGoFloor; f != nil {
			perStyle("  client limit floor (busiest limiter; as one)", func(st style.Style) string {
				if st != style.ClientGo {
					return "-"
				}
				return fmt.Sprintf("%s %s (%d req); %s", secs(f.Ms), f.Limiter, f.Requests, secs(f.AllMs))
			})
			if v, ok := s.Converged[style.ClientGo]; ok && f.Ms > 0 {
				perStyle("  converged ÷ floor", func(st style.Style) string {
					if st != style.ClientGo {
						return "-"
					}
					return fmt.Sprintf("%.2f", v/f.Ms)
				})
			}
		}
		one("  all applied in", secs(s.Applied))
		one("  rlab RSS after (peak)", fmt.Sprintf("%.0f MiB (%.0f)", s.RSSMiB, s.PeakRSSMiB))
	}
	scale(r.ScaleDefaults)
	scale(r.Scale)
	if d, s := r.ScaleDefaults, r.Scale; d != nil && s != nil {
		perStyle("converged, tuned ÷ defaults", func(st style.Style) string {
			a, okA := s.Converged[st]
			b, okB := d.Converged[st]
			if !okA || !okB || b == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", a/b)
		})
	}
	if c := r.CPU; c != nil {
		one(fmt.Sprintf("CPU at rest, sandbox (%.0fs)", c.Window), fmt.Sprintf("%.1f%%", c.Sandbox))
		one("  rlab itself", fmt.Sprintf("%.2f%%", c.Rlab))
		for _, name := range sortedKeys(c.By) {
			if name != "rlab" {
				one("  "+name, fmt.Sprintf("%.2f%%", c.By[name]))
			}
		}
	}
	if r.RSSMiB > 0 {
		one("rlab RSS at the end", fmt.Sprintf("%.0f MiB", r.RSSMiB))
	}
	for _, e := range r.Errors {
		one("error: "+e, "")
	}
	return tw.Flush()
}

func msCell(v float64, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fms", v)
}

func sortedKeys(m map[string]float64) []string {
	out := slices.Collect(maps.Keys(m))
	// Biggest first: what costs most at rest leads.
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	return out
}
