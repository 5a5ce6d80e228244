package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/fault"
	"github.com/kkloud/rlab/sim/proxy"
	"github.com/kkloud/rlab/sim/supervisor"
)

// Operators is the part of the engine that owns the operator replicas'
// processes: the supervisor (start, stop, kill, pause, restart) and what
// says which replicas each style runs; the Lease names the leader, the log
// file what a replica said. Their proxies are Faults', the flags they run
// with Flags', the student's own operators Customs'.
type Operators struct {
	super *supervisor.Supervisor // nil with no operators
	plan  replicaPlan
	sc    scope
	admin *clients // reads the Lease
	logs  string   // the state dir's logs
}

// close stops every replica; safe to call more than once.
func (o *Operators) close() error {
	if o.super == nil {
		return nil
	}
	err := o.super.Close(5 * time.Second)
	o.super = nil
	return err
}

// Faults is the part of the engine that owns the replicas' counting
// proxies, one per replica: the faults they inject and the partitions
// that cut a replica off.
type Faults struct {
	proxies map[string]*proxy.Proxy
	plan    replicaPlan
}

// close stops every proxy; safe to call more than once.
func (f *Faults) close() error {
	var errs []error
	for name, p := range f.proxies {
		errs = append(errs, p.Close())
		delete(f.proxies, name)
	}
	return errors.Join(errs...)
}

// restarter is what Flags and Customs use of the supervisor that
// Operators owns: a replica's arguments, and a restart with others; and,
// for Customs.SetReplicas, a replica started or stopped for good.
type restarter interface {
	Spec(name string) (supervisor.Spec, error)
	SetArgs(name string, args []string) error
	Add(spec supervisor.Spec) error
	Remove(name string, grace time.Duration) error
}

// Flags is the part of the engine that sets the options the replicas run
// with, each a restart with other arguments through the supervisor.
type Flags struct {
	super restarter
	plan  replicaPlan
}

// ErrNoLeader is why Leader found no replica to name: nobody holds the
// Lease, or its holder is not running (it has just lost the Lease and
// exited). Both pass: the next leader is usually moments away.
var ErrNoLeader = errors.New("no running leader")

