package aws

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// identity is what IMDS says about the instance and its attached ENIs.
type identity struct {
	instanceID   string
	instanceType string
	zone         string
	region       string
	primaryMAC   string
	// primary is the ENI at device index 0: its subnet and security groups
	// are where new ENIs go.
	primary imdsENI
	// enis are every attached ENI by interface ID, the primary included.
	enis map[string]imdsENI
}

// imdsENI is one network/interfaces/macs/<mac>/ entry.
type imdsENI struct {
	id             string
	mac            string
	deviceIndex    int
	subnetID       string
	subnetCIDR     netip.Prefix
	securityGroups []string
	localIPv4s     []netip.Addr // the primary address first
}

// metadataReader reads IMDS paths with IMDSv2 tokens (the imds client
// fetches and refreshes the token itself).
type metadataReader struct{ client *imds.Client }

func (m metadataReader) get(ctx context.Context, path string) (string, error) {
	out, err := m.client.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
	if err != nil {
		return "", fmt.Errorf("read IMDS %s: %w", path, err)
	}
	defer out.Content.Close()
	body, err := io.ReadAll(out.Content)
	if err != nil {
		return "", fmt.Errorf("read IMDS %s: %w", path, err)
	}
	return strings.TrimSpace(string(body)), nil
}

func (m metadataReader) lines(ctx context.Context, path string) ([]string, error) {
	body, err := m.get(ctx, path)
	if err != nil {
		return nil, err
	}
	return strings.Fields(body), nil
}

// readIdentity reads the instance and its ENIs from IMDS.
func (m metadataReader) readIdentity(ctx context.Context) (identity, error) {
	var id identity
	for _, field := range []struct {
		path string
		dst  *string
	}{
		{"instance-id", &id.instanceID},
		{"instance-type", &id.instanceType},
		{"placement/availability-zone", &id.zone},
		{"placement/region", &id.region},
		{"mac", &id.primaryMAC},
	} {
		v, err := m.get(ctx, field.path)
		if err != nil {
			return identity{}, err
		}
		*field.dst = v
	}
	enis, err := m.readENIs(ctx)
	if err != nil {
		return identity{}, err
	}
	id.enis = enis
	for _, eni := range enis {
		if eni.mac == id.primaryMAC {
			id.primary = eni
		}
	}
	if id.primary.id == "" {
		return identity{}, fmt.Errorf("read IMDS: the primary MAC %s is not among network/interfaces/macs", id.primaryMAC)
	}
	return id, nil
}

func (m metadataReader) readENIs(ctx context.Context) (map[string]imdsENI, error) {
	macs, err := m.lines(ctx, "network/interfaces/macs/")
	if err != nil {
		return nil, err
	}
	enis := make(map[string]imdsENI, len(macs))
	for _, mac := range macs {
		eni, err := m.readENI(ctx, strings.TrimSuffix(mac, "/"))
		if err != nil {
			return nil, err
		}
		enis[eni.id] = eni
	}
	return enis, nil
}

func (m metadataReader) readENI(ctx context.Context, mac string) (imdsENI, error) {
	base := "network/interfaces/macs/" + mac + "/"
	eni := imdsENI{mac: mac}
	var device, cidr string
	for _, field := range []struct {
		key string
		dst *string
	}{
		{"interface-id", &eni.id},
		{"device-number", &device},
		{"subnet-id", &eni.subnetID},
		{"subnet-ipv4-cidr-block", &cidr},
	} {
		v, err := m.get(ctx, base+field.key)
		if err != nil {
			return imdsENI{}, err
		}
		*field.dst = v
	}
	var err error
	if eni.deviceIndex, err = strconv.Atoi(device); err != nil {
		return imdsENI{}, fmt.Errorf("read IMDS %sdevice-number: %w", base, err)
	}
	if eni.subnetCIDR, err = netip.ParsePrefix(cidr); err != nil {
		return imdsENI{}, fmt.Errorf("read IMDS %ssubnet-ipv4-cidr-block: %w", base, err)
	}
	if eni.securityGroups, err = m.lines(ctx, base+"security-group-ids"); err != nil {
		return imdsENI{}, err
	}
	if eni.localIPv4s, err = m.addrs(ctx, base+"local-ipv4s"); err != nil {
		return imdsENI{}, err
	}
	return eni, nil
}

func (m metadataReader) addrs(ctx context.Context, path string) ([]netip.Addr, error) {
	fields, err := m.lines(ctx, path)
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(fields))
	for _, f := range fields {
		ip, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("read IMDS %s: %w", path, err)
		}
		out = append(out, ip)
	}
	return out, nil
}
