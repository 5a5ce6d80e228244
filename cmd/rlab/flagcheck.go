package main

// Every duration, count and name flag is checked here, before a command
// claims the state dir, builds or starts anything: a bad one gets one error
// that names the flag, the value as given and what would work, in the
// form "--within -5s: want a positive duration, e.g. 30s". Each command
// calls its check first, in one line.

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/kkloud/rlab/cmd/rlab/internal/launch"
	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/feature/check"
	"github.com/kkloud/rlab/sim/sandbox"
)

// firstErr is the first of errs that is not nil: a command says one thing
// wrong at a time, in the order of its flags.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// positive is a duration that must be more than 0.
func positive(flag string, d time.Duration, eg string) error {
	if d > 0 {
		return nil
	}
	return fmt.Errorf("%s %s: want a positive duration, e.g. %s", flag, d, eg)
}

// atLeast is a duration that cannot work below floor.
func atLeast(flag string, d, floor time.Duration, eg string) error {
	if d <= 0 {
		return positive(flag, d, eg)
	}
	if d < floor {
		return fmt.Errorf("%s %s: want at least %s, e.g. %s", flag, d, floor, eg)
	}
	return nil
}

// zeroOr is a duration that may be 0, which means zero.
func zeroOr(flag string, d time.Duration, zero, eg string) error {
	if d >= 0 {
		return nil
	}
	return fmt.Errorf("%s %s: want 0 (%s) or a positive duration, e.g. %s", flag, d, zero, eg)
}

// between is a count from lo to hi.
func between(flag string, n, lo, hi int) error {
	if n >= lo && n <= hi {
		return nil
	}
	return fmt.Errorf("%s %d: want %d to %d", flag, n, lo, hi)
}

// atLeastN is a count of at least lo; zero, if set, is what 0 means when
// lo is 0.
func atLeastN(flag string, n, lo int, zero string) error {
	switch {
	case n >= lo:
		return nil
	case lo == 0 && zero != "":
		return fmt.Errorf("%s %d: want 0 (%s) or more", flag, n, zero)
	}
	return fmt.Errorf("%s %d: want at least %d", flag, n, lo)
}

// oneOf is a word from a fixed list.
func oneOf(flag, v string, words ...string) error {
	if slices.Contains(words, v) {
		return nil
	}
	return fmt.Errorf("%s %q: want %s or %s", flag, v, strings.Join(words[:len(words)-1], ", "), words[len(words)-1])
}

// sandboxOption is what sandbox.Options.Validate says of the one option o
// sets, said of the flag that set it: the sandbox holds the rule, so that
// lessons and tests that build Options get it too.
func sandboxOption(flag string, o sandbox.Options) error {
	err := o.Validate()
	if oe := (*sandbox.OptionError)(nil); errors.As(err, &oe) {
		return fmt.Errorf("%s %s: %s", flag, oe.Value, oe.Want)
	}
	return err
}

// shellInterval is the shell loop's --shell-interval: 0 would be the
// sandbox's default (5s), not what the flag says, so it is refused here.
func shellInterval(d time.Duration) error {
	return firstErr(positive("--shell-interval", d, "5s"), sandboxOption("--shell-interval", sandbox.Options{ShellInterval: d}))
}

// source names where a cluster flag's value came from: the flag, or the
// environment variable its default is read from.
func (f clusterFlags) source(name, env string) string {
	if f.fs != nil {
		if fl := f.fs.Lookup(name); fl != nil && !fl.Changed && fl.Value.String() != "" {
			return "$" + env
		}
	}
	return "--" + name
}

// givenEmpty says a name flag was given as "" on the command line, where
// leaving it out means the default.
func (f clusterFlags) givenEmpty(name, v string) bool {
	if f.fs == nil || v != "" {
		return false
	}
	fl := f.fs.Lookup(name)
	return fl != nil && fl.Changed
}

// validate checks the cluster flags as a start would, and the images
// (an empty --image or --kind-image given on the command line, where
// leaving it out was meant, too).
func (f clusterFlags) validate() error {
	b, err := backend.Parse(f.Backend)
	if err != nil {
		return fmt.Errorf("%s: %w", f.source("backend", "RLAB_BACKEND"), err)
	}
	if err := f.apply(&launch.Options{}); err != nil { // the flags' combinations, as a start would judge them
		return err
	}
	if f.givenEmpty("image", f.Image) {
		return fmt.Errorf(`--image "": want an image, e.g. %s, or leave --image out for the backend's default`, echo.DefaultImage)
	}
	if f.Image != "" {
		if err := sandboxOption(f.source("image", "RLAB_IMAGE"), sandbox.Options{Image: f.Image}); err != nil {
			return err
		}
	}
	if !b.NodeImage { // the node image is kind's alone, and apply refused the flag elsewhere
		return nil
	}
	if f.givenEmpty("kind-image", f.KindImage) {
		return fmt.Errorf(`--kind-image "": want a node image, e.g. %s, or leave --kind-image out for rlab's choice`, cluster.OfflineNodeImage)
	}
	if f.KindImage != "" {
		return sandboxOption(f.source("kind-image", "RLAB_KIND_IMAGE"), sandbox.Options{KindImage: f.KindImage})
	}
	return nil
}

