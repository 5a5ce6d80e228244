package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the envtest backend's certificates, made fresh for every start. ECDSA
// keys, not RSA: generating them costs well under a millisecond each, where an
// RSA key costs tens to hundreds on a busy 2-core machine (and each component
// that is not given a serving certificate generates two).
type pki struct {
	ca, serving, admin keyPair
	// saKey signs ServiceAccount tokens (TokenRequest): its own key, as a
	// cluster has, not the CA's.
	saKey []byte
}

// keyPair is a certificate and its private key, PEM.
type keyPair struct{ cert, key []byte }

// pkiFiles are the paths pki.write wrote.
type pkiFiles struct {
	ca, servingCert, servingKey, saKey string
}

// newPKI makes a CA, a serving certificate for 127.0.0.1 and localhost (the
// apiserver, kube-controller-manager and kube-scheduler all bind there) and an
// admin client certificate in group system:masters.
func newPKI() (*pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("ca key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "rlab-ca"},
		NotBefore:             now.Add(-time.Hour), // tolerate a little clock skew
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("ca cert: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("ca cert: %w", err)
	}
	p := &pki{}
	if p.ca, err = encodePair(caDER, caKey); err != nil {
		return nil, err
	}
	issue := func(serial int64, tmpl *x509.Certificate) (keyPair, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return keyPair{}, fmt.Errorf("key: %w", err)
		}
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = caTmpl.NotBefore, caTmpl.NotAfter
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return keyPair{}, fmt.Errorf("cert %s: %w", tmpl.Subject.CommonName, err)
		}
		return encodePair(der, key)
	}
	if p.serving, err = issue(2, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "127.0.0.1"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		return nil, err
	}
	// The same identity envtest's admin user had.
	if p.admin, err = issue(3, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}
	if p.saKey, err = encodeKey(saKey); err != nil {
		return nil, err
	}
	return p, nil
}

func encodePair(der []byte, key *ecdsa.PrivateKey) (keyPair, error) {
	k, err := encodeKey(key)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: k}, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// write puts what the components read into dir (0600 files: keys).
func (p *pki) write(dir string) (pkiFiles, error) {
	f := pkiFiles{
		ca:          filepath.Join(dir, "ca.crt"),
		servingCert: filepath.Join(dir, "serving.crt"),
		servingKey:  filepath.Join(dir, "serving.key"),
		saKey:       filepath.Join(dir, "sa.key"),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, fmt.Errorf("pki dir: %w", err)
	}
	for path, data := range map[string][]byte{
		f.ca: p.ca.cert, f.servingCert: p.serving.cert, f.servingKey: p.serving.key, f.saKey: p.saKey,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return f, fmt.Errorf("write %s: %w", filepath.Base(path), err)
		}
	}
	return f, nil
}
