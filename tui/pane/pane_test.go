package pane

import (
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/internal/fixture"
	"github.com/kkloud/rlab/tui/stats"
)

func folded() *stats.Stats {
	s := stats.New(style.All())
	for _, e := range fixture.Events() {
		s.Apply(e)
	}
	return s
}

func vk(verb, resource string) stats.VerbKey { return stats.VerbKey{Verb: verb, Resource: resource} }

// TestTUIPaneGolden renders one pane per case, ANSI stripped; refresh the
// files with `go test ./tui/pane -update`.
func TestTUIPaneGolden(t *testing.T) {
	now := fixture.At(40*time.Second + 300*time.Millisecond)
	snap := fixture.Snapshot()
	deadLeader := func(s *stats.Stats) { s.Styles[style.ClientGo].Replicas["a"].Running = false }
	noEcho := world.Snapshot{Namespaces: map[string]*world.NamespaceView{style.Runtime.Namespace(): {Echoes: map[string]*world.EchoView{}}}}
	scaling := fixture.Namespace(style.ClientGo, 3, 2, style.ClientGo.Identity("a", 4123))
	held := fixture.Namespace(style.Runtime, 2, 2, style.Runtime.Identity("a", 4124))
	held.Echoes["hello"].Deleting, held.Echoes["hello"].Finalizers = true, []string{"kkloud.io/echo-registry"}
	tests := []struct {
		name  string
		style style.Style
		w, h  int
		ns    *world.NamespaceView
		edit  func(*stats.Stats)
		data  func(*Data)
	}{
		{name: "shell", style: style.Shell, w: 53, h: 18, ns: snap.Namespaces[style.Shell.Namespace()]},
		{name: "clientgo", style: style.ClientGo, w: 53, h: 18, ns: snap.Namespaces[style.ClientGo.Namespace()]},
		{name: "runtime-narrow", style: style.Runtime, w: 40, h: 18, ns: snap.Namespaces[style.Runtime.Namespace()]},
		{name: "tiny-pipeline", style: style.ClientGo, w: 30, h: 18, ns: snap.Namespaces[style.ClientGo.Namespace()]},
		{name: "held-by-finalizer", style: style.Runtime, w: 60, h: 18, ns: held},
		{name: "frozen", style: style.ClientGo, w: 53, h: 18, ns: snap.Namespaces[style.ClientGo.Namespace()], edit: func(s *stats.Stats) {
			s.Styles[style.ClientGo].Replicas["a"].Paused = true
			s.Styles[style.ClientGo].Replicas["b"].Paused = true
		}},
		{name: "two-shell-loops", style: style.Shell, w: 53, h: 18, ns: snap.Namespaces[style.Shell.Namespace()], edit: func(s *stats.Stats) {
			s.Styles[style.Shell].Replicas["b"] = &stats.Replica{Name: "b", Running: true, PID: 4242}
		}},
		{name: "dead-leader", style: style.ClientGo, w: 53, h: 18, ns: snap.Namespaces[style.ClientGo.Namespace()], edit: deadLeader},
		{name: "no-echo", style: style.Runtime, w: 53, h: 14, ns: noEcho.Namespaces[style.Runtime.Namespace()]},
		{name: "no-world-yet", style: style.Runtime, w: 53, h: 14},
		{name: "fresh-pod-and-verbs", style: style.ClientGo, w: 60, h: 22, ns: scaling, edit: func(s *stats.Stats) {
			s.Styles[style.ClientGo].Verbs = map[stats.VerbKey]int{vk("list", "echoes"): 3, vk("watch", "echoes"): 2, vk("update", "leases"): 40, vk("create", "deployments"): 2, vk("get", "leases"): 1}
			s.Styles[style.ClientGo].APITotal = 48
		}, data: func(d *Data) {
			d.Fresh = func(p string) bool { return strings.Contains(p, "-cmz") }
			d.Verbs = true
		}},
		{name: "batch", style: style.ClientGo, w: 53, h: 19, ns: snap.Namespaces[style.ClientGo.Namespace()], edit: func(s *stats.Stats) {
			// 60 Echoes created from 10 s, the last converged at 34.31 s.
			s.Styles[style.ClientGo].Batch = &world.Batch{N: 60, Created: fixture.At(10 * time.Second), Converged: fixture.At(34310 * time.Millisecond)}
		}},
		{name: "batch-of-one", style: style.ClientGo, w: 53, h: 18, ns: snap.Namespaces[style.ClientGo.Namespace()], edit: func(s *stats.Stats) {
			s.Styles[style.ClientGo].Batch = &world.Batch{N: 1, Created: fixture.At(10 * time.Second), Converged: fixture.At(11 * time.Second)}
		}},
		{name: "faults", style: style.ClientGo, w: 53, h: 18, ns: snap.Namespaces[style.ClientGo.Namespace()], edit: func(s *stats.Stats) {
			for _, e := range []trace.Event{faultSet("clientgo/a", "stale", true), faultSet("clientgo/a", "conflict", true),
				faultSet("clientgo/b", "stale", true), faultSet("clientgo/b", "stale", false), faultSet("clientgo/a", "stale", true)} {
				s.Apply(e)
			}
		}},
		{name: "shell-fault", style: style.Shell, w: 53, h: 18, ns: snap.Namespaces[style.Shell.Namespace()], edit: func(s *stats.Stats) {
			s.Apply(faultSet("shell/a", "crash", true))
		}},
		{name: "drift-open", style: style.Runtime, w: 53, h: 18, ns: snap.Namespaces[style.Runtime.Namespace()], edit: func(s *stats.Stats) {
			s.Styles[style.Runtime].Drift = &stats.Drift{Object: "Deployment/echo-hello", What: "replicas", Detected: fixture.At(39 * time.Second)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := folded()
			if tt.edit != nil {
				tt.edit(s)
			}
			d := Data{Style: tt.style, Stats: s.Styles[tt.style], NS: tt.ns, Echo: "hello", Now: now, Focused: true}
			if tt.ns != nil {
				d.Summary = Summarize(tt.ns)
			}
			if tt.data != nil {
				tt.data(&d)
			}
			out := Render(d, tt.w, tt.h, common.NewTheme(true))
			for i, l := range out {
				if w := ansi.StringWidth(l); w != tt.w {
					t.Errorf("line %d is %d wide, want %d: %q", i, w, tt.w, ansi.Strip(l))
				}
			}
			golden.RequireEqual(t, ansi.Strip(strings.Join(out, "\n"))+"\n")
		})
	}
}

func TestTUISpark(t *testing.T) {
	tests := []struct {
		in   []int
		want string
	}{
		{[]int{0, 0, 0}, "▁▁▁"},
		{[]int{0, 1, 2, 3, 4}, "▁▂▄▆█"},
		{[]int{0, 8, 4}, "▁█▄"},
	}
	for _, tt := range tests {
		if got := Spark(tt.in); got != tt.want {
			t.Errorf("Spark(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestTUIPaneConverging: the focused Echo's line says how it converges,
// from the world and the world's echo.converged report alone.
func TestTUIPaneConverging(t *testing.T) {
	now := fixture.At(10 * time.Second)
	created := &stats.Convergence{CreatedMS: 1234, CreatedAt: fixture.At(3 * time.Second)}
	edited := &stats.Convergence{CreatedMS: 1234, CreatedAt: fixture.At(3 * time.Second), EditMS: 45, EditAt: fixture.At(9 * time.Second)}
	ns := func(replicas, deployReady int, status string, deploy bool) *world.NamespaceView {
		n := fixture.Namespace(style.ClientGo, replicas, deployReady, "")
		e := n.Echoes["hello"]
		e.Ready = status
		if !deploy {
			e.Deployment = nil
		}
		return n
	}
	// generations sets the Echo's generation and the one its status is for.
	generations := func(n *world.NamespaceView, gen, observed int64) *world.NamespaceView {
		n.Echoes["hello"].Generation, n.Echoes["hello"].ObservedGeneration = gen, observed
		return n
	}
	tests := []struct {
		name string
		ns   *world.NamespaceView
		conv *stats.Convergence
		want string
	}{
		{"creating", ns(2, 0, "", false), nil, `Echo/hello -/2 creating ×2`},
		{"waiting for pods", ns(2, 1, "0/2", true), nil, `Echo/hello 0/2 waiting for pods 1/2 ×2`},
		{"status not written", ns(2, 2, "1/2", true), nil, `Echo/hello 1/2 pods ready, status not written yet ×2`},
		{"converged", ns(2, 2, "2/2", true), created, `Echo/hello 2/2 converged in 1.23s ×2`},
		{"converged, then edited", ns(2, 2, "2/2", true), edited, `Echo/hello 2/2 converged in 1.23s · edit 45ms ×2`},
		{"an edit under way keeps the time", ns(3, 2, "2/3", true), created, `Echo/hello 2/3 waiting for pods 2/3 · created in 1.23s ×3`},
		{"Deployment deleted after converging", ns(2, 2, "2/2", false), created, `Echo/hello 2/2 no Deployment · created in 1.23s ×2`},
		{"ready before the screen saw it", ns(2, 2, "2/2", true), nil, `Echo/hello 2/2 ×2`},
		{"status for an older spec", generations(ns(3, 2, "2/2", true), 4, 3), nil, `Echo/hello 2/2 stale: status of gen 3, spec gen 4 waiting for pods 2/3 ×3`},
		{"status for this spec", generations(ns(2, 2, "2/2", true), 4, 4), nil, `Echo/hello 2/2 ×2`},
		{"no observedGeneration written", generations(ns(2, 2, "2/2", true), 4, 0), nil, `Echo/hello 2/2 ×2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := stats.New([]style.Style{style.ClientGo}).Styles[style.ClientGo]
			if tt.conv != nil {
				st.Converged["hello"] = tt.conv
			}
			d := Data{Style: style.ClientGo, Stats: st, NS: tt.ns, Echo: "hello", Now: now}
			got := ansi.Strip(Tree(d, st, 120, common.NewTheme(true))[0])
			if !strings.HasPrefix(got, tt.want) {
				t.Fatalf("got  %q\nwant %q…", got, tt.want)
			}
		})
	}
}

// TestTUIPaneClientLimit: each Go pane says the client-side limit its
// replicas reported; the shell pane that each kubectl is a process.
// faultSet is the event of a fault turned on or off at a replica's proxy.
func faultSet(replica, kind string, on bool) trace.Event {
	return trace.Event{Time: fixture.At(39 * time.Second), Source: "proxy/" + replica, Kind: trace.FaultSet,
		Payload: trace.FaultSwitch{Fault: kind, Spec: kind, On: on}}
}

func TestTUIPaneClientLimit(t *testing.T) {
	tests := []struct {
		name  string
		style style.Style
		limit *stats.ClientLimit
		want  string
	}{
		{"client-go default", style.ClientGo, &stats.ClientLimit{QPS: 5, Burst: 10}, "client limit 5/s burst 10"},
		{"fractional", style.ClientGo, &stats.ClientLimit{QPS: 2.5, Burst: 4}, "client limit 2.5/s burst 4"},
		{"controller-runtime", style.Runtime, &stats.ClientLimit{QPS: -1}, "client limit none"},
		{"not reported", style.Runtime, nil, ""},
		{"shell", style.Shell, nil, "a new kubectl per call: no shared limiter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := stats.New([]style.Style{tt.style}).Styles[tt.style]
			st.Limit = tt.limit
			body := ansi.Strip(strings.Join(Body(Data{Style: tt.style, Stats: st, Echo: "hello"}, 100, common.NewTheme(true)), "\n"))
			if tt.want == "" {
				if strings.Contains(body, "limit") {
					t.Fatalf("a limit nobody reported:\n%s", body)
				}
				return
			}
			if !strings.Contains(body, tt.want) {
				t.Fatalf("no %q in:\n%s", tt.want, body)
			}
		})
	}
}

// TestTUIPaneWords: a pane in another language says none of its own
// English words, says theirs instead, and keeps every line exactly the
// pane's width (CJK characters take two columns).
func TestTUIPaneWords(t *testing.T) {
	now := fixture.At(40*time.Second + 300*time.Millisecond)
	snap := fixture.Snapshot()
	nsOf := func(st style.Style) *world.NamespaceView { return snap.Namespaces[st.Namespace()] }
	// english are words of the panes that no data shows (the pipeline line,
	// with its stage names, is left out).
	english := []string{"next poll in", "polling now", "every ", "reconciles", "cause:", "error:", "leader:", "restarts",
		" ready", "converged in", "collected by GC", " req", "transition", "s left", "waiting", "client limit",
		"server APF only", "no shared limiter", "queue ", "depth", "adds", "retries", "frozen", "not repaired",
		" ago", "now", "watch events", "writes", "denied", "not in its Role", "no election", "Echoes", "pods ", "none",
		"trace of its own", "no own trace", "Lease yet", "released", "expired", " down", "drift", "replica ", "holds a dead"}
	tests := []struct {
		name  string
		style style.Style
		ns    *world.NamespaceView
		edit  func(*stats.Operator)
		data  func() Data // instead of the built-in style's pane
		want  []string    // English words whose translation the pane shows
	}{
		{name: "shell", style: style.Shell, ns: nsOf(style.Shell),
			want: []string{"next poll in ", "a new kubectl per call: no shared limiter", "reconciles ", "cause: ", "leader: ", "none",
				" (1 replica, no election)", "Echoes ", " converged in ", "drift repaired in "}},
		{name: "shell-two-loops", style: style.Shell, ns: nsOf(style.Shell), edit: func(o *stats.Operator) {
			o.Replicas["b"] = &stats.Replica{Name: "b", Running: true, PID: 4242}
			o.Replicas["a"].Paused = true
		}, want: []string{"leader: "}},
		{name: "clientgo", style: style.ClientGo, ns: nsOf(style.ClientGo), edit: func(o *stats.Operator) {
			o.Batch = &world.Batch{N: 60, Created: fixture.At(10 * time.Second), Converged: fixture.At(34310 * time.Millisecond)}
		}, want: []string{"queue ", "client limit ", "reconciles ", "leader: ", " converged in ", "drift repaired in "}},
		{name: "dead-and-frozen", style: style.ClientGo, ns: nsOf(style.ClientGo), edit: func(o *stats.Operator) {
			o.Replicas["a"].Running = false
			o.Replicas["b"].Paused = true
		}, want: []string{"leader: "}},
		{name: "runtime-drift-open", style: style.Runtime, ns: nsOf(style.Runtime), edit: func(o *stats.Operator) {
			o.Drift = &stats.Drift{Object: "Deployment/echo-hello", What: "replicas", Detected: fixture.At(39 * time.Second)}
		}, want: []string{"client limit ", "none", " (server APF only)"}},
		{name: "no-world-yet", style: style.Runtime, edit: func(o *stats.Operator) { o.Drift = nil },
			want: []string{"Echoes …", "no Lease yet", "drift: none yet"}},
		{name: "custom", data: func() Data { return customData("", "", nil) },
			want: []string{"watches", "watch events ", "  last ", "writes ", ": not in its Role", "Lease: none (no election seen)",
				"no trace of its own: seen from its proxy and the cluster"}},
	}
	for _, lang := range []string{"vi", "zh", "ru"} {
		ws := lessonview.WordsFor(lang)
		if ws == nil {
			t.Fatalf("no words for %s", lang)
		}
		for _, tt := range tests {
			for _, w := range []int{34, 53, 120} {
				t.Run(lang+"/"+tt.name+"/"+strconv.Itoa(w), func(t *testing.T) {
					var d Data
					if tt.data != nil {
						d = tt.data()
					} else {
						s := folded()
						if tt.edit != nil {
							tt.edit(s.Styles[tt.style])
						}
						d = Data{Style: tt.style, Stats: s.Styles[tt.style], NS: tt.ns, Echo: "hello", Now: now, Focused: true}
						if tt.ns != nil {
							d.Summary = Summarize(tt.ns)
						}
					}
					d.Words = ws
					out := Render(d, w, 40, common.NewTheme(true))
					for i, l := range out {
						if lw := ansi.StringWidth(l); lw != w {
							t.Errorf("line %d is %d wide, want %d: %q", i, lw, w, ansi.Strip(l))
						}
					}
					if w < 120 {
						return // cut lines say less: the words are checked on the wide pane
					}
					body := out[1 : len(out)-1]
					if d.Style.Traits().Traces {
						body = body[1:] // the pipeline: stage names are code's
					}
					text := ansi.Strip(strings.Join(body, "\n"))
					for _, e := range english {
						if hasEnglish(text, e) {
							t.Errorf("%q is still English in:\n%s", e, text)
						}
					}
					for _, k := range tt.want {
						if tr := strings.TrimSpace(ws.T(k)); !strings.Contains(text, tr) {
							t.Errorf("no %q (%q) in:\n%s", tr, k, text)
						}
					}
				})
			}
		}
	}
}

// TestTUIPaneStarting: before the operators start, a replica the trace has
// not shown is starting, not waiting; once the start-up is over, it waits.
func TestTUIPaneStarting(t *testing.T) {
	tests := []struct {
		name     string
		style    style.Style
		starting bool
		want     string
	}{
		{"client-go starting", style.ClientGo, true, "a starting  b starting"},
		{"client-go started", style.ClientGo, false, "a waiting  b waiting"},
		{"shell starting", style.Shell, true, "replica a starting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := stats.New([]style.Style{tt.style}).Styles[tt.style]
			body := ansi.Strip(strings.Join(Body(Data{Style: tt.style, Stats: st, Echo: "hello", Starting: tt.starting}, 100, common.NewTheme(true)), "\n"))
			if !strings.Contains(body, tt.want) {
				t.Fatalf("no %q in:\n%s", tt.want, body)
			}
		})
	}
}

// hasEnglish says whether text holds the English fragment e, as a word of
// its own where e ends in a letter: " req" is not in " request", a word a
// language may keep in English (its glossary).
func hasEnglish(text, e string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], e)
		if j < 0 {
			return false
		}
		end := i + j + len(e)
		last, _ := utf8.DecodeLastRuneInString(e)
		next, _ := utf8.DecodeRuneInString(text[end:])
		if !unicode.IsLetter(last) || end == len(text) || !unicode.IsLetter(next) {
			return true
		}
		i = end
	}
}

// TestTUIPaneReplicaSets: old ReplicaSets scaled to zero are counted, not
// listed; a Deployment scaled to zero (an Echo of 0 replicas) has no other,
// and its ReplicaSet is listed, not called old.
func TestTUIPaneReplicaSets(t *testing.T) {
	tests := []struct {
		name        string
		replicas    int
		rs          []*world.ReplicaSetView
		want, never string
	}{
		{"rolled out", 2, []*world.ReplicaSetView{{Name: "echo-hello-new", Replicas: 2, ReadyReplicas: 2}, {Name: "echo-hello-old"}},
			"ReplicaSet …-new 2/2", "…-old"},
		{"rolled out, counted", 2, []*world.ReplicaSetView{{Name: "echo-hello-new", Replicas: 2, ReadyReplicas: 2}, {Name: "echo-hello-old"}},
			"1 old RS", ""},
		{"scaled to zero", 0, []*world.ReplicaSetView{{Name: "echo-hello-only"}}, "ReplicaSet …-only 0/0", "old RS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := fixture.Namespace(style.ClientGo, tt.replicas, tt.replicas, "")
			n.Echoes["hello"].Deployment.ReplicaSets = tt.rs
			st := stats.New([]style.Style{style.ClientGo}).Styles[style.ClientGo]
			d := Data{Style: style.ClientGo, Stats: st, NS: n, Echo: "hello", Now: fixture.At(10 * time.Second)}
			got := ansi.Strip(strings.Join(Tree(d, st, 120, common.NewTheme(true)), "\n"))
			if !strings.Contains(got, tt.want) || (tt.never != "" && strings.Contains(got, tt.never)) {
				t.Fatalf("want %q and never %q in\n%s", tt.want, tt.never, got)
			}
		})
	}
}