// validate checks --operator and --operator-role as adding the operators
// would.
func (f operatorFlags) validate() error { return f.apply(&launch.Options{}) }

func (f sandboxFlags) validate() error {
	return firstErr(shellInterval(f.ShellInterval), f.clusterFlags.validate(), f.operatorFlags.validate())
}

func (f runFlags) validate() error {
	_, ops := parseStyles(f.Operators)
	return firstErr(zeroOr("--for", f.For, "until Ctrl-C", "10m"), oneOf("--output", f.Output, "text", "json"), ops, f.sandboxFlags.validate())
}

// validate checks check's flags; args say whether the operator is the
// built-in shell loop, which acts only at its polls.
func (f checkFlags) validate(args []string) error {
	var only error
	for _, id := range f.Only {
		if !slices.Contains(checkIDs(), id) {
			only = fmt.Errorf("--only %s: no such check; the checks are %s", id, strings.Join(checkIDs(), ", "))
			break
		}
	}
	var name, role, slow, chaos error
	if f.Chaos != "" {
		_, chaos = check.ParseChaos(f.Chaos)
	}
	if _, err := style.Custom(f.Name); err != nil {
		name = fmt.Errorf("--name: %w", err)
	}
	if _, err := sandbox.ParseRole(f.Role); err != nil {
		role = fmt.Errorf("--operator-role: %w", err)
	}
	if len(args) == 1 && args[0] == style.Shell.String() && f.Within > 0 && f.Within <= f.ShellInterval {
		slow = fmt.Errorf("--within %s: want more than --shell-interval (%s): the shell loop sees a change only at its next poll", f.Within, f.ShellInterval)
	}
	return firstErr(
		oneOf("--output", f.Output, "text", "json"), only, chaos, name, role, f.shipErr(),
		between("--replicas", f.Replicas, 1, sandbox.MaxReplicas),
		atLeast("--within", f.Within, time.Second, "30s"),
		atLeast("--settle", f.Settle, time.Second, "5s"),
		atLeast("--rest", f.Rest, time.Second, "15s"),
		shellInterval(f.ShellInterval), slow,
		f.clusterFlags.validate(),
	)
}

func (f benchFlags) validate() error {
	var compare error
	switch {
	case f.Echoes == 0 && (f.TuneCompare || f.tuning() != (sandbox.Tuning{})):
		compare = errors.New("--echoes 0: want more with --workers, --qps, --burst or --tune-compare, which are the scale run's, e.g. 500")
	case f.TuneCompare && f.tuning() == (sandbox.Tuning{}):
		compare = errors.New("--tune-compare: want --workers, --qps or --burst to compare with the defaults, e.g. --workers 10 --qps 100 --burst 200")
	}
	styles, ops := parseStyles(f.Operators)
	if ops == nil && len(styles) == 0 {
		ops = fmt.Errorf("--operators %s: want at least one style to measure, e.g. clientgo,runtime", f.Operators)
	}
	return firstErr(
		ops,
		atLeastN("--rounds", f.Rounds, 1, ""),
		atLeastN("--reps", f.Reps, 1, ""),
		atLeastN("--echoes", f.Echoes, 0, "skip the scale run"),
		atLeastN("--workers", f.Workers, 0, "the libraries' default, 1"),
		echo.CheckClientLimit(f.QPS, f.Burst),
		compare,
		between("--replicas", f.Replicas, echov1.MinReplicas, echov1.MaxReplicas),
		positive("--scale-timeout", f.ScaleTimeout, "3m"),
		atLeast("--idle", f.Idle, time.Second, "30s"),
		oneOf("--output", f.Output, "text", "json"),
		f.clusterFlags.validate(),
	)
}

// validate checks lesson verify's and lesson start's flags (start has no
// --read, and leaves it 0).
func (f lessonFlags) validate() error {
	return firstErr(zeroOr("--read", f.Read, "act at once", "10s"), shellInterval(f.ShellInterval), f.clusterFlags.validate())
}

