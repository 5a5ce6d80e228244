// Command manager runs the Echo controller: the main.go of a kubebuilder v4
// project as `kubebuilder init` writes it, with the Echo controller that
// `create api` registers, and its flags. Three departures from the
// scaffold: it logs through log/slog, not zap (no --zap-* flags);
// --metrics-secure serves HTTPS without the scaffold's authentication and
// authorization filter; and the health probes are off unless
// --health-probe-bind-address asks for them (rlab may run several managers
// on one machine, and only one can have :8081). rerun.go is rlab's, not
// kubebuilder's.
package main

import (
	"crypto/tls"
	"flag"
	"log/slog"
	"os"

	// Import all Kubernetes client auth plugins (OIDC, and the GCP and Azure
	// stubs), as the scaffold does.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	kkloudv1 "example.com/echo/api/v1"
	"example.com/echo/internal/controller"
	// +kubebuilder:scaffold:imports
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kkloudv1.AddToScheme(scheme))
	// +kubebuilder:scaffold:scheme
}

func main() {
	var metricsAddr, probeAddr string
	var metricsCertPath, metricsCertName, metricsCertKey string
	var webhookCertPath, webhookCertName, webhookCertKey string
	var webhookPort int
	var enableLeaderElection, secureMetrics, enableHTTP2 bool
	var tlsOpts []func(*tls.Config)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0",
		"Where the metrics endpoint listens: :8443 for HTTPS, :8080 for HTTP, 0 for no metrics endpoint.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", "0", "Where the health probes (/healthz, /readyz) listen, e.g. :8081; 0 for none.")
	flag.BoolVar(&enableLeaderElection, "leader-elect", false,
		"Elect a leader, so that one controller manager is active at a time.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true,
		"Serve metrics over HTTPS; --metrics-secure=false serves HTTP.")
	flag.StringVar(&webhookCertPath, "webhook-cert-path", "", "Directory of the webhook server's certificate.")
	flag.StringVar(&webhookCertName, "webhook-cert-name", "tls.crt", "File name of the webhook server's certificate.")
	flag.StringVar(&webhookCertKey, "webhook-cert-key", "tls.key", "File name of the webhook server's key.")
	flag.IntVar(&webhookPort, "webhook-port", 9443, "Port of the webhook server.")
	flag.StringVar(&metricsCertPath, "metrics-cert-path", "", "Directory of the metrics server's certificate.")
	flag.StringVar(&metricsCertName, "metrics-cert-name", "tls.crt", "File name of the metrics server's certificate.")
	flag.StringVar(&metricsCertKey, "metrics-cert-key", "tls.key", "File name of the metrics server's key.")
	flag.BoolVar(&enableHTTP2, "enable-http2", false, "Serve HTTP/2 from the metrics and webhook servers.")
	flag.Parse()

	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, nil)))

	// HTTP/2 stays off unless asked for: the servers then are not exposed to
	// HTTP/2's stream-reset attacks.
	if !enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) {
			setupLog.Info("Disabling HTTP/2")
			c.NextProtos = []string{"http/1.1"}
		})
	}

	webhookServerOptions := webhook.Options{TLSOpts: tlsOpts, Port: webhookPort}
	if webhookCertPath != "" {
		setupLog.Info("Using the webhook certificate given", "webhook-cert-path", webhookCertPath)
		webhookServerOptions.CertDir = webhookCertPath
		webhookServerOptions.CertName = webhookCertName
		webhookServerOptions.KeyName = webhookCertKey
	}
	webhookServer := webhook.NewServer(webhookServerOptions)

	// The metrics endpoint is off unless --metrics-bind-address says where.
	metricsServerOptions := metricsserver.Options{
		BindAddress:   metricsAddr,
		SecureServing: secureMetrics,
		TLSOpts:       tlsOpts,
	}
	// The scaffold adds here, with --metrics-secure, the filter that lets
	// only callers the apiserver authenticates and authorizes read the
	// metrics (config/rbac/metrics_*): left out, see the top of this file.
	if metricsCertPath != "" {
		setupLog.Info("Using the metrics certificate given", "metrics-cert-path", metricsCertPath)
		metricsServerOptions.CertDir = metricsCertPath
		metricsServerOptions.CertName = metricsCertName
		metricsServerOptions.KeyName = metricsCertKey
	}

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsServerOptions,
		WebhookServer:          webhookServer,
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         enableLeaderElection,
		LeaderElectionID:       "5e0c3a1d.kkloud.io",
		// TODO(lesson 20, step 13): with --leader-elect on your machine, the
		// manager stops before it starts: its log says why.
		// LeaderElectionReleaseOnCancel: true would hand the Lease over at
		// once when the manager stops; safe only if the program ends then.

		// TODO(lesson 20, step 2): rlab runs this manager on your machine as an
		// identity of its own, granted the course's Role in $WATCH_NAMESPACE
		// only. Left unset, Cache lists and watches every namespace.
	})
	if err != nil {
		setupLog.Error(err, "Failed to start manager")
		os.Exit(1)
	}

	if err := (&controller.EchoReconciler{
		Client:    mgr.GetClient(),
		Scheme:    mgr.GetScheme(),
		APIReader: mgr.GetAPIReader(),
	}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "Failed to create controller", "controller", "echo")
		os.Exit(1)
	}
	// +kubebuilder:scaffold:builder

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "Failed to set up health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		setupLog.Error(err, "Failed to set up ready check")
		os.Exit(1)
	}

	setupLog.Info("Starting manager")
	if err := mgr.Start(stopOnEdit(ctrl.SetupSignalHandler())); err != nil {
		setupLog.Error(err, "Failed to run manager")
		os.Exit(1)
	}
}
