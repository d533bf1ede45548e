package plugin

import (
	"crypto/tls"
	"os/exec"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sandboxipam/sandboxipam/internal/testadapter"
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

func TestAutoMTLSRefusesOtherClients(t *testing.T) {
	statePath := writeState(t, fixtureState())
	client := launch(t, pluginConfig(t, statePath))
	if err := client.Ping(testContext(t)); err != nil {
		t.Fatalf("the host's own Ping: %v", err)
	}
	if err := pingSocket(t, client, insecure.NewCredentials()); err == nil {
		t.Error("a plaintext client reached a plugin with automatic mTLS")
	}
	stranger, err := oneTimeCertificate()
	if err != nil {
		t.Fatal(err)
	}
	foreign := credentials.NewTLS(&tls.Config{
		Certificates:       []tls.Certificate{stranger},
		InsecureSkipVerify: true, // only the plugin's check of the client is under test
		MinVersion:         tls.VersionTLS13,
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

func TestPluginPEMRoundTrip(t *testing.T) {
	material, err := newMTLSMaterial()
	if err != nil {
		t.Fatal(err)
	}
	data, err := material.pluginPEM()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parsePluginPEM(data)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Errorf("ClientAuth = %v, want RequireAndVerifyClientCert", cfg.ClientAuth)
	}
	if got, want := cfg.Certificates[0].Certificate[0], material.server.Certificate[0]; string(got) != string(want) {
		t.Error("the plugin's certificate did not survive the pipe")
	}
	if _, err := parsePluginPEM(data[:len(data)/2]); err == nil {
		t.Error("half the material parsed")
	}
}

// Serve still speaks go-plugin's own AutoMTLS, for a host that asks for it.
func TestServeAcceptsGoPluginAutoMTLS(t *testing.T) {
	statePath := writeState(t, fixtureState())
	pc := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  handshake(),
		VersionedPlugins: pluginSets(ProtocolVersion, nil),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		Cmd:              exec.Command(testadapter.Build(t), "--state="+statePath),
		Logger:           newSlogBridge(testLogger(t), "", nil),
	})
	defer pc.Kill()
	rpc, err := dispense(pc)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rpc.Info(testContext(t), &adapterpb.InfoRequest{})
	if err != nil {
		t.Fatalf("Info over go-plugin's AutoMTLS: %v", err)
	}
	if resp.GetRuntimeName() != "containerd" {
		t.Errorf("RuntimeName = %q, want containerd", resp.GetRuntimeName())
	}
}