// checkStarterStep is lesson starter's --step: 0 (the default) is the
// starter; a step past the lesson's last is the lesson's to say.
func checkStarterStep(step int) error {
	if step < 0 {
		return fmt.Errorf("--step %d: want 0 (the starter) or a step number, e.g. 3", step)
	}
	return nil
}

// checkPrepare is classroom prepare's flags, checked before the
// kubeconfig is read or the cluster is asked anything.
func checkPrepare(students int, dir string, ttl time.Duration, server string) error {
	var out, srv error
	if dir == "" {
		out = errors.New(`--out "": want a directory for the kubeconfigs, e.g. classroom`)
	}
	if server != "" {
		if u, err := url.Parse(server); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			srv = fmt.Errorf("--server %q: want the apiserver's URL, e.g. https://203.0.113.10:6443", server)
		}
	}
	// The apiserver refuses a TokenRequest shorter than 10 minutes.
	return firstErr(atLeastN("--students", students, 1, ""), out, atLeast("--ttl", ttl, 10*time.Minute, "8h"), srv)
}

// checkSpeed is replay's --speed, which the player would otherwise clamp
// without a word.
func checkSpeed(speed float64) error {
	if speed >= 1.0/16 && speed <= 64 {
		return nil
	}
	return fmt.Errorf("--speed %g: want 1/16 (0.0625) to 64, e.g. 2", speed)
}

// checkOperatorFlags is rlab operator's flags. The lease timings are
// client-go's rules (leaderelection.NewLeaderElector), said as flags; a
// Lease records whole seconds, so its duration is at least 1s.
func checkOperatorFlags(o echo.Options) error {
	var ns, img, order error
	switch errs := validation.IsDNS1123Label(o.Namespace); {
	case o.Namespace == "":
		ns = errors.New(`--namespace "": want the namespace to watch and write, e.g. echo-clientgo`)
	case len(errs) > 0:
		ns = fmt.Errorf("--namespace %q: want a namespace name: %s", o.Namespace, errs[0])
	}
	if err := echo.CheckImage(o.Image, echo.DefaultImage); err != nil {
		img = fmt.Errorf("--image %q: %w", o.Image, err)
	}
	switch jitter := time.Duration(leaderelection.JitterFactor * float64(o.RetryPeriod)); {
	case !o.LeaderElect || o.LeaseDuration <= 0 || o.RenewDeadline <= 0 || o.RetryPeriod <= 0:
	case o.RenewDeadline >= o.LeaseDuration:
		order = fmt.Errorf("--renew-deadline %s: want less than --lease-duration (%s)", o.RenewDeadline, o.LeaseDuration)
	case o.RenewDeadline <= jitter:
		order = fmt.Errorf("--retry-period %s: want less than --renew-deadline (%s) / %g, e.g. 1s", o.RetryPeriod, o.RenewDeadline, leaderelection.JitterFactor)
	}
	return firstErr(
		ns,
		nonEmpty("--replica", o.Replica, "a"),
		atLeastN("--workers", o.Workers, 1, ""),
		echo.CheckClientLimit(o.QPS, o.Burst),
		oneOf("--generation-predicate", o.GenerationPredicate, echo.GenerationPredicates...),
		oneOf("--defaults-cache", o.DefaultsCache, echo.DefaultsCaches...),
		img,
		atLeast("--lease-duration", o.LeaseDuration, time.Second, "4s"),
		positive("--renew-deadline", o.RenewDeadline, "3s"),
		positive("--retry-period", o.RetryPeriod, "1s"),
		order,
	)
}

// nonEmpty is a name that must be given.
func nonEmpty(flag, v, eg string) error {
	if strings.TrimSpace(v) != "" {
		return nil
	}
	return fmt.Errorf("%s %q: want a name, e.g. %s", flag, v, eg)
}

// shipErr says why --ship cannot be, before anything is built or started.
func (f checkFlags) shipErr() error {
	if f.Ship == "" {
		return nil
	}
	if b, err := backend.Parse(f.Backend); err == nil && b != backend.Kind {
		return fmt.Errorf("--ship needs --backend kind (not %s): rlab loads the image into the node of the kind cluster it makes (there is no registry) and reads that apiserver's audit log", b.Name)
	}
	if f.Chaos != "" {
		return errors.New("--ship and --chaos exclude each other: the faults are put in rlab's proxy between each replica and the apiserver, and an operator in the cluster has none; run it on this machine for --chaos")
	}
	return nil
}
