package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/kkloud/rlab/operators/clientgo"
	"github.com/kkloud/rlab/operators/echo"
	crstyle "github.com/kkloud/rlab/operators/runtime"
	"github.com/kkloud/rlab/operators/style"
)

// newOperatorCmd is `rlab operator <style>`: one replica of a Go operator, as
// the sandbox starts it (hidden; also runnable by hand against any cluster).
func newOperatorCmd() *cobra.Command {
	o := echo.DefaultOptions()
	o.Replica = "a"
	cmd := &cobra.Command{
		Use:       "operator clientgo|runtime",
		Short:     "Run one replica of a Go Echo operator (logs on stderr; trace on stdout with RLAB_TRACE=1)",
		Hidden:    true,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{style.ClientGo.String(), style.Runtime.String()},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOperatorFlags(o); err != nil {
				return err
			}
			takes := style.Style(args[0]).Traits().Takes
			if o.Warmup && !takes(style.Warmup) {
				return fmt.Errorf("--warmup is controller-runtime's EnableWarmup: client-go has no such option, and the %s operator starts its informers once it leads", args[0])
			}
			if o.GenerationPredicate != echo.GenerationOff && !takes(style.GenerationPredicate) {
				return fmt.Errorf("--generation-predicate is controller-runtime's GenerationChangedPredicate: the %s operator queues every event its handlers get", args[0])
			}
			if o.DefaultsCache != echo.DefaultsCacheAll && !takes(style.DefaultsCache) {
				return fmt.Errorf("--defaults-cache narrows controller-runtime's cache: the %s operator's informer always lists and watches %s alone", args[0], echo.DefaultsName)
			}
			if o.WebhookPort != 0 && !takes(style.Webhook) {
				return fmt.Errorf("--webhook-port serves controller-runtime's webhook server: the %s operator has none", args[0])
			}
			if o.WebhookPort < 0 || o.WebhookPort > 65535 || (o.WebhookPort > 0 && o.WebhookCertDir == "") {
				return fmt.Errorf("--webhook-port %d: want a port from 1 to 65535 and a --webhook-cert-dir holding tls.crt and tls.key", o.WebhookPort)
			}
			run := map[style.Style]func(context.Context, echo.Options) error{
				style.ClientGo: clientgo.Run,
				style.Runtime:  crstyle.Run,
			}[style.Style(args[0])]
			if run == nil {
				return fmt.Errorf("unknown style %q: want clientgo or runtime", args[0])
			}
			return runOperator(cmd.Context(), run, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	f.StringVar(&o.Namespace, "namespace", "", "the namespace to watch and write (required)")
	f.StringVar(&o.Replica, "replica", o.Replica, "replica name, part of the leader identity <style>-<replica>-<pid>")
	f.IntVar(&o.Workers, "workers", o.Workers, "concurrent reconciles")
	f.Float32Var(&o.QPS, "qps", o.QPS, "client-side rate limit of the API clients, requests/s (0: the library's default, client-go 5 and controller-runtime none; -1: none)")
	f.IntVar(&o.Burst, "burst", o.Burst, "requests above --qps allowed at once (with a --qps above 0; 0: the library's default, 10)")
	f.StringVar(&o.Image, "image", o.Image, "image every Echo pod runs")
	f.BoolVar(&o.WatchOwned, "watch-owned", o.WatchOwned, "reconcile on Deployment events too (false reproduces the never-repaired hand edit)")
	f.BoolVar(&o.Finalizer, "finalizer", o.Finalizer, "put the "+echo.Finalizer+" finalizer on Echoes: deletion waits until the Echo is unlisted from ConfigMap "+echo.RegistryName)
	f.BoolVar(&o.Warmup, "warmup", o.Warmup, "controller-runtime only: start the controller's watches before leading (EnableWarmup), so a standby takes over with a warm cache")
	f.StringVar(&o.GenerationPredicate, "generation-predicate", o.GenerationPredicate, "controller-runtime only: where GenerationChangedPredicate filters updates that leave metadata.generation as it was: "+strings.Join(echo.GenerationPredicates, "|")+" (echo: the Echo watch; all: every watch, as WithEventFilter would)")
	f.StringVar(&o.DefaultsCache, "defaults-cache", o.DefaultsCache, "controller-runtime only: what the cache lists and watches of ConfigMaps for the watch of "+echo.DefaultsName+": "+strings.Join(echo.DefaultsCaches, "|")+" (all: every ConfigMap of the namespace, a predicate filtering the others' events; named: "+echo.DefaultsName+" alone, by a field selector)")
	f.StringVar(&o.WebhookHost, "webhook-host", o.WebhookHost, "controller-runtime only: the address the validating webhook listens on (empty: every address)")
	f.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "controller-runtime only: serve the validating webhook of Echoes (a message unique in the namespace) on this port (0: none)")
	f.StringVar(&o.WebhookCertDir, "webhook-cert-dir", o.WebhookCertDir, "controller-runtime only: the directory holding the webhook's tls.crt and tls.key")
	f.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "elect a leader on the Lease "+echo.LeaseName)
	f.DurationVar(&o.LeaseDuration, "lease-duration", o.LeaseDuration, "how long a Lease holds without renewal")
	f.DurationVar(&o.RenewDeadline, "renew-deadline", o.RenewDeadline, "how long the leader retries renewing before it gives up")
	f.DurationVar(&o.RetryPeriod, "retry-period", o.RetryPeriod, "how often candidates try to acquire or renew")
	return cmd
}

func runOperator(parent context.Context, run func(context.Context, echo.Options) error, o echo.Options, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	h := slog.NewTextHandler(stderr, nil)
	o.Log = slog.New(h)
	klog.SetLogger(logr.FromSlogHandler(h))
	if os.Getenv("RLAB_TRACE") == "1" {
		o.Trace = stdout
	}
	if err := run(ctx, o); err != nil {
		o.Log.Error("operator exiting", "error", err)
		return exitCode(1)
	}
	return nil
}
