package actions

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/fault"
	"github.com/kkloud/rlab/sim/feature/check"
	"github.com/kkloud/rlab/sim/poll"
	"github.com/kkloud/rlab/sim/proxy"
	"github.com/kkloud/rlab/sim/rbac"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/ship"
)

// Args are an action's arguments, as the course validated them (an
// alias, so that the table of actions reads as the course's).
type Args = lessons.Args

// actionKind is how a sandbox action autoplay can perform is done, each
// one the student can also do by hand. Adding an action is adding an entry
// to actions, its arguments and words to lessons' (and a line to
// README.md).
type actionKind struct {
	// do performs it once. An action with a style argument has each
	// instead: it is performed for each style the argument names, in turn.
	do   func(ctx context.Context, p *Player, a Args) error
	each func(ctx context.Context, p *Player, a Args, st style.Style) error
}

// actions is the closed set of actions autoplay performs.
var actions = map[string]actionKind{
	// Restart the student's operator running another script of the
	// lesson's folder: the version with this step's fix, which the student
	// would otherwise write.
	lessons.ActRunOperator: {
		do: func(ctx context.Context, p *Player, a Args) error {
			return p.runOperator(ctx, style.Style(a.Str("operator")), a.File("file"))
		},
	},

	// Restart the student's Go project with the files of a folder of the
	// lesson's laid over it: this step's fix, which the student would
	// otherwise make.
	lessons.ActRunProject: {
		do: func(ctx context.Context, p *Player, a Args) error {
			return p.runOperator(ctx, style.Style(a.Str("operator")), a.File("project"))
		},
	},

	// A new Echo in every style's namespace.
	"create_echo": {
		do: func(ctx context.Context, p *Player, a Args) error {
			n, _ := a.Int("replicas")
			return p.sb.Student().CreateEchoIn(ctx, setStyles(a), a.Str("name"), a.Str("message"), n)
		},
	},

	// Delete the Echo in every style; with cascade: orphan, its Deployment
	// stays behind.
	"delete_echo": {
		do: func(ctx context.Context, p *Player, a Args) error {
			if a.Str("cascade") == "orphan" {
				return p.sb.Student().DeleteEchoOrphan(ctx, a.Str("name"))
			}
			return p.sb.Student().DeleteEcho(ctx, a.Str("name"))
		},
	},

	// count new Echoes prefix-001 … in every style (or those style names),
	// all at once.
	"create_echoes": {
		do: func(ctx context.Context, p *Player, a Args) error {
			n, _ := a.Int("count")
			r, ok := a.Int("replicas")
			if !ok {
				r = 1
			}
			msg := a.Str("message")
			if msg == "" {
				msg = a.Str("prefix")
			}
			return p.sb.Admin().CreateEchoes(ctx, setStyles(a), a.Str("prefix"), n, r, msg)
		},
	},

	// Delete every Echo create_echoes made with prefix, in every style (or
	// those style names).
	"delete_echoes": {
		do: func(ctx context.Context, p *Player, a Args) error {
			return p.sb.Admin().DeleteEchoes(ctx, setStyles(a), a.Str("prefix"))
		},
	},

	// Change spec.replicas in every style.
	"set_replicas": {
		do: func(ctx context.Context, p *Player, a Args) error {
			n, _ := a.Int("replicas")
			return p.sb.Student().SetReplicasIn(ctx, setStyles(a), a.Str("name"), n)
		},
	},

	// Change spec.message in every style.
	"set_message": {
		do: func(ctx context.Context, p *Player, a Args) error {
			return p.sb.Student().SetMessageIn(ctx, setStyles(a), a.Str("name"), a.Str("message"))
		},
	},

	// Change spec.message count times, as fast as the apiserver takes it.
	"burst_messages": {
		do: func(ctx context.Context, p *Player, a Args) error {
			count, _ := a.Int("count")
			for i := 1; i <= count; i++ {
				if err := p.sb.Student().SetMessage(ctx, a.Str("name"), fmt.Sprintf("burst %d of %d", i, count)); err != nil {
					return err
				}
			}
			return nil
		},
	},

	// Wait a while between two acts, as a step's command sleeps.
	"wait": {
		do: func(ctx context.Context, p *Player, a Args) error { return poll.Sleep(ctx, a.Dur("for")) },
	},

	// Touch the Echo without changing its spec (every `every`, for `for`).
	"annotate": {
		do: func(ctx context.Context, p *Player, a Args) error {
			return again(ctx, a, 50*time.Millisecond, func() error { return p.annotate(ctx, a.Str("name")) })
		},
	},

	// `kubectl replace` with a copy someone changed meanwhile: the
	// apiserver must refuse it with 409 Conflict.
	"stale_update": {
		do: func(ctx context.Context, p *Player, a Args) error {
			return p.forEach(lessons.ExpandStyle(lessons.StyleAll), func(st style.Style) error { return p.staleUpdate(ctx, st, a.Str("name")) })
		},
	},

	// What the style's ServiceAccount may do in its namespace, asked as
	// `kubectl auth can-i --list --as=system:serviceaccount:NS:NAME` asks:
	// a SelfSubjectRulesReview, impersonating it, as the student.
	"rules_review": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			_, err := p.sb.StudentAPI().ReviewRules(ctx, st)
			if apierrors.IsForbidden(err) {
				// A classroom student may not impersonate: the refusal is
				// the apiserver's answer, and the request was made.
				return nil
			}
			return err
		},
	},

	// Delete the Echo's Deployment by hand (drift).
	"delete_deployment": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			return p.sb.Student().DeleteDeployment(ctx, st, a.Str("name"))
		},
	},

	// Write status.ready of the Echo by hand, through the status
	// subresource (kubectl patch --subresource=status): a status that says
	// something else than the operator would.
	"set_status": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			patch := []byte(`{"status":{"ready":` + strconv.Quote(a.Str("ready")) + `}}`)
			_, err := p.sb.Student().Echoes(st).Patch(ctx, a.Str("name"), types.MergePatchType, patch,
				metav1.PatchOptions{FieldManager: "kubectl-patch"}, "status")
			return err
		},
	},

	// Set data[key] = value of ConfigMap name, creating it if missing (the
	// ConfigMap echo-defaults holds the default message, key message).
	"set_configmap": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			return p.sb.Student().SetConfigMap(ctx, st, a.Str("name"), a.Str("key"), a.Str("value"))
		},
	},

	// Delete ConfigMap name (none there: nothing to do).
	"delete_configmap": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			return p.sb.Student().DeleteConfigMap(ctx, st, a.Str("name"))
		},
	},

	// Scale the Echo's Deployment by hand (drift).
	"scale_deployment": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			n, _ := a.Int("replicas")
			return p.sb.Student().ScaleDeployment(ctx, st, a.Str("name"), n)
		},
	},

	// Read the Echo's Deployment, as kubectl get does.
	"get_deployment": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			return p.sb.Student().GetDeployment(ctx, st, a.Str("name"))
		},
	},

	// Ask the apiserver which resources it serves, as `kubectl
	// api-resources` does (discovery: /api and /apis).
	"api_resources": {
		do: func(ctx context.Context, p *Player, a Args) error {
			r, err := p.sb.StudentAPI().DiscoverEchoes(ctx)
			if err == nil {
				said(ctx, "discovery: %s, kind %s, short names %s, namespaced %t", r.Name, r.Kind, strings.Join(r.ShortNames, ","), r.Namespaced)
			}
			return err
		},
	},

	// Read the OpenAPI schema the apiserver publishes for the Echo, as
	// `kubectl explain` does.
	"explain": {
		do: func(ctx context.Context, p *Player, a Args) error {
			_, err := p.sb.StudentAPI().ExplainEchoes(ctx)
			return err
		},
	},

	// Read the Echo, as kubectl get does.
	"get_echo": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			return p.sb.Student().GetEcho(ctx, st, a.Str("name"))
		},
	},

	// Apply lesson 16's ValidatingAdmissionPolicy (an Echo may ask for at
	// most max replicas) and its binding, and wait until it is enforced.
	"apply_policy": {
		do: func(ctx context.Context, p *Player, a Args) error {
			n, _ := a.Int("max")
			return p.sb.StudentAPI().ApplyPolicy(ctx, n)
		},
	},

	// Delete lesson 16's policy and its binding.
	"delete_policy": {
		do: func(ctx context.Context, p *Player, a Args) error { return p.sb.StudentAPI().DeletePolicy(ctx) },
	},

	// Turn lesson 19's validating webhook on (the apiserver calls
	// controller-runtime's replica a, and waits until it does) or off.
	"webhook": {
		do: func(ctx context.Context, p *Player, a Args) error {
			if a.Bool("on") {
				return p.sb.StudentAPI().ApplyWebhook(ctx)
			}
			return p.sb.StudentAPI().DeleteWebhook(ctx)
		},
	},

	// Server-side apply spec.replicas of the Echo's Deployment as another
	// field manager, with or without --force-conflicts; with for, again
	// every `every` (default 1s) until for has passed.
	"apply_replicas": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			n, _ := a.Int("replicas")
			return again(ctx, a, time.Second, func() error {
				return p.sb.Student().ApplyReplicas(ctx, st, a.Str("name"), n, a.Str("manager"), a.Bool("force"))
			})
		},
	},

	// Restart the replicas watching their Deployments, or not
	// (--watch-owned=false).
	"watch_owned": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			if err := p.sb.Flags().SetWatchOwned(st, a.Bool("watch")); err != nil {
				return err
			}
			said(ctx, "restarting %s with --watch-owned=%t", p.sources(st), a.Bool("watch"))
			return nil
		},
	},

	// Crash the leader (SIGKILL): the standby waits for the Lease to expire.
	"kill_leader": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			who, err := p.onLeader(ctx, st, p.sb.Operators().KillLeader)
			if err == nil {
				said(ctx, "killed %s, the leader (SIGKILL)", who)
			}
			return err
		},
	},

	// Stop the leader gracefully (SIGTERM): it releases the Lease.
	"stop_leader": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			who, err := p.onLeader(ctx, st, p.sb.Operators().StopLeader)
			if err == nil {
				said(ctx, "stopped %s, the leader (SIGTERM)", who)
			}
			return err
		},
	},

	// Cut the leader off the apiserver: its requests are refused, or hang.
	"partition_leader": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			mode := proxy.Refuse
			if a.Str("mode") == "hang" {
				mode = proxy.Hang
			}
			who, err := p.leader(ctx, st)
			if err != nil {
				return err
			}
			if err := p.sb.Faults().Partition(who, mode); err != nil {
				return err
			}
			said(ctx, "partitioned %s (%s)", who, a.Str("mode"))
			return nil
		},
	},

	// Reconnect every replica to the apiserver.
	"heal": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			for _, r := range p.sb.Operators().Replicas(st) {
				if err := p.sb.Faults().Partition(st.Source(r), proxy.Normal); err != nil {
					return err
				}
			}
			said(ctx, "healed %s", p.sources(st))
			return nil
		},
	},

	// Delay every API request of the style's replicas.
	"set_latency": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			d, err := time.ParseDuration(a.Str("latency"))
			if err != nil {
				return err
			}
			for _, r := range p.sb.Operators().Replicas(st) {
				px := p.sb.Faults().Proxy(st.Source(r))
				if px == nil {
					return fmt.Errorf("no proxy for %s", st.Source(r))
				}
				px.SetLatency(d)
			}
			if d == 0 {
				said(ctx, "%s at full speed again", p.sources(st))
			} else {
				said(ctx, "slowed %s: every API request delayed %s", p.sources(st), d)
			}
			return nil
		},
	},

	// Turn a fault on at every replica's proxy, or off.
	"fault": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			f, off, err := fault.ParseArg(a.Str("fault"))
			if err != nil {
				return err
			}
			if off {
				p.sb.Faults().ClearFault(st, f.Kind)
				what := "every fault"
				if f.Kind != "" {
					what = "the " + string(f.Kind) + " fault"
				}
				said(ctx, "%s: %s off", p.sources(st), what)
				return nil
			}
			if err := p.sb.Faults().SetFault(st, f); err != nil {
				return err
			}
			said(ctx, "%s under the fault %s: %s", p.sources(st), f, f.Describe())
			return nil
		},
	},

	// Grant only verbs on resource in the style's Role.
	"role_verbs": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			return p.sb.Admin().SetRoleVerbs(ctx, st, a.Str("resource"), a.List("verbs"))
		},
	},

	// Give the style's Role back its least-privilege rules.
	"role_reset": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			return p.sb.Admin().ResetRole(ctx, st)
		},
	},

	// Restart the replicas with or without --finalizer.
	"finalizer": restartWith("--finalizer", (*sandbox.Flags).SetFinalizer),

	// Restart the controller-runtime replicas with or without --warmup
	// (EnableWarmup: the controller's watches start before it leads).
	"warmup": restartWith("--warmup", (*sandbox.Flags).SetWarmup),

	// Restart the controller-runtime replicas with GenerationChangedPredicate
	// on no watch, the Echo watch, or every watch.
	"generation_predicate": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			if err := p.sb.Flags().SetGenerationPredicate(st, a.Str("where")); err != nil {
				return err
			}
			said(ctx, "restarting %s with --generation-predicate=%s", p.sources(st), a.Str("where"))
			return nil
		},
	},

	// Restart the controller-runtime replicas with their cache of
	// ConfigMaps as it is (all) or narrowed to echo-defaults (named).
	"defaults_cache": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			if err := p.sb.Flags().SetDefaultsCache(st, a.Str("cache")); err != nil {
				return err
			}
			said(ctx, "restarting %s with --defaults-cache=%s", p.sources(st), a.Str("cache"))
			return nil
		},
	},

	// Restart a Go style's replicas with --workers, --qps and --burst; one
	// left out is the library's default (all left out: the baseline).
	"tune": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			t := tuningOf(a)
			if err := p.sb.Flags().SetTuning(st, t); err != nil {
				return err
			}
			said(ctx, "restarting %s with %s", p.sources(st), t)
			return nil
		},
	},

	// Freeze every replica (SIGSTOP), as if the operator hung.
	"pause_operators": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			if err := p.sb.Operators().Pause(st); err != nil {
				return err
			}
			said(ctx, "froze %s (SIGSTOP)", p.sources(st))
			return nil
		},
	},

	// Let every frozen replica go on (SIGCONT).
	"resume_operators": {
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			var frozen []string
			for _, r := range p.sb.Operators().ReplicaStatuses() {
				if r.Style == st && r.Paused {
					frozen = append(frozen, r.Name)
				}
			}
			if err := p.sb.Operators().Resume(st); err != nil {
				return err
			}
			if len(frozen) == 0 {
				said(ctx, "%s: no replica was frozen", st)
			} else {
				said(ctx, "let %s go on (SIGCONT)", strings.Join(frozen, ", "))
			}
			return nil
		},
	},

	// A second shell loop, with no election; with suffix, a newer build
	// that appends it to the message.
	"add_shell_replica": {
		do: func(ctx context.Context, p *Player, a Args) error {
			if err := p.sb.Operators().AddShellReplica(a.Str("suffix")); err != nil {
				return err
			}
			if s := a.Str("suffix"); s != "" {
				said(ctx, "started a second shell loop that appends %q to the message", s)
			} else {
				said(ctx, "started a second shell loop")
			}
			return nil
		},
	},

	// Run the student's operator as N replicas here, with flags added.
	lessons.ActReplicas: {
		do: func(ctx context.Context, p *Player, a Args) error {
			st := style.Style(a.Str("operator"))
			n, _ := a.Int("replicas")
			if err := p.sb.Customs().SetReplicas(st, n, a.Str("args")); err != nil {
				return err
			}
			// Done when every one of them runs: a replica that then exits
			// is the operator's to explain (its log), not this action's.
			return p.poll(ctx, 30*time.Second, func() string {
				n, running := 0, 0
				for _, r := range p.sb.Operators().ReplicaStatuses() {
					if r.Style == st {
						n++
						if r.Running || r.Restarts > 0 {
							running++
						}
					}
				}
				if n != len(p.sb.Operators().Replicas(st)) || running < n {
					return fmt.Sprintf("%d of %d replicas of %s started", running, len(p.sb.Operators().Replicas(st)), st)
				}
				return ""
			})
		},
	},

	// Ship the student's Go operator into the cluster: its image built and
	// loaded into the kind node, its project's config/rbac granted to its
	// ServiceAccount, a Deployment instead of its replicas here.
	lessons.ActShip: {
		do: func(ctx context.Context, p *Player, a Args) error {
			st := style.Style(a.Str("operator"))
			dir, err := p.sb.Customs().ProjectDir(st)
			if err != nil {
				return err
			}
			g, err := rbac.Load(filepath.Join(dir, ship.RBACDir))
			if err != nil {
				return fmt.Errorf("%w: write it from your markers first: %s", err, ship.ControllerGen)
			}
			n, _ := a.Int("replicas")
			_, err = p.sb.Ship(ctx, st, sandbox.ShipOptions{Dir: dir, Replicas: int32(n), RBAC: g,
				Progress: func(s string) { said(ctx, "%s", s) }})
			return err
		},
	},

	// Bring a shipped operator back to this machine.
	lessons.ActUnship: {
		do: func(ctx context.Context, p *Player, a Args) error {
			st := style.Style(a.Str("operator"))
			if _, ok := p.sb.Shipped(st); !ok {
				return fmt.Errorf("%s is not shipped: rlab do ship %s ships it", st, st)
			}
			if err := p.sb.Unship(ctx, st); err != nil {
				return err
			}
			said(ctx, "deleted Deployment %s; %s runs on this machine again", st.Operator(), st)
			return nil
		},
	},

	// Stop the second shell loop for good.
	"remove_shell_replica": {
		do: func(ctx context.Context, p *Player, a Args) error {
			var extra []string // the loops beyond those the sandbox began with
			for _, r := range p.sb.Operators().ReplicaStatuses() {
				if r.Style == style.Shell && !slices.Contains(p.sb.Operators().Replicas(style.Shell), r.Replica) {
					extra = append(extra, r.Name)
				}
			}
			if err := p.sb.Operators().RemoveShellReplica(); err != nil {
				return err
			}
			if len(extra) == 0 {
				said(ctx, "no second shell loop ran: nothing to stop")
			} else {
				said(ctx, "stopped %s", strings.Join(extra, ", "))
			}
			return nil
		},
	},
}

