package daemon_test

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/awslocal"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/aws"
)

// TestAWSSourceThroughDaemon runs ipamd with ipSource.type aws against a
// local server speaking the EC2 query API and IMDS, through the real
// aws-sdk-go-v2 client: ADD gets an ENI secondary address and /v1/enis
// shows the ENIs.
func TestAWSSourceThroughDaemon(t *testing.T) {
	cloud, err := awslocal.Start(awslocal.Options{})
	if err != nil {
		t.Fatalf("start awslocal: %v", err)
	}
	t.Cleanup(func() { cloud.Close() })
	isolateSDK(t)

	n := newNode(t, "198.18.0.0/28")
	n.cfg.IPSource.Type = "aws"
	n.cfg.IPSource.AWS.Region = cloud.Region()
	n.cfg.IPSource.AWS.EC2Endpoint = cloud.EC2Endpoint()
	n.cfg.IPSource.AWS.IMDSEndpoint = cloud.IMDSEndpoint()
	n.cfg.Advanced.AWS.MaxBackoff = 5 * time.Millisecond
	if err := n.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	n.addSandbox("aws-pod")
	_, cni, intro := startInProcess(t, n)
	waitReady(t, cni)

	ip, err := cni.add(t.Context(), "aws-pod")
	if err != nil {
		t.Fatalf("ADD: %v", err)
	}
	prefix := netip.MustParsePrefix(ip)
	if !cloud.SubnetCIDR().Contains(prefix.Addr()) || prefix.Bits() != cloud.SubnetCIDR().Bits() {
		t.Fatalf("ADD got %s, want an address of subnet %s", ip, cloud.SubnetCIDR())
	}
	pool := mustPool(t, intro)
	if pool.Source != "aws" || pool.Assigned != 1 || pool.Total < 2 {
		t.Fatalf("pool = %+v", pool)
	}
	raw, err := intro.ENIs(t.Context())
	if err != nil {
		t.Fatalf("GET /v1/enis: %v", err)
	}
	var enis struct {
		Status aws.Status      `json:"status"`
		ENIs   []aws.ENIStatus `json:"enis"`
	}
	if err := json.Unmarshal(raw, &enis); err != nil {
		t.Fatal(err)
	}
	if enis.Status.InstanceID != cloud.InstanceID() || len(enis.ENIs) == 0 || enis.Status.Assigned != 1 {
		t.Fatalf("/v1/enis = %s", raw)
	}
}

// isolateSDK keeps the SDK away from the machine's AWS files and
// environment, and gives it static credentials the local cloud accepts.
func isolateSDK(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_SESSION_TOKEN",
		"AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "AWS_EC2_METADATA_DISABLED",
		"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2", "AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT", "AWS_CA_BUNDLE",
		"AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDLOCALTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local-test-secret")
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
}

// TestAWSSourceAssigningNothingStillServes: an EC2 that answers every
// assignment with success and nothing assigned (issue 39) once kept the
// first fill looping, so ipamd never served and /readyz never answered.
// Now the first fill makes one assignment and its read-back, ipamd serves,
// /readyz answers, and /metrics carries the refusal counter.
func TestAWSSourceAssigningNothingStillServes(t *testing.T) {
	cloud, err := awslocal.Start(awslocal.Options{})
	if err != nil {
		t.Fatalf("start awslocal: %v", err)
	}
	t.Cleanup(func() { cloud.Close() })
	isolateSDK(t)
	// A budget rather than forever, so a looping fill ends and fails the
	// call count instead of hanging the test.
	cloud.SetFaults(awslocal.Faults{AssignNothing: 300})

	n := newNode(t, "198.18.0.0/28")
	n.cfg.IPSource.Type = "aws"
	n.cfg.IPSource.AWS.Region = cloud.Region()
	n.cfg.IPSource.AWS.EC2Endpoint = cloud.EC2Endpoint()
	n.cfg.IPSource.AWS.IMDSEndpoint = cloud.IMDSEndpoint()
	n.cfg.Advanced.AWS.MaxBackoff = 5 * time.Millisecond
	n.cfg.Advanced.AWS.PoolCheckInterval = time.Hour // no loop tick during the test
	d, _, intro := startInProcess(t, n)

	if got := cloud.Calls()["AssignPrivateIpAddresses"]; got != 1 {
		t.Fatalf("the first fill made %d AssignPrivateIpAddresses calls, want 1", got)
	}
	if _, why, err := intro.Ready(t.Context()); err != nil {
		t.Fatalf("/readyz: %v (%s)", err, why)
	}
	body := scrape(t, d.IntrospectionAddr().String())
	for _, r := range aws.RefusalReasons {
		if want := `ipamd_aws_refused_addresses_total{reason="` + r + `"} 0`; !strings.Contains(body, want+"\n") {
			t.Fatalf("/metrics lacks %s", want)
		}
	}
}
