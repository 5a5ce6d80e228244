package sandbox

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/style"
)

// TestServingCert: the apiserver's side of a webhook call, a TLS client
// trusting only the caBundle, reaches a server with the certificate
// ServingCert made for its address; a certificate for another address is
// refused.
func TestServingCert(t *testing.T) {
	ca, cert, key, err := ServingCert("127.0.0.1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "allowed")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	defer srv.Close()

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("caBundle holds no certificate")
	}
	call := func(url string) error {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		resp, err := c.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return nil
	}
	if err := call(srv.URL + "/validate"); err != nil {
		t.Fatalf("%s with the caBundle: %v", srv.URL, err)
	}
	// The same server by a name its certificate does not hold.
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	if err := call("https://localhost:" + port + "/validate"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("localhost, not in the SAN: got %v, want a certificate error", err)
	}

	// A certificate for another address, on this server, is refused.
	_, other, otherKey, err := ServingCert("10.1.2.3", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if pair, err = tls.X509KeyPair(other, otherKey); err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewUnstartedServer(srv.Config.Handler)
	srv2.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv2.StartTLS()
	defer srv2.Close()
	if err := call(srv2.URL); err == nil {
		t.Fatalf("a certificate for 10.1.2.3 passed at %s", srv2.URL)
	}
	// And another CA's bundle trusts none of them.
	otherCA, _, _, err := ServingCert("127.0.0.1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(otherCA)
	if err := call(srv.URL); err == nil {
		t.Fatalf("another CA's bundle trusted %s", srv.URL)
	}
}

// TestWebhookConfig: what the apiserver needs to call the webhook, and
// only for one namespace.
func TestWebhookConfig(t *testing.T) {
	w := &webhookServer{host: "127.0.0.1", port: 9443, ca: []byte("CA")}
	c := WebhookConfig(w.URL(), w.ca, "echo-runtime")
	if len(c.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want 1", len(c.Webhooks))
	}
	h := c.Webhooks[0]
	if got := *h.ClientConfig.URL; got != "https://127.0.0.1:9443/validate-kkloud-io-v1-echo" || h.ClientConfig.Service != nil {
		t.Errorf("url %s (service %v)", got, h.ClientConfig.Service)
	}
	if string(h.ClientConfig.CABundle) != "CA" || *h.FailurePolicy != "Fail" || *h.SideEffects != "None" ||
		len(h.AdmissionReviewVersions) != 1 || h.AdmissionReviewVersions[0] != "v1" {
		t.Errorf("webhook %+v", h)
	}
	sel := h.NamespaceSelector.MatchExpressions
	if len(sel) != 1 || sel[0].Key != "kubernetes.io/metadata.name" || len(sel[0].Values) != 1 || sel[0].Values[0] != "echo-runtime" {
		t.Errorf("namespaceSelector %+v", h.NamespaceSelector)
	}
}

// TestWebhookArgs: controller-runtime's replica a alone is given the
// webhook's flags, one word each (a restart with other flags drops by
// prefix), and none when the sandbox has no server for it.
func TestWebhookArgs(t *testing.T) {
	s := &Sandbox{
		opts: Options{Self: "/bin/rlab", ShellInterval: time.Second, Image: "img"},
		ops:  &Operators{},
	}
	var webhook *webhookServer
	has := func(args []string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--webhook") })
	}
	for _, st := range style.All() {
		for _, r := range Replicas(st) {
			if _, args := s.replicaArgs(st, r, "/run/kubeconfig", "/run/echo-operator.sh", "/run/bin/kubectl", webhook); has(args) {
				t.Errorf("%s with no webhook server: %q", st.Source(r), args)
			}
		}
	}
	webhook = &webhookServer{host: "127.0.0.1", port: 9443, dir: "/run/webhook"}
	for _, st := range style.All() {
		for _, r := range Replicas(st) {
			_, args := s.replicaArgs(st, r, "/run/kubeconfig", "/run/echo-operator.sh", "/run/bin/kubectl", webhook)
			want := st == style.Runtime && r == "a"
			if has(args) != want {
				t.Errorf("%s: %q, want the webhook's flags %t", st.Source(r), args, want)
			}
			if want && !slices.Contains(args, "--webhook-port=9443") || want && !slices.Contains(args, "--webhook-cert-dir=/run/webhook") ||
				want && !slices.Contains(args, "--webhook-host=127.0.0.1") {
				t.Errorf("%s: %q", st.Source(r), args)
			}
		}
	}
}
