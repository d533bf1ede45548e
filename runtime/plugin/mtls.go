package plugin

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"strconv"
	"time"
)

// The host's automatic mTLS. go-plugin's own AutoMTLS has each side make a
// P-521 key and certificate, one after the other, on the launch's critical
// path; that costs 25-35 ms per launch on an idle machine and far more on
// a busy one. Instead the host makes both one-time P-256 certificates (well
// under a millisecond) and hands the plugin its key, and the host's
// certificate, through an inherited pipe: never through the environment,
// which other processes of the same user can read. Each side then accepts
// only the other's certificate, as with go-plugin's AutoMTLS.
const (
	// tlsFDEnv names the plugin's file descriptor to read its TLS
	// material from.
	tlsFDEnv = "SANDBOXIPAM_PLUGIN_TLS_FD"
	// tlsServerName is the name in both certificates.
	tlsServerName = "localhost"

	pemServerCert = "PLUGIN CERTIFICATE"
	pemServerKey  = "PLUGIN PRIVATE KEY"
	pemClientCert = "HOST CERTIFICATE"
)

// mtlsMaterial is one launch's pair of certificates.
type mtlsMaterial struct {
	client, server tls.Certificate
}

func newMTLSMaterial() (*mtlsMaterial, error) {
	client, err := oneTimeCertificate()
	if err != nil {
		return nil, fmt.Errorf("host certificate: %w", err)
	}
	server, err := oneTimeCertificate()
	if err != nil {
		return nil, fmt.Errorf("plugin certificate: %w", err)
	}
	return &mtlsMaterial{client: client, server: server}, nil
}

// oneTimeCertificate makes a self-signed P-256 certificate for
// tlsServerName, usable by a client and a server.
func oneTimeCertificate() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: tlsServerName, Organization: []string{"sandboxipam"}},
		DNSNames:              []string{tlsServerName},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(100 * 365 * 24 * time.Hour), // the plugin's whole life
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// clientTLS is the host's side: present the host certificate, accept only
// the plugin's.
func (m *mtlsMaterial) clientTLS() *tls.Config {
	roots := x509.NewCertPool()
	roots.AddCert(m.server.Leaf)
	return &tls.Config{
		Certificates: []tls.Certificate{m.client},
		RootCAs:      roots,
		ServerName:   tlsServerName,
		MinVersion:   tls.VersionTLS13,
	}
}

// pluginPEM is what the plugin reads from its pipe.
func (m *mtlsMaterial) pluginPEM() ([]byte, error) {
	key, err := x509.MarshalPKCS8PrivateKey(m.server.PrivateKey)
	if err != nil {
		return nil, err
	}
	var out []byte
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: pemServerCert, Bytes: m.server.Certificate[0]})...)
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: pemServerKey, Bytes: key})...)
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: pemClientCert, Bytes: m.client.Certificate[0]})...)
	return out, nil
}

// pluginTLSFile returns the read end of a pipe already holding the
// plugin's material, for the plugin to inherit.
func (m *mtlsMaterial) pluginTLSFile() (*os.File, error) {
	data, err := m.pluginPEM()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	// A few kilobytes: the pipe's buffer holds them, nothing blocks.
	if _, err := w.Write(data); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// pluginTLS is the plugin's side (go-plugin's TLSProvider). Without our
// variable it returns nil, and go-plugin's own AutoMTLS (or plaintext)
// applies.
func pluginTLS() (*tls.Config, error) {
	fdText := os.Getenv(tlsFDEnv)
	if fdText == "" {
		return nil, nil
	}
	fd, err := strconv.Atoi(fdText)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", tlsFDEnv, fdText, err)
	}
	f := os.NewFile(uintptr(fd), "plugin-tls")
	if f == nil {
		return nil, fmt.Errorf("%s=%d: no such file descriptor", tlsFDEnv, fd)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read TLS material: %w", err)
	}
	return parsePluginPEM(data)
}

func parsePluginPEM(data []byte) (*tls.Config, error) {
	blocks := map[string][]byte{}
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		blocks[block.Type] = block.Bytes
	}
	if blocks[pemServerCert] == nil || blocks[pemServerKey] == nil || blocks[pemClientCert] == nil {
		return nil, errors.New("TLS material incomplete")
	}
	key, err := x509.ParsePKCS8PrivateKey(blocks[pemServerKey])
	if err != nil {
		return nil, fmt.Errorf("plugin key: %w", err)
	}
	hostCert, err := x509.ParseCertificate(blocks[pemClientCert])
	if err != nil {
		return nil, fmt.Errorf("host certificate: %w", err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(hostCert)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{blocks[pemServerCert]}, PrivateKey: key}},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientCAs,
		MinVersion:   tls.VersionTLS13,
	}, nil
}
