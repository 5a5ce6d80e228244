package sandbox

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/poll"
)

// What lesson 19 turns on and off: the controller-runtime operator's
// validating webhook (an Echo's message unique in its namespace), which
// replica a always serves where the apiserver can reach it, and the
// ValidatingWebhookConfiguration that tells the apiserver to call it.

// WebhookName names the ValidatingWebhookConfiguration; WebhookHook its
// one webhook, the name the apiserver's refusals quote.
const (
	WebhookName = "echo-unique-message"
	WebhookHook = "unique-message.kkloud.io"
	// webhookReplica is the replica that serves it: one address to call.
	webhookReplica = "a"
	// WebhookTimeout is how long the apiserver waits for an answer.
	WebhookTimeout = 5
)

// webhookServer is where replica a serves, and the CA the apiserver trusts
// it by.
type webhookServer struct {
	host string
	port int
	dir  string // tls.crt, tls.key
	ca   []byte // PEM
}

// URL is what the apiserver calls.
func (w *webhookServer) URL() string {
	return "https://" + net.JoinHostPort(w.host, strconv.Itoa(w.port)) + echov1.WebhookPath
}

// setupWebhook makes the CA, the serving certificate and a free port for
// replica a of controller-runtime, if the sandbox runs it and the
// apiserver can reach this machine; otherwise it says why (no), for
// ApplyWebhook to say.
func (s *Sandbox) setupWebhook(ctx context.Context) (_ *webhookServer, no error, _ error) {
	if !s.sc.runs(style.Runtime) {
		return nil, errors.New("this sandbox runs no controller-runtime operator, which serves the webhook"), nil
	}
	host, err := s.cluster.webhookHost(ctx)
	if err != nil {
		return nil, err, nil
	}
	port, err := freePort(host)
	if err != nil {
		return nil, nil, fmt.Errorf("webhook port: %w", err)
	}
	ca, cert, key, err := ServingCert(host, time.Now())
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(s.opts.State.Run(), "webhook")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("webhook dir: %w", err)
	}
	for name, b := range map[string][]byte{"tls.crt": cert, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, nil, fmt.Errorf("webhook %s: %w", name, err)
		}
	}
	return &webhookServer{host: host, port: port, dir: dir, ca: ca}, nil, nil
}

// args are the flags of replica r of style st: the webhook's, for
// controller-runtime's replica a (none if w is nil).
func (w *webhookServer) args(st style.Style, r string) []string {
	if !st.Traits().Takes(style.Webhook) || r != webhookReplica || w == nil {
		return nil
	}
	// One word each: a restart with other flags (setArgs) drops by prefix.
	return []string{"--webhook-host=" + w.host, "--webhook-port=" + strconv.Itoa(w.port), "--webhook-cert-dir=" + w.dir}
}

// freePort is a TCP port free on host now.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// certLife is how long the webhook's certificates hold: as long as the
// envtest control plane's (sim/cluster's pki).
const certLife = 10 * 365 * 24 * time.Hour

// ServingCert makes a self-signed CA and a serving certificate it signs
// for host (an IP address or a DNS name), valid as long as the control
// plane's own (a sandbox may run for days: a workshop machine): the CA
// goes in the webhook configuration's caBundle, the certificate and key in
// the server's cert dir. All PEM.
func ServingCert(host string, now time.Time) (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "rlab webhook CA"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(certLife),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("CA certificate: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("serving key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(certLife),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	// The apiserver checks the SAN against the URL's host, never the CN.
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("serving key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// WebhookConfig is lesson 19's ValidatingWebhookConfiguration: Echoes
// created or updated in namespace ns go to url, trusted by caBundle.
func WebhookConfig(url string, caBundle []byte, ns string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(WebhookTimeout)
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: WebhookName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         WebhookHook,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{echov1.Group}, APIVersions: []string{echov1.Version}, Resources: []string{echov1.Plural},
				},
			}},
			FailurePolicy: &fail,
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{ns},
			}}},
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// ApplyWebhook creates lesson 19's ValidatingWebhookConfiguration, or
// updates it, as the student, and waits (a bounded while) until the
// apiserver calls the webhook: a dry-run Echo saying the sample's message
// in controller-runtime's namespace must be refused.
func (a *StudentAPI) ApplyWebhook(ctx context.Context) error {
	if a.webhook == nil {
		return fmt.Errorf("no webhook here: %w", a.noWebhook)
	}
	want := WebhookConfig(a.webhook.URL(), a.webhook.ca, a.sc.namespace(style.Runtime))
	api := a.hands.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := api.Create(ctx, want, metav1.CreateOptions{FieldManager: "rlab"}); apierrors.IsAlreadyExists(err) {
		got, err := api.Get(ctx, WebhookName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("ValidatingWebhookConfiguration %s: %w", WebhookName, err)
		}
		got.Webhooks = want.Webhooks
		if _, err := api.Update(ctx, got, metav1.UpdateOptions{FieldManager: "rlab"}); err != nil {
			return fmt.Errorf("update ValidatingWebhookConfiguration %s: %w", WebhookName, err)
		}
	} else if err != nil {
		return fmt.Errorf("create ValidatingWebhookConfiguration %s: %w", WebhookName, err)
	}
	return a.awaitWebhook(ctx)
}

// awaitWebhook waits until the apiserver refuses, through the webhook, a
// dry-run Echo that repeats the sample's message, as rlab: its admission
// plugin learns of a new configuration through an informer, and replica a
// may still be starting.
func (a *StudentAPI) awaitWebhook(ctx context.Context) error {
	ns := a.sc.namespace(style.Runtime)
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": echov1.GroupVersion.String(), "kind": echov1.Kind,
		"metadata": map[string]any{"name": "rlab-webhook-probe", "namespace": ns},
		"spec":     map[string]any{"message": SampleMessage, "replicas": int64(1)},
	}}
	what := fmt.Sprintf("the apiserver to call webhook %s", WebhookHook)
	var last error
	err := poll.Until(ctx, 200*time.Millisecond, 60*time.Second, what, func(ctx context.Context) (bool, error) {
		_, err := a.sc.echoes(a.admin, style.Runtime).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		last = err
		return err != nil && strings.Contains(err.Error(), WebhookHook), nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (last answer: %v)", err, last)
	}
	return err
}

// DeleteWebhook deletes lesson 19's ValidatingWebhookConfiguration, as
// the student; one already gone is no error.
func (a *StudentAPI) DeleteWebhook(ctx context.Context) error {
	return deleteWebhook(ctx, a.hands)
}

// DeleteWebhook deletes lesson 19's ValidatingWebhookConfiguration if it
// is there, as rlab, after a lesson that stopped half-way. On a shared
// cluster it does nothing, as DeletePolicy.
func (a *Admin) DeleteWebhook(ctx context.Context) error {
	if a.shared {
		return nil
	}
	return deleteWebhook(ctx, a.admin)
}

func deleteWebhook(ctx context.Context, c *clients) error {
	err := c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, WebhookName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ValidatingWebhookConfiguration %s: %w", WebhookName, err)
	}
	return nil
}
