package config

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/config/validname"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/static"
)

// maxSocketPath is sun_path's size less its terminating NUL.
const maxSocketPath = 107

// Validate checks every field and reports every problem, each naming the
// field and the value it got, joined into one error wrapping ErrInvalid.
func (c Config) Validate() error {
	var v validator
	v.absPath("socket", c.Socket, true)
	if len(c.Socket) > maxSocketPath {
		v.addf("socket must be at most %d bytes (a unix socket path limit), got %d bytes", maxSocketPath, len(c.Socket))
	}
	v.absPath("stateDir", c.StateDir, true)
	v.absPath("checkpoint", c.Checkpoint, false)
	if c.Network == "" {
		v.addf("network must not be empty")
	}
	if err := validname.IfName(c.IfName); err != nil {
		v.addf("ifName %q %v", c.IfName, err)
	}
	v.nonNegative("cooldown", c.Cooldown)
	v.nested("reconcile.", c.Reconcile.Validate())
	c.Runtime.validate(&v)
	c.IPSource.validate(&v)
	if c.Routes.Nodes && c.IPSource.NodeName == "" {
		v.addf("ipSource.nodeName must be set when routes.nodes is true (this node gets no route to itself; set NODE_NAME from the downward API's spec.nodeName)")
	}
	v.hostPort("introspection.address", c.Introspection.Address, true)
	c.validateAdminSocket(&v)
	v.hostPort("metrics.address", c.Metrics.Address, false)
	v.nested("alive.", c.Alive.Validate())
	v.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	v.oneOf("log.format", c.Log.Format, "text", "json")
	if n := len(c.PodLinks.HostVethPrefix); n == 0 || n > 7 {
		v.addf("podLinks.hostVethPrefix must be 1 to 7 characters (the CNI plugin's hostVethPrefix), got %q", c.PodLinks.HostVethPrefix)
	}
	v.absPath("cni.confListPath", c.CNI.ConfListPath, false)
	v.oneOf("cni.portMap", c.CNI.PortMap, PortMapIPTables, PortMapNFTables, PortMapAuto, PortMapOff)
	v.absPath("podLinks.netNS", c.PodLinks.NetNS, false)
	v.oneOf("podLinks.podWiring", c.PodLinks.PodWiring, PodWiringAuto, PodWiringPlugin, PodWiringIPAMOnly)
	if c.PodLinks.PodWiring == PodWiringIPAMOnly && c.CNI.ConfListPath != "" {
		v.addf("podLinks.podWiring is ipamOnly, but cni.confListPath %q makes ipamd write a conflist with sandboxipam as the main plugin: set podLinks.podWiring to auto or plugin, or empty cni.confListPath", c.CNI.ConfListPath)
	}
	c.Advanced.validate(&v, c.IPSource.Type)
	return v.err()
}

// validateAdminSocket: the admin socket is a unix socket path of its own,
// never the CNI socket.
func (c Config) validateAdminSocket(v *validator) {
	v.absPath("introspection.adminSocket", c.Introspection.AdminSocket, false)
	path := c.AdminSocketPath()
	if len(path) > maxSocketPath {
		v.addf("introspection.adminSocket must be at most %d bytes (a unix socket path limit), got %d bytes (%q)", maxSocketPath, len(path), path)
	}
	if filepath.Clean(path) == filepath.Clean(c.Socket) {
		v.addf("introspection.adminSocket must differ from socket (the CNI socket), got %q", path)
	}
}

func (r Runtime) validate(v *validator) {
	if _, ok := LookupAdapter(r.Adapter); !ok && r.Adapter != AdapterAuto && !isPath(r.Adapter) {
		v.addf("runtime.adapter must be one of %s, auto or a path, got %q", strings.Join(AdapterNames(), ", "), r.Adapter)
	}
	if isPath(r.Adapter) && !filepath.IsAbs(r.Adapter) {
		v.addf("runtime.adapter must be an absolute path when it is a path, got %q", r.Adapter)
	}
	if r.Adapter == AdapterAuto && r.Endpoint != "" {
		v.addf("runtime.endpoint must be empty when runtime.adapter is auto (auto finds the socket), got %q", r.Endpoint)
	}
	if r.Endpoint != "" && !strings.Contains(r.Endpoint, "://") && !filepath.IsAbs(r.Endpoint) {
		v.addf("runtime.endpoint must be a URI such as unix:///run/containerd/containerd.sock or an absolute socket path, got %q", r.Endpoint)
	}
	v.absPath("runtime.pluginDir", r.PluginDir, false)
	if r.SHA256 != "" {
		if b, err := hex.DecodeString(r.SHA256); err != nil || len(b) != 32 {
			v.addf("runtime.sha256 must be 64 hex digits, got %q", r.SHA256)
		}
	}
}

