package awslocal

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// IMDSv2 header names, as the real service reads and writes them.
const (
	imdsTokenHeader    = "X-Aws-Ec2-Metadata-Token"
	imdsTokenTTLHeader = "X-Aws-Ec2-Metadata-Token-Ttl-Seconds"
	maxTokenTTLSeconds = 21600
)

// serveIMDS answers IMDSv2 only: a token from PUT /latest/api/token is
// required on every read, as on an instance with HttpTokens=required.
func (c *Cloud) serveIMDS(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/latest/api/token" {
		c.issueToken(w, r)
		return
	}
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !c.validToken(r.Header.Get(imdsTokenHeader)) {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	body, ok := c.metadata(r.URL.Path)
	if !ok {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Write([]byte(body)) //nolint:errcheck // the client sees a short body
}

func (c *Cloud) issueToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ttl, err := strconv.Atoi(r.Header.Get(imdsTokenTTLHeader))
	if err != nil || ttl < 1 || ttl > maxTokenTTLSeconds {
		http.Error(w, "Bad Request", http.StatusBadRequest)
		return
	}
	token := newRequestID()
	c.mu.Lock()
	c.tokens[token] = time.Now().Add(time.Duration(ttl) * time.Second)
	c.mu.Unlock()
	w.Header().Set(imdsTokenTTLHeader, strconv.Itoa(ttl))
	w.Write([]byte(token)) //nolint:errcheck // the client sees a short body
}

func (c *Cloud) validToken(token string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	expiry, ok := c.tokens[token]
	return ok && time.Now().Before(expiry)
}

// metadata answers one GET path from the current EC2 state.
func (c *Cloud) metadata(path string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if path == "/latest/dynamic/instance-identity/document" {
		return c.identityDocument(), true
	}
	rest, ok := strings.CutPrefix(path, "/latest/meta-data/")
	if !ok {
		return "", false
	}
	if macPath, ok := strings.CutPrefix(rest, "network/interfaces/macs/"); ok {
		return c.macMetadata(macPath)
	}
	primary := c.attachedENIs()[0]
	switch rest {
	case "instance-id":
		return c.opts.InstanceID, true
	case "instance-type":
		return c.opts.InstanceType, true
	case "placement/availability-zone":
		return c.opts.Region + "a", true
	case "placement/region":
		return c.opts.Region, true
	case "mac":
		return primary.mac, true
	case "local-ipv4":
		return primary.primaryIP.String(), true
	}
	return "", false
}

// macMetadata answers network/interfaces/macs/ and the per-MAC keys.
func (c *Cloud) macMetadata(path string) (string, bool) {
	attached := c.attachedENIs()
	if path == "" {
		lines := make([]string, 0, len(attached))
		for _, eni := range attached {
			lines = append(lines, eni.mac+"/")
		}
		return strings.Join(lines, "\n"), true
	}
	mac, key, _ := strings.Cut(path, "/")
	for _, eni := range attached {
		if eni.mac == mac {
			return c.eniMetadata(eni, key)
		}
	}
	return "", false
}

func (c *Cloud) eniMetadata(eni *networkInterface, key string) (string, bool) {
	switch key {
	case "interface-id":
		return eni.id, true
	case "device-number":
		return strconv.Itoa(eni.attachment.deviceIndex), true
	case "mac":
		return eni.mac, true
	case "subnet-id":
		return eni.subnetID, true
	case "subnet-ipv4-cidr-block":
		return c.opts.SubnetCIDR.String(), true
	case "vpc-id":
		return c.opts.VPCID, true
	case "security-group-ids":
		return strings.Join(eni.securityGroups, "\n"), true
	case "local-ipv4s":
		ips := []string{eni.primaryIP.String()}
		for _, ip := range eni.secondaryIPs {
			ips = append(ips, ip.String())
		}
		return strings.Join(ips, "\n"), true
	}
	return "", false
}

func (c *Cloud) identityDocument() string {
	doc := map[string]any{
		"accountId":        ownerID,
		"architecture":     "x86_64",
		"availabilityZone": c.opts.Region + "a",
		"imageId":          "ami-0abcdef1234567890",
		"instanceId":       c.opts.InstanceID,
		"instanceType":     c.opts.InstanceType,
		"privateIp":        c.attachedENIs()[0].primaryIP.String(),
		"region":           c.opts.Region,
		"version":          "2017-09-30",
		"pendingTime":      "2026-01-01T00:00:00Z",
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	return string(b)
}
