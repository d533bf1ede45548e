package kubeenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is what the control plane authenticates with: a CA, the API server's
// serving certificate, the service account signing key and a kubeconfig
// holding a token of system:masters. Fields are file paths, but CAPEM.
type PKI struct {
	CACert, ServerCert, ServerKey, SAKey, Tokens, Kubeconfig string
	CAPEM                                                    []byte
}

// pkiRequest says what the certificates must name.
type pkiRequest struct {
	dir, serverURL, token string
	// serverIPs are the addresses the serving certificate is valid for.
	serverIPs []net.IP
}

// makePKI writes the cluster's certificates and keys under req.dir.
func makePKI(req pkiRequest) (PKI, error) {
	if err := os.MkdirAll(req.dir, 0o700); err != nil {
		return PKI{}, err
	}
	p := PKI{
		CACert: filepath.Join(req.dir, "ca.crt"), ServerCert: filepath.Join(req.dir, "apiserver.crt"),
		ServerKey: filepath.Join(req.dir, "apiserver.key"), SAKey: filepath.Join(req.dir, "sa.key"),
		Tokens: filepath.Join(req.dir, "tokens.csv"), Kubeconfig: filepath.Join(req.dir, "kubeconfig"),
	}
	caKey, ca, err := p.writeCA()
	if err != nil {
		return PKI{}, err
	}
	if err := p.writeServerCert(req.serverIPs, ca, caKey); err != nil {
		return PKI{}, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return PKI{}, err
	}
	if err := writeKey(p.SAKey, saKey); err != nil {
		return PKI{}, err
	}
	// One token, of system:masters: with AlwaysAllow every component
	// (kubelet, controller-manager, scheduler) may use it.
	if err := os.WriteFile(p.Tokens, []byte(req.token+`,sbxipam-admin,sbxipam-admin,"system:masters"`+"\n"), 0o600); err != nil {
		return PKI{}, err
	}
	if err := os.WriteFile(p.Kubeconfig, []byte(kubeconfig(req.serverURL, p.CAPEM, req.token)), 0o600); err != nil {
		return PKI{}, err
	}
	return p, nil
}

// writeCA makes a self-signed CA valid for a day.
func (p *PKI) writeCA() (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sandboxipam-e2e-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	p.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(p.CACert, p.CAPEM, 0o644); err != nil {
		return nil, nil, err
	}
	return key, ca, nil
}

// writeServerCert makes the API server's serving certificate, valid for
// ips and the kubernetes Service's names.
func (p *PKI) writeServerCert(ips []net.IP, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: ips,
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	if err := os.WriteFile(p.ServerCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return writeKey(p.ServerKey, key)
}

func writeKey(path string, k *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// kubeconfig is a kubeconfig for server, trusting caPEM, with token.
func kubeconfig(server string, caPEM []byte, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: e2e
  context:
    cluster: e2e
    user: admin
current-context: e2e
`, server, base64.StdEncoding.EncodeToString(caPEM), token)
}