func (s IPSource) validate(v *validator) {
	if hint := renamedValue("ipSource.type", s.Type); hint != "" {
		v.addf("%s (the source of the Node's spec.podCIDRs)", hint)
	} else if s.Type == "" {
		v.addf("%s", errNoSource)
	} else {
		v.oneOf("ipSource.type", s.Type, SourceStatic, SourcePodCIDR, SourcePool, SourceAWS)
	}
	if (s.Type == SourcePodCIDR || s.Type == SourcePool) && s.NodeName == "" {
		v.addf("ipSource.nodeName must be set when ipSource.type is %s (set NODE_NAME from the downward API's spec.nodeName)", s.Type)
	}
	if err := s.Pool.Validate("ipSource.pool"); err != nil && s.Type == SourcePool {
		for _, e := range unjoin(err) {
			v.addf("%v", e)
		}
	}
	if len(s.Static.Nodes) > 0 {
		s.validateNodes(v)
		return
	}
	if s.Type == SourceStatic && len(s.Static.CIDRs) == 0 {
		v.addf("ipSource.static.cidrs must list at least one CIDR when ipSource.type is static")
	}
	for i, cidr := range s.Static.CIDRs {
		if p, err := netip.ParsePrefix(cidr); err != nil {
			v.addf("ipSource.static.cidrs[%d] must be a CIDR such as 198.18.0.0/24, got %q", i, cidr)
		} else if p != p.Masked() {
			v.addf("ipSource.static.cidrs[%d] has host bits set, got %q (did you mean %s?)", i, cidr, p.Masked())
		}
	}
	for i, addr := range s.Static.Reserved {
		if _, err := netip.ParseAddr(addr); err != nil {
			v.addf("ipSource.static.reserved[%d] must be an IP address, got %q", i, addr)
		}
	}
	if s.Type == SourceStatic && len(v.errs) == 0 {
		// The static source's own checks: overlaps, reserved addresses
		// and gateways inside the CIDRs, sizes.
		if _, err := static.ParseConfig(s.Static.CIDRs, s.Static.Reserved, s.Static.Gateways); err != nil {
			v.addf("ipSource.%v", err)
		}
	}
	if s.Type == SourceAWS {
		v.nested("ipSource.", s.AWS.Validate()) // its errors say aws.<field>
	}
}

// errNoSource: there is no default IP source. A default static range
// would start every node given the same (or an empty) config on the same
// addresses.
var errNoSource = fmt.Sprintf("ipSource.type must be chosen (env %s): %s (CIDRs from ipSource.static.cidrs, one node's, "+
	"or per node from ipSource.static.nodes), %s (the Node's spec.podCIDRs), %s (blocks claimed from an IPPool) or %s (ENI secondary IPs); "+
	"there is no default, because nodes given the same config would hand out the same addresses",
	EnvName("ipSource.type"), SourceStatic, SourcePodCIDR, SourcePool, SourceAWS)

