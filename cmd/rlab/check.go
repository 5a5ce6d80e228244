package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kkloud/rlab/cmd/rlab/internal/launch"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/fault"
	"github.com/kkloud/rlab/sim/feature/check"
	"github.com/kkloud/rlab/sim/rbac"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/ship"
)

type checkFlags struct {
	Name          string
	Replicas      int
	Output        string
	Role          string
	RBAC          string
	Within        time.Duration
	Settle, Rest  time.Duration
	ShellInterval time.Duration
	Only          []string
	Chaos         string // "": none; "all", or kinds
	Ship          string // a Go operator's folder to run in the cluster
	clusterFlags
}

func newCheckCmd() *cobra.Command {
	f := checkFlags{}
	cmd := &cobra.Command{
		Use:   "check COMMAND [ARG...]",
		Short: "Grade an Echo operator against a fresh sandbox: each check passes or fails with a reason",
		Long: `Start a fresh sandbox, run COMMAND as an Echo operator in it (as
rlab up --operator does: namespace echo-NAME, the course's least-privilege Role
or with --rbac the RBAC its project declares, KUBECONFIG, WATCH_NAMESPACE,
POD_NAMESPACE, POD_NAME and ECHO_IMAGE set, rlab's kubectl on PATH), create
Echo "hello", and check from outside what it does:
the Deployment and its ownerReference, replicas, message, status, scaling,
observedGeneration and the Ready condition (informative), drift
repair, garbage collection, an invalid spec, a restart, the API cost at rest,
writes that changed nothing (informative) and least privilege; with --replicas 2
also leader election and failover. With
--chaos, a workload (create an Echo, scale it, change its message) then runs
once clean and once under each fault at the operator's own proxies (a stale
cache, events never seen, conflicts, server errors, latency, a crash after a
write, a Lease held, a partition, watches cut), each judged against the clean
run: the same end state, no extra Deployments created or deleted, writes
within 4 × the clean run's plus 10, converged within --within of the fault's
end (at least 75s after conflict, error and partition: kopf retries after
60s). A refused write never tried again fails as dropped; a retry whose next
try was due after the window passes with a warning.

COMMAND is a shell command line (one argument, quoted, or several), or the name
of a built-in operator: shell, clientgo or runtime. The exit status is 1 when a
required check fails.`,
		Example: `  rlab check ./my-operator.sh
  rlab check 'python3 operator.py --verbose'
  rlab check --replicas 2 -- go run ./cmd --leader-elect --health-probe-bind-address=0
  rlab check runtime --replicas 2 --output json
  rlab check --chaos ./my-operator.sh
  rlab check --chaos=stale,crash runtime
  rlab check --backend kind --ship ./echo --rbac ./echo/config/rbac --replicas 2 -- --leader-elect`,
		Args: func(cmd *cobra.Command, args []string) error {
			if f.Ship != "" {
				return nil // the args are the manager's
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd.Context(), args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.Name, "name", "mine", "the operator's `NAME`: its namespace is echo-NAME")
	fs.IntVar(&f.Replicas, "replicas", 1, "replicas to run; 2 or more adds the leader election checks")
	fs.StringVar(&f.Output, "output", "text", "text, or json for course graders")
	fs.StringVar(&f.Role, "operator-role", sandbox.RoleLeast, "what the operator may do: "+sandbox.RoleLeast+" or "+sandbox.RoleNamespaceAdmin+
		" (the least privilege check still lists what the course's Role would deny)")
	fs.StringVar(&f.RBAC, "rbac", "", rbacUsage("the operator")+
		"; the least privilege check then lists what it declared and never used, and what it used across all namespaces")
	fs.DurationVar(&f.Within, "within", 30*time.Second, "how long the operator has to act on each change")
	fs.DurationVar(&f.Settle, "settle", check.DefaultSettle, "how long a restarted operator is watched for writes")
	fs.DurationVar(&f.Rest, "rest", check.DefaultRest, "how long the API cost at rest is counted")
	fs.DurationVar(&f.ShellInterval, "shell-interval", 5*time.Second, "poll interval of the built-in shell loop")
	fs.StringSliceVar(&f.Only, "only", nil, "run only these checks (`IDS`, comma-separated): "+strings.Join(checkIDs(), ", "))
	fs.StringVar(&f.Chaos, "chaos", "", "after the checks, run a small workload clean and under each fault at the operator's proxies, and judge each run against the clean one; "+
		"--chaos=`KINDS` runs only those (comma-separated, KIND:DURATION for another duration): "+strings.Join(check.ChaosKinds(), ", "))
	fs.Lookup("chaos").NoOptDefVal = "all"
	fs.StringVar(&f.Ship, "ship", "", "run the Go operator in `DIR` in the cluster instead (--backend kind): build its ./cmd into an image, load it into the node, "+
		"deploy it with its ServiceAccount and RBAC, and grade it there; ARGs are then the manager's flags. Not with --chaos (no proxy in its path)")
	f.clusterFlags.register(fs)
	return cmd
}

// checkReport is what --output json prints.
type checkReport struct {
	Operator string         `json:"operator"`
	Command  string         `json:"command"`
	Replicas int            `json:"replicas"`
	Backend  string         `json:"backend"`
	Passed   bool           `json:"passed"`
	Seconds  float64        `json:"seconds"`
	Checks   []check.Result `json:"checks"`
	// Error is why the run ended before its checks did (the sandbox did
	// not start; interrupted); the checks listed are those that ran.
	Error string `json:"error,omitempty"`
}

// operator is what to check: a built-in style, or a custom one running
// the command line.
func (f checkFlags) operator(args []string, o *launch.Options) (style.Style, string, error) {
	if len(args) == 1 && f.Ship == "" {
		if st, err := style.Parse(args[0]); err == nil {
			if f.RBAC != "" {
				return "", "", fmt.Errorf("--rbac grades your own operator: the built-in %s runs with its own Role", st)
			}
			o.Styles = []style.Style{st}
			o.Replicas = map[style.Style]int{st: f.Replicas}
			return st, "built-in " + st.Traits().Title, nil
		}
	}
	st, err := style.Custom(f.Name)
	if err != nil {
		return "", "", fmt.Errorf("--name: %w", err)
	}
	role, err := sandbox.ParseRole(f.Role)
	if err != nil {
		return "", "", fmt.Errorf("--operator-role: %w", err)
	}
	g, err := ownRBAC(f.RBAC, role)
	if err != nil {
		return "", "", err
	}
	if f.Ship != "" {
		o.Custom = []sandbox.Custom{{Name: st, Shipped: true, Replicas: f.Replicas, Role: role, RBAC: g}}
		return st, "shipped from " + f.Ship + " " + shellJoin(args), nil
	}
	command := args[0]
	if len(args) > 1 {
		command = shellJoin(args)
	}
	o.Custom = []sandbox.Custom{{Name: st, Command: command, Replicas: f.Replicas, Role: role, RBAC: g}}
	return st, command, nil
}

// shellJoin quotes each argument for /bin/sh, so that several arguments
// run as given.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

func (f checkFlags) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if err := f.validate(args); err != nil {
		return err
	}
	began := time.Now()
	opts := launch.Options{Options: sandbox.Options{ShellInterval: f.ShellInterval, Sample: true}, NoWait: true, Report: launch.Print(stderr)}
	if err := f.clusterFlags.apply(&opts); err != nil {
		return err
	}
	st, command, err := f.operator(args, &opts)
	if err != nil {
		return err
	}
	var chaos []fault.Fault
	if f.Chaos != "" {
		if chaos, err = check.ParseChaos(f.Chaos); err != nil {
			return err
		}
	}
	ctx, stop := interruptible(ctx)
	defer stop()
	text := f.Output == "text"
	rep := checkReport{Operator: st.String(), Command: command, Replicas: f.Replicas, Backend: opts.Backend.Name}
	// The report is written whatever happens below: a grader reads the
	// JSON even when the sandbox did not start.
	finish := func(err error) error {
		rep.Passed = err == nil && check.Passed(rep.Checks)
		rep.Seconds = time.Since(began).Seconds()
		if err != nil {
			rep.Error = err.Error()
		}
		if text {
			if err == nil || len(rep.Checks) > 0 {
				printSummary(stdout, rep)
			}
		} else if werr := writeJSON(stdout, rep); werr != nil {
			return errors.Join(err, werr)
		}
		if err != nil {
			return err
		}
		if !rep.Passed {
			return exitCode(1)
		}
		return nil
	}
	l, err := launch.New()
	if err != nil {
		return finish(err)
	}
	defer l.Close()
	rec := check.NewRequestLog(l.Bus, st)
	if f.Ship != "" {
		rec = check.NewRequestLogOf(l.Bus, st, ship.SourcePrefix)
	}
	defer rec.Close()
	var img *ship.Image
	if f.Ship != "" {
		// Before the sandbox: a project that does not build is reported
		// before a cluster is made for it.
		if img, err = buildShipImage(ctx, f.Ship, st); err != nil {
			return finish(err)
		}
		defer os.RemoveAll(filepath.Dir(img.Archive))
		if text {
			fmt.Fprintf(stdout, "image %s: go build %.1fs, image %.2fs, %.1f MB\n", img.Ref, img.Build.Seconds(), img.Pack.Seconds(), float64(img.Size)/1e6)
		}
	}
	sb, err := l.Start(ctx, opts)
	if err != nil {
		return finish(startErr(ctx, err))
	}
	rep.Backend = launch.Info(sb.Cluster()).Backend
	if text {
		fmt.Fprintf(stdout, "rlab check %s: %s, %d replica(s), %s\n", st, command, f.Replicas, rep.Backend)
	}
	target := check.Sandbox(sb)
	var granted *rbac.Grant
	if c, ok := sb.Customs().Custom(st); ok {
		granted = c.RBAC
	}
	if f.Ship != "" {
		pods, err := shipInto(ctx, sb, st, img, granted, int32(f.Replicas), args, stdout, text)
		if err != nil {
			return finish(err)
		}
		target = check.InCluster(sb, pods)
	}
	results, err := check.Run(ctx, target, rec, check.Options{
		Operator: st, Within: f.Within, Settle: f.Settle, Rest: f.Rest, Only: f.Only, RBAC: granted, Chaos: chaos,
		InCluster: f.Ship != "",
		Progress: func(r check.Result) {
			if text {
				printResult(stdout, r)
			}
		},
		Waiting: func(id string, waited time.Duration, why string) {
			if text {
				printWaiting(stdout, id, waited, why)
			}
		},
	})
	rep.Checks = results
	if ctx.Err() != nil {
		return finish(errChecksInterrupted)
	}
	if err != nil {
		return finish(err)
	}
	if err := l.Close(); err != nil {
		return finish(err)
	}
	return finish(nil)
}

// errChecksInterrupted is Ctrl-C while the checks run: the report holds
// those that finished, and rlab exits 130 as for errInterrupted.
var errChecksInterrupted error = interruption("interrupted during the checks; everything started was stopped, and the report has the checks that finished")

// interruption is an interruption said its own way: errors.Is(err,
// errInterrupted) holds, for the exit status.
type interruption string

func (i interruption) Error() string        { return string(i) }
func (i interruption) Is(target error) bool { return target == errInterrupted }

// writeJSON prints the report as --output json does.
func writeJSON(w io.Writer, rep checkReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func checkIDs() []string {
	var ids []string
	for _, c := range check.All() {
		ids = append(ids, c.ID)
	}
	return ids
}

// printResult is one check's line: PASS or FAIL (or INFO for a failing
// check that does not count, WARN for a pass with a warning), the time, the
// title and the reason.
func printResult(w io.Writer, r check.Result) {
	mark := "PASS"
	switch {
	case !r.Pass && r.Required:
		mark = "FAIL"
	case !r.Pass:
		mark = "INFO"
	case r.Warning != "":
		mark = "WARN"
	}
	fmt.Fprintf(w, "%s %6.1fs  %s\n               %s\n", mark, r.Seconds, r.Title, r.Reason)
	if r.Warning != "" && !strings.Contains(r.Reason, r.Warning) {
		fmt.Fprintf(w, "               warning: %s\n", r.Warning)
	}
}

// printWaiting is a line of progress while check id waits for the operator.
func printWaiting(w io.Writer, id string, waited time.Duration, why string) {
	line := fmt.Sprintf("     … %3.0fs  %s: waiting", waited.Seconds(), id)
	if why != "" {
		line += " (" + why + ")"
	}
	fmt.Fprintln(w, line)
}

func printSummary(w io.Writer, r checkReport) {
	var req, ok int
	for _, c := range r.Checks {
		if c.Required {
			req++
			if c.Pass {
				ok++
			}
		}
	}
	verdict := "PASSED"
	if !r.Passed {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "%s: %d of %d required checks passed in %.0fs\n", verdict, ok, req, r.Seconds)
}
