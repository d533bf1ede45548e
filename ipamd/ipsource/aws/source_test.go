package aws

import (
	"context"
	"errors"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/awslocal"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/aws/awsconf"
)

var _ ipsource.Source = (*Source)(nil)

func TestNothingBeforeReady(t *testing.T) {
	src, err := New(awsconf.DefaultConfig(), awsconf.DefaultTuning(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if src.Name() != "aws" {
		t.Fatalf("Name() = %q", src.Name())
	}
	if err := src.Adjust(context.Background()); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("Adjust before Run = %v, want ErrNotStarted", err)
	}
	if _, err := src.CleanupLeakedENIs(context.Background()); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("CleanupLeakedENIs before Run = %v, want ErrNotStarted", err)
	}
	if st, enis := src.Status(), src.ENIs(); st != (Status{}) || enis != nil {
		t.Fatalf("before Run: Status %+v, ENIs %+v; want zero", st, enis)
	}
}

func TestIdentityComesFromIMDS(t *testing.T) {
	n := newNode(t, awslocal.Options{InstanceType: "m5.large", InstanceID: "i-0aaaabbbbccccdddd"})
	n.start(n.config(nil))
	st := n.src.Status()
	if st.InstanceID != "i-0aaaabbbbccccdddd" || st.InstanceType != "m5.large" || st.MaxENIs != 3 || st.AddressesPerENI != 9 || st.Capacity != 27 {
		t.Fatalf("Status = %+v, want m5.large i-0aaaabbbbccccdddd with 3 ENIs x 9", st)
	}
	primary := n.cloud.ENIs()[0]
	enis := n.src.ENIs()
	if len(enis) != 1 || enis[0].ID != primary.ID || enis[0].SubnetID != primary.SubnetID || enis[0].PrimaryIP != primary.PrimaryIP || !enis[0].Primary {
		t.Fatalf("ENIs() = %+v, want the primary %s", enis, primary.ID)
	}
}