// validateNodes checks static.nodes: every entry's CIDRs, no overlap
// between two nodes' (the one thing a per-node map is for), and this
// node's entry as the static source would use it.
func (s IPSource) validateNodes(v *validator) {
	names := make([]string, 0, len(s.Static.Nodes))
	for name := range s.Static.Nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	type seen struct {
		field string
		p     netip.Prefix
	}
	var all []seen
	for _, name := range names {
		if len(s.Static.Nodes[name]) == 0 {
			v.addf("ipSource.static.nodes.%s must list at least one CIDR", name)
		}
		for i, cidr := range s.Static.Nodes[name] {
			field := fmt.Sprintf("ipSource.static.nodes.%s[%d]", name, i)
			p, err := netip.ParsePrefix(cidr)
			switch {
			case err != nil:
				v.addf("%s must be a CIDR such as 198.18.0.0/24, got %q", field, cidr)
				continue
			case p != p.Masked():
				v.addf("%s has host bits set, got %q (did you mean %s?)", field, cidr, p.Masked())
				continue
			}
			for _, o := range all {
				if o.p.Overlaps(p) {
					v.addf("%s %q overlaps %s %q: two nodes would hand out the same addresses", field, cidr, o.field, o.p)
				}
			}
			all = append(all, seen{field, p})
		}
	}
	if len(s.Static.Gateways) > 0 {
		v.addf("ipSource.static.gateways must be empty when ipSource.static.nodes is set (gateways are per static.cidrs entry), got %q", s.Static.Gateways)
	}
	if s.Type != SourceStatic || len(v.errs) > 0 {
		return
	}
	if s.NodeName == "" {
		v.addf("ipSource.nodeName must be set when ipSource.static.nodes is (set NODE_NAME from the downward API's spec.nodeName)")
		return
	}
	if _, ok := s.Static.Nodes[s.NodeName]; !ok {
		v.addf("ipSource.static.nodes has no entry for node %q (ipSource.nodeName, NODE_NAME); it lists %s", s.NodeName, strings.Join(names, ", "))
		return
	}
	cidrs, reserved, gateways := s.StaticPool()
	if _, err := static.ParseConfig(cidrs, reserved, gateways); err != nil {
		v.addf("ipSource.static.nodes.%s: %v", s.NodeName, err)
	}
}

// StaticPool is what the static source serves on this node: the entry of
// ipSource.nodeName in static.nodes (with the reserved addresses inside
// it) when static.nodes is set, else static.cidrs, reserved and gateways.
func (s IPSource) StaticPool() (cidrs, reserved, gateways []string) {
	if len(s.Static.Nodes) == 0 {
		return s.Static.CIDRs, s.Static.Reserved, s.Static.Gateways
	}
	cidrs = s.Static.Nodes[s.NodeName]
	for _, r := range s.Static.Reserved {
		ip, err := netip.ParseAddr(r)
		if err != nil {
			reserved = append(reserved, r)
			continue
		}
		for _, c := range cidrs {
			if p, err := netip.ParsePrefix(c); err == nil && p.Contains(ip) {
				reserved = append(reserved, r)
				break
			}
		}
	}
	return cidrs, reserved, nil
}

// unjoin splits an errors.Join result so each problem is listed alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

type validator struct{ errs []error }

func (v *validator) addf(format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf(format, args...))
}

// nested adds each problem a component's Validate reported, its field
// names prefixed with where the component sits in the config.
func (v *validator) nested(prefix string, err error) {
	if err == nil {
		return
	}
	for _, e := range unjoin(err) {
		v.addf("%s%v", prefix, e)
	}
}

func (v *validator) err() error {
	if len(v.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalid, errors.Join(v.errs...))
}

func (v *validator) absPath(field, value string, required bool) {
	switch {
	case value == "" && required:
		v.addf("%s must not be empty", field)
	case value != "" && !filepath.IsAbs(value):
		v.addf("%s must be an absolute path, got %q", field, value)
	}
}

// positive refuses a duration that is not above zero, saying why.
func (v *validator) positive(field string, d time.Duration, why string) {
	if d <= 0 {
		v.addf("%s must be positive, got %s: %s", field, d, why)
	}
}

func (v *validator) nonNegative(field string, d time.Duration) {
	if d < 0 {
		v.addf("%s must not be negative, got %s", field, d)
	}
}

func (v *validator) oneOf(field, value string, allowed ...string) {
	for _, a := range allowed {
		if value == a {
			return
		}
	}
	v.addf("%s must be one of %s, got %q", field, strings.Join(allowed, ", "), value)
}

func (v *validator) hostPort(field, value string, required bool) {
	if value == "" {
		if required {
			v.addf("%s must not be empty", field)
		}
		return
	}
	_, port, err := net.SplitHostPort(value)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		v.addf("%s must be host:port such as 127.0.0.1:61679, got %q", field, value)
	}
}