// Leader returns the replica ("clientgo/a") holding a style's Lease.
func (o *Operators) Leader(ctx context.Context, st style.Style) (string, *coordinationv1.Lease, error) {
	l, err := o.admin.kube.CoordinationV1().Leases(o.sc.namespace(st)).Get(ctx, echo.LeaseName, metav1.GetOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("lease of %s: %w", st, err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return "", l, fmt.Errorf("nobody holds the lease of %s: %w", st, ErrNoLeader)
	}
	id := *l.Spec.HolderIdentity
	_, _, pid, ok := style.ParseIdentity(id)
	if !ok {
		return "", l, fmt.Errorf("lease holder %q is not <style>-<replica>-<pid>", id)
	}
	name, ok := o.super.ByPID(pid)
	if !ok {
		return "", l, fmt.Errorf("lease holder %s is not a running replica: %w", id, ErrNoLeader)
	}
	return name, l, nil
}

// KillLeader crashes the replica holding a style's Lease (SIGKILL): the
// standby takes over once the Lease expires.
func (o *Operators) KillLeader(ctx context.Context, st style.Style) (string, error) {
	name, _, err := o.Leader(ctx, st)
	if err != nil {
		return "", err
	}
	return name, o.super.Kill(name)
}

// StopLeader stops the leader gracefully (SIGTERM): it releases the Lease
// and the standby takes over at once.
func (o *Operators) StopLeader(ctx context.Context, st style.Style) (string, error) {
	name, _, err := o.Leader(ctx, st)
	if err != nil {
		return "", err
	}
	return name, o.super.Stop(name)
}

// Partition cuts a replica off the apiserver (proxy.Refuse or proxy.Hang),
// or heals it (proxy.Normal).
func (f *Faults) Partition(replica string, mode proxy.Mode) error {
	p, ok := f.proxies[replica]
	if !ok {
		return fmt.Errorf("no replica %q", replica)
	}
	p.SetMode(mode)
	return nil
}

// SetFault turns f on at the proxy of every replica of st, in place of a
// fault of its kind (fault.Fault says what each does). The crash fault
// kills the first replica to reach its Nth write, through the supervisor,
// which restarts it; it is then off at every replica of st.
func (fs *Faults) SetFault(st style.Style, f fault.Fault) error {
	for _, r := range fs.plan.of(st) {
		p, ok := fs.proxies[st.Source(r)]
		if !ok {
			return fmt.Errorf("no proxy for %s", st.Source(r))
		}
		if err := p.SetFault(f); err != nil {
			return fmt.Errorf("%s: %w", st.Source(r), err)
		}
	}
	return nil
}

// ClearFault turns off the fault of kind at every replica of st; kind ""
// turns every fault off.
func (f *Faults) ClearFault(st style.Style, kind fault.Kind) {
	for _, r := range f.plan.of(st) {
		if p, ok := f.proxies[st.Source(r)]; ok {
			if kind == "" {
				p.ClearFaults()
			} else {
				p.ClearFault(kind)
			}
		}
	}
}

// Faults are the faults on at replica a of st (SetFault gives every
// replica the same; crash, once fired, is off at the replica it killed).
func (f *Faults) Faults(st style.Style) []fault.Fault {
	if p, ok := f.proxies[st.Source("a")]; ok {
		return p.Faults()
	}
	return nil
}

// SetWatchOwned restarts a Go style's replicas with or without
// --watch-owned=false.
func (f *Flags) SetWatchOwned(st style.Style, watch bool) error {
	if st.Traits().Polls {
		return errors.New("the shell loop polls everything; it has no watches to turn off")
	}
	return f.setFlag(st, "--watch-owned", "--watch-owned=false", !watch)
}

// SetFinalizer restarts a style's replicas with or without --finalizer.
func (f *Flags) SetFinalizer(st style.Style, on bool) error {
	return f.setFlag(st, "--finalizer", "--finalizer", on)
}

// SetWarmup restarts the controller-runtime operator's replicas with or
// without --warmup (EnableWarmup), the only style that has the option.
func (f *Flags) SetWarmup(st style.Style, on bool) error {
	if !st.Traits().Takes(style.Warmup) {
		return fmt.Errorf("%s has no warm-up option: only controller-runtime's EnableWarmup starts a controller's watches before it leads", st)
	}
	return f.setFlag(st, "--warmup", "--warmup", on)
}

// SetGenerationPredicate restarts the controller-runtime operator's replicas
// with GenerationChangedPredicate where says (echo.GenerationOff,
// GenerationOnEcho, GenerationEverywhere), the only style that has it.
func (f *Flags) SetGenerationPredicate(st style.Style, where string) error {
	if !st.Traits().Takes(style.GenerationPredicate) {
		return fmt.Errorf("%s has no predicates: GenerationChangedPredicate is controller-runtime's, and the other styles queue every event they get", st)
	}
	if !slices.Contains(echo.GenerationPredicates, where) {
		return fmt.Errorf("GenerationChangedPredicate %q: want one of %s", where, strings.Join(echo.GenerationPredicates, ", "))
	}
	return f.setFlag(st, "--generation-predicate", "--generation-predicate="+where, where != echo.GenerationOff)
}

// SetDefaultsCache restarts the controller-runtime operator's replicas with
// --defaults-cache=cache (echo.DefaultsCacheAll, the default, or
// DefaultsCacheNamed: its cache lists and watches the ConfigMap
// echo-defaults alone), the only style whose cache is not narrowed already.
func (f *Flags) SetDefaultsCache(st style.Style, cache string) error {
	if !st.Traits().Takes(style.DefaultsCache) {
		return fmt.Errorf("%s has no such option: only controller-runtime's cache holds every ConfigMap of the namespace for the watch of %s", st, echo.DefaultsName)
	}
	if !slices.Contains(echo.DefaultsCaches, cache) {
		return fmt.Errorf("defaults cache %q: want one of %s", cache, strings.Join(echo.DefaultsCaches, ", "))
	}
	return f.setFlag(st, "--defaults-cache", "--defaults-cache="+cache, cache != echo.DefaultsCacheAll)
}

// Tuning is how a Go operator's replicas are sized for load: concurrent
// reconciles and their API clients' rate limit. A zero field leaves the
// library's default (one worker; client-go 5 req/s, burst 10;
// controller-runtime no limit); QPS echo.NoClientLimit is no limit.
type Tuning struct {
	Workers int
	QPS     float32
	Burst   int
}

// The operator flags of a Tuning, each given as one argument --flag=value.
const (
	flagWorkers = "--workers="
	flagQPS     = "--qps="
	flagBurst   = "--burst="
)

// Validate says what is wrong with t, in the words of the operator's flags.
func (t Tuning) Validate() error {
	if t.Workers < 0 {
		return fmt.Errorf("--workers %d: want 0 (the library's default, 1) or more", t.Workers)
	}
	return echo.CheckClientLimit(t.QPS, t.Burst)
}

// Args are the operator's flags for t: none for a zero field.
func (t Tuning) Args() []string {
	var out []string
	if t.Workers != 0 {
		out = append(out, flagWorkers+strconv.Itoa(t.Workers))
	}
	if t.QPS != 0 {
		out = append(out, flagQPS+strconv.FormatFloat(float64(t.QPS), 'g', -1, 32))
	}
	if t.Burst != 0 {
		out = append(out, flagBurst+strconv.Itoa(t.Burst))
	}
	return out
}

// String is t as the operator's flags, or "the library's defaults".
func (t Tuning) String() string {
	if t == (Tuning{}) {
		return "the library's defaults"
	}
	return strings.Join(t.Args(), " ")
}

// isTuningArg says whether an operator argument is one of a Tuning's.
func isTuningArg(a string) bool {
	return strings.HasPrefix(a, flagWorkers) || strings.HasPrefix(a, flagQPS) || strings.HasPrefix(a, flagBurst)
}

// SetTuning restarts a Go style's replicas, once each, with t's flags in
// place of those they had: the zero Tuning is the libraries' defaults.
func (f *Flags) SetTuning(st style.Style, t Tuning) error {
	if !st.Traits().Takes(style.Tuning) {
		return fmt.Errorf("%s has no workers or client-side limit to tune: only the Go operators take --workers, --qps and --burst", st)
	}
	if err := t.Validate(); err != nil {
		return err
	}
	return f.setArgs(st, isTuningArg, t.Args())
}

// Tuning is what a Go style's replicas run with now, read from replica a's
// arguments (SetTuning gives every replica the same).
func (f *Flags) Tuning(st style.Style) (Tuning, error) {
	sp, err := f.super.Spec(st.Source("a"))
	if err != nil {
		return Tuning{}, err
	}
	args := slices.Clone(sp.Args)
	var t Tuning
	for _, a := range args {
		var err error
		switch {
		case strings.HasPrefix(a, flagWorkers):
			t.Workers, err = strconv.Atoi(strings.TrimPrefix(a, flagWorkers))
		case strings.HasPrefix(a, flagQPS):
			var q float64
			q, err = strconv.ParseFloat(strings.TrimPrefix(a, flagQPS), 32)
			t.QPS = float32(q)
		case strings.HasPrefix(a, flagBurst):
			t.Burst, err = strconv.Atoi(strings.TrimPrefix(a, flagBurst))
		}
		if err != nil {
			return Tuning{}, fmt.Errorf("%s argument %q: %w", st.Source("a"), a, err)
		}
	}
	return t, nil
}

// setFlag restarts every replica of st with arg if on, and without any
// argument starting with prefix.
func (f *Flags) setFlag(st style.Style, prefix, arg string, on bool) error {
	var add []string
	if on {
		add = []string{arg}
	}
	return f.setArgs(st, func(a string) bool { return strings.HasPrefix(a, prefix) }, add)
}

// setArgs restarts every replica of st without the arguments drop says,
// and with add after the others.
func (f *Flags) setArgs(st style.Style, drop func(string) bool, add []string) error {
	for _, r := range f.plan.of(st) {
		name := st.Source(r)
		sp, err := f.super.Spec(name)
		if err != nil {
			return err
		}
		args := slices.DeleteFunc(slices.Clone(sp.Args), drop)
		if err := f.super.SetArgs(name, append(args, add...)); err != nil {
			return err
		}
	}
	return nil
}

// secondShell is the replica of the extra shell loop of AddShellReplica.
const secondShell = "b"

// AddShellReplica starts a second shell loop next to shell/a, as the same
// user through the same proxy (two copies of one Deployment share their
// ServiceAccount). It has no leader election: both act on everything. With
// a suffix it is a newer build that writes the message with suffix
// appended, and the two undo each other's work at every poll.
func (o *Operators) AddShellReplica(suffix string) error {
	a, err := o.super.Spec(style.Shell.Source("a"))
	if err != nil {
		return fmt.Errorf("no shell loop to copy: %w", err)
	}
	b := a
	b.Replica = secondShell
	b.Args = nil
	for i := 0; i < len(a.Args); i++ {
		if a.Args[i] == "--replica" && i+1 < len(a.Args) {
			b.Args = append(b.Args, "--replica", secondShell)
			i++
			continue
		}
		b.Args = append(b.Args, a.Args[i])
	}
	if suffix != "" {
		b.Args = append(b.Args, "--message-suffix", suffix)
	}
	b.LogFile = replicaFile(o.logs, style.Shell, secondShell, ".log")
	return o.super.Add(b)
}

// RemoveShellReplica stops the second shell loop for good, if it runs.
func (o *Operators) RemoveShellReplica() error {
	name := style.Shell.Source(secondShell)
	if _, err := o.super.Spec(name); err != nil {
		return nil // not running
	}
	return o.super.Remove(name, 5*time.Second)
}

// Pause freezes every replica of a style (SIGSTOP), as if the
// operator were uninstalled or hung; Resume lets them go on.
func (o *Operators) Pause(st style.Style) error {
	for _, r := range o.plan.of(st) {
		if err := o.super.Pause(st.Source(r)); err != nil {
			return err
		}
	}
	return nil
}

// Resume continues every paused replica of a style (SIGCONT).
func (o *Operators) Resume(only style.Style) error {
	var errs []error
	for _, st := range o.super.Statuses() {
		if st.Style == only && st.Paused {
			errs = append(errs, o.super.Resume(st.Name))
		}
	}
	return errors.Join(errs...)
}

// ReplicaStatuses are every operator replica's, sorted by name (none with
// no operators).
func (o *Operators) ReplicaStatuses() []supervisor.Status {
	if o.super == nil {
		return nil
	}
	return o.super.Statuses()
}

// KillReplica crashes a replica ("<style>/<replica>", SIGKILL); its
// supervisor restarts it after its backoff.
func (o *Operators) KillReplica(name string) error { return o.super.Kill(name) }

// ReplicaArgs are the arguments a replica ("<style>/<replica>") runs with.
func (o *Operators) ReplicaArgs(name string) ([]string, error) {
	sp, err := o.super.Spec(name)
	if err != nil {
		return nil, err
	}
	return slices.Clone(sp.Args), nil
}

// Proxy is a replica's counting proxy, by "<style>/<replica>".
func (f *Faults) Proxy(name string) *proxy.Proxy { return f.proxies[name] }

// LogFile is the log file of a replica ("<style>/<replica>").
func (o *Operators) LogFile(st style.Style, replica string) string {
	return replicaFile(o.logs, st, replica, ".log")
}
