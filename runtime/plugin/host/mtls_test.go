package host

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	adapterpb "github.com/sandboxipam/sandboxipam/runtime/plugin/proto"
)

// pingSocket calls Ping on the plugin's socket over a connection of its
// own, with creds.
func pingSocket(t *testing.T, client *Client, creds credentials.TransportCredentials) error {
	t.Helper()
	addr := client.plugin.ReattachConfig().Addr
	conn, err := grpc.NewClient("unix://"+addr.String(), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = adapterpb.NewRuntimeAdapterClient(conn).Ping(testContext(t), &adapterpb.PingRequest{})
	return err
}

// strangerCertificate is a self-signed certificate the plugin has never
// been told about.
func strangerCertificate(t *testing.T) tls.Certificate {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, pub, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// With AutoMTLS (go-plugin's), the plugin finds the host's certificate in
// its environment and accepts only the host: a plaintext client, or a TLS
// client with another certificate, is refused.
func TestAutoMTLSRefusesOtherClients(t *testing.T) {
	statePath := writeState(t, fixtureState())
	client := launch(t, pluginConfig(t, statePath))
	if err := client.Ping(testContext(t)); err != nil {
		t.Fatalf("the host's own Ping: %v", err)
	}
	if err := pingSocket(t, client, insecure.NewCredentials()); err == nil {
		t.Error("a plaintext client reached a plugin with automatic mTLS")
	}
	foreign := credentials.NewTLS(&tls.Config{
		Certificates:       []tls.Certificate{strangerCertificate(t)},
		InsecureSkipVerify: true, // only the plugin's check of the client is under test
		MinVersion:         tls.VersionTLS12,
	})
	if err := pingSocket(t, client, foreign); err == nil {
		t.Error("a client with another certificate reached a plugin with automatic mTLS")
	}

	// Control: the same dialling reaches a plugin without mTLS.
	cfg := pluginConfig(t, statePath)
	cfg.DisableAutoMTLS = true
	if err := pingSocket(t, launch(t, cfg), insecure.NewCredentials()); err != nil {
		t.Errorf("plaintext Ping of a plugin without mTLS: %v", err)
	}
}