// setStyles are the styles a create_echoes or delete_echoes names, nil
// (every style the sandbox runs) if it names none; all styles at once,
// so that they race fairly.
func setStyles(a Args) []style.Style {
	if a.Str("style") == "" {
		return nil
	}
	return lessons.ExpandStyle(a.Str("style"))
}

// restartWith is the action that restarts a style's replicas with flag
// (on: true) or without it, through set.
func restartWith(flag string, set func(*sandbox.Flags, style.Style, bool) error) actionKind {
	with := func(on bool) string { return lessons.RestartWith(flag, on) }
	return actionKind{
		each: func(ctx context.Context, p *Player, a Args, st style.Style) error {
			if err := set(p.sb.Flags(), st, a.Bool("on")); err != nil {
				return err
			}
			said(ctx, "restarting %s %s", p.sources(st), with(a.Bool("on")))
			return nil
		},
	}
}

// again does fn once, or with the action's for argument again every
// `every` (def if unset) until for has passed.
func again(ctx context.Context, a Args, def time.Duration, fn func() error) error {
	end := time.Now().Add(a.Dur("for"))
	every := a.Dur("every")
	if every == 0 {
		every = def
	}
	for {
		if err := fn(); err != nil {
			return err
		}
		if time.Now().Add(every).After(end) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

// Do performs one action, and checks the apiserver's refusal if the lesson
// expects one. It publishes an rlab.act event as it begins.
func (p *Player) Do(ctx context.Context, op lessons.Op) error { return p.DoVia(ctx, op, p.via) }

// DoVia is Do, saying who asked for it: trace.ViaPlay, ViaKey, ViaCommand.
func (p *Player) DoVia(ctx context.Context, op lessons.Op, via string) error {
	p.act(op, via)
	err := p.do(ctx, op)
	want := op.Args.Str("expect_error")
	if want == "" {
		return err
	}
	got := map[string]func(error) bool{"invalid": apierrors.IsInvalid, "conflict": apierrors.IsConflict, "forbidden": apierrors.IsForbidden,
		"internal": apierrors.IsInternalError}[want]
	if err == nil {
		return fmt.Errorf("want the apiserver to refuse it (%s), and it did not", want)
	}
	if !got(err) {
		return fmt.Errorf("want a %s error, got: %w", want, err)
	}
	return nil
}

// act publishes that op begins: the time a step's acting began, whoever
// asked for it.
func (p *Player) act(op lessons.Op, via string) {
	f := trace.Action{Action: op.Name, Via: via}
	st := op.Args.Str("style")
	if st == "" {
		st = op.Args.Str("operator")
	}
	if st != "" {
		f.Style = st
	}
	p.sb.Bus().Publish(trace.Event{Time: time.Now(), Source: trace.SourceRlab, Kind: trace.Act, Payload: f})
}

func (p *Player) do(ctx context.Context, op lessons.Op) error {
	act, ok := actions[op.Name]
	switch {
	case !ok:
		return fmt.Errorf("unknown action %q", op.Name) // the loader lets none through
	case act.each != nil:
		return p.forEach(op.Args.Styles(), func(st style.Style) error { return act.each(ctx, p, op.Args, st) })
	}
	return act.do(ctx, p, op.Args)
}

// forEach runs fn in turn for each of styles that the sandbox runs.
func (p *Player) forEach(styles []style.Style, fn func(st style.Style) error) error {
	for _, st := range styles {
		if !slices.Contains(p.sb.Styles(), st) {
			continue
		}
		if err := fn(st); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	return nil
}

// leader waits (a bounded while) until someone holds st's Lease.
func (p *Player) leader(ctx context.Context, st style.Style) (string, error) {
	var name string
	err := poll.Until(ctx, p.Poll, 60*time.Second, "", func(ctx context.Context) (bool, error) {
		var err error
		name, _, err = p.sb.Operators().Leader(ctx, st)
		return err == nil, err
	})
	if err != nil {
		return "", fmt.Errorf("no leader: %w", err)
	}
	return name, nil
}

// onLeader does fn (kill, stop) to st's leader, once there is one that
// runs, and says whom. fn looks the leader up itself: if the Lease changed
// hands in between (its holder lost it and exited, under load), it waits
// for the next one rather than fail.
func (p *Player) onLeader(ctx context.Context, st style.Style, fn func(context.Context, style.Style) (string, error)) (string, error) {
	var who string
	var done error // what fn answered once there was a leader
	err := poll.Until(ctx, p.Poll, 60*time.Second, "", func(ctx context.Context) (bool, error) {
		who, done = fn(ctx, st)
		if errors.Is(done, sandbox.ErrNoLeader) {
			return false, done
		}
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("no leader: %w", err)
	}
	return who, done
}

// sources names st's replicas: "clientgo/a, clientgo/b".
func (p *Player) sources(st style.Style) string {
	var out []string
	for _, r := range p.sb.Operators().Replicas(st) {
		out = append(out, st.Source(r))
	}
	return strings.Join(out, ", ")
}

// runOperator restarts operator st running script f, and waits (a
// bounded while) until every replica runs it and it has made its first
// pass: its requests began, then paused. Checked sooner, the new version
// would be blamed for what the old one left.
func (p *Player) runOperator(ctx context.Context, st style.Style, f lessons.File) error {
	if !slices.Contains(p.sb.Styles(), st) {
		return fmt.Errorf("this sandbox runs no operator %s: start the lesson with rlab lesson start, which runs it", st)
	}
	if f.Data == nil && f.Files == nil {
		return fmt.Errorf("no script %s: the lesson was not loaded from its folder", f.Name)
	}
	before := map[string]int{}
	for _, r := range p.sb.Operators().ReplicaStatuses() {
		if r.Style == st {
			before[r.Name] = r.PID
		}
	}
	rec := check.NewRequestLog(p.sb.Bus(), st)
	defer rec.Close()
	run := func() error { return p.sb.Customs().RunCustomScript(st, f.Name, f.Data) }
	if f.IsProject() {
		run = func() error { return p.sb.Customs().RunCustomProject(st, path.Base(f.Name), f.Files) }
	}
	if err := run(); err != nil {
		return err
	}
	restarted := func() string {
		for _, r := range p.sb.Operators().ReplicaStatuses() {
			if r.Style == st && (!r.Running || r.PID == before[r.Name]) {
				return r.Name + " has not restarted"
			}
		}
		return ""
	}
	var began time.Time
	if err := p.poll(ctx, 30*time.Second, func() string {
		if why := restarted(); why != "" {
			return why
		}
		if began.IsZero() {
			began = time.Now()
		}
		return ""
	}); err != nil {
		return err
	}
	// An operator that makes no request, or never pauses, is checked as it
	// is once the bound has passed: the checks will say what it does.
	_ = p.poll(ctx, settleWithin, func() string {
		qs := rec.Requests(began)
		if len(qs) == 0 || time.Since(qs[len(qs)-1].Time) < settleQuiet {
			return "busy"
		}
		return ""
	})
	return ctx.Err()
}

// An operator swapped in has made its first pass when it has made
// requests and then none for settleQuiet; it is waited for settleWithin at
// most.
const (
	settleQuiet  = time.Second
	settleWithin = 15 * time.Second
)

// poll calls cond every p.Poll until it says nothing (""), within d; else
// the error says what cond said last.
func (p *Player) poll(ctx context.Context, d time.Duration, cond func() string) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		why := cond()
		if why == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", why, ctx.Err())
		case <-time.After(p.Poll):
		}
	}
}

// Annotation is what the lessons write to touch an Echo without changing
// its spec.
const Annotation = "lessons.rlab.kkloud.io/touch"

func (p *Player) annotate(ctx context.Context, name string) error {
	p.mu.Lock()
	p.seq++
	v := strconv.Itoa(p.seq)
	p.mu.Unlock()
	patch := []byte(`{"metadata":{"annotations":{"` + Annotation + `":"` + v + `"}}}`)
	var wg sync.WaitGroup
	errs := make([]error, len(p.sb.Styles()))
	for i, st := range p.sb.Styles() {
		wg.Go(func() {
			_, errs[i] = p.sb.Student().Echoes(st).
				Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-annotate"})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// staleUpdate is `kubectl get -o yaml > f; (someone edits); kubectl replace -f f`:
// an update carrying a resourceVersion that is no longer current must be
// refused with 409 Conflict.
func (p *Player) staleUpdate(ctx context.Context, st style.Style, name string) error {
	echoes := p.sb.Student().Echoes(st)
	old, err := echoes.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := p.annotate(ctx, name); err != nil {
		return err
	}
	_, err = echoes.Update(ctx, old, metav1.UpdateOptions{FieldManager: "kubectl-replace"})
	if err == nil {
		return errors.New("an update with a stale resourceVersion was accepted")
	}
	if !apierrors.IsConflict(err) {
		return fmt.Errorf("want 409 Conflict, got: %w", err)
	}
	return nil
}

// tuningOf is the Tuning a tune action's arguments say.
func tuningOf(a Args) sandbox.Tuning {
	workers, _ := a.Int("workers")
	burst, _ := a.Int("burst")
	return sandbox.Tuning{Workers: workers, QPS: a.QPS("qps"), Burst: burst}
}
