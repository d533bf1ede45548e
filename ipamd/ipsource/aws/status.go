package aws

import (
	"errors"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource"
)

// ENIStatus is one managed ENI as introspection (/v1/enis) shows it.
type ENIStatus struct {
	ID          string       `json:"id"`
	DeviceIndex int          `json:"deviceIndex"`
	SubnetID    string       `json:"subnetId"`
	SubnetCIDR  netip.Prefix `json:"subnetCidr"`
	Primary     bool         `json:"primary"`
	PrimaryIP   netip.Addr   `json:"primaryIp"`
	// Prefixes are the delegated IPv4 /28s (prefix delegation) and
	// IPv6Prefixes the /80s (IPv6 mode).
	Prefixes     []netip.Prefix `json:"prefixes,omitempty"`
	IPv6Prefixes []netip.Prefix `json:"ipv6Prefixes,omitempty"`
	// IPsTotal counts the ENI's pod addresses (its primary excluded).
	IPsTotal    int `json:"ipsTotal"`
	IPsAssigned int `json:"ipsAssigned"`
	IPsCooling  int `json:"ipsCooling"`
}

// Status is the source's state in numbers and short strings, for metrics.
type Status struct {
	InstanceID   string `json:"instanceId"`
	InstanceType string `json:"instanceType"`
	// MaxENIs is the instance type's limit, or Config.MaxENIs below it.
	MaxENIs int `json:"maxEnis"`
	// AddressesPerENI is how many pod addresses one ENI can hold.
	AddressesPerENI int `json:"addressesPerEni"`
	// Capacity is how many pod addresses the managed ENIs could hold at
	// most, ENI slots taken by other software excluded.
	Capacity int `json:"capacity"`
	ENIs     int `json:"enis"`
	Total    int `json:"total"`
	Assigned int `json:"assigned"`
	Cooling  int `json:"cooling"`
	Free     int `json:"free"`
	// GrowthBlocked is "" while the pool can grow, GrowthBlockedInstanceLimit
	// or GrowthBlockedSubnetFull while it is short of its targets for good,
	// GrowthBlockedNothingAssigned while growth waits after EC2 assigned
	// nothing.
	GrowthBlocked string `json:"growthBlocked,omitempty"`
	// LastError is the most recent failed step of the loop, kept after
	// later successes; LastErrorAt says when it happened.
	LastError     string    `json:"lastError,omitempty"`
	LastErrorAt   time.Time `json:"lastErrorAt,omitzero"`
	LeakedDeleted int       `json:"leakedEnisDeleted"`
}

// GrowthBlocked values.
const (
	GrowthBlockedInstanceLimit = "instance-limit"
	GrowthBlockedSubnetFull    = "subnet-full"
	// GrowthBlockedNothingAssigned: EC2's last assignment added no usable
	// address; growth waits out its backoff (ErrNothingAssigned).
	GrowthBlockedNothingAssigned = "nothing-assigned"
)

// growthState is what Status reports beyond counts.
type growthState struct {
	blocked       string
	lastError     string
	lastErrorAt   time.Time
	leakedDeleted int
}

// ENIs lists the managed ENIs by device index; nil until Ready.
func (s *Source) ENIs() []ENIStatus {
	if !s.isReady() {
		return nil
	}
	usage := s.usage()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ENIStatus, 0, len(s.enis))
	for _, e := range s.sortedENIs() {
		u := usage[e.id]
		out = append(out, ENIStatus{
			ID: e.id, DeviceIndex: e.deviceIndex, SubnetID: e.subnetID, SubnetCIDR: e.subnetCIDR,
			Primary: e.primary, PrimaryIP: e.primaryIP,
			Prefixes: slices.Clone(e.prefixes), IPv6Prefixes: slices.Clone(e.ipv6Prefixes),
			IPsTotal: len(e.ips) + prefixSize*len(e.prefixes), IPsAssigned: u.Assigned, IPsCooling: u.Cooling,
		})
	}
	return out
}

// Status reports the source's state; zero until Ready.
func (s *Source) Status() Status {
	if !s.isReady() {
		return Status{}
	}
	counts := s.counts()
	usage := s.usage()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{
		InstanceID: s.id.instanceID, InstanceType: s.id.instanceType,
		MaxENIs: s.maxENIs(), AddressesPerENI: s.perENI(), Capacity: s.capacity(),
		ENIs: len(s.enis), Total: counts.total, Free: counts.free,
		GrowthBlocked: s.state.blocked, LastError: s.state.lastError, LastErrorAt: s.state.lastErrorAt,
		LeakedDeleted: s.state.leakedDeleted,
	}
	for id := range s.enis {
		st.Assigned += usage[id].Assigned
		st.Cooling += usage[id].Cooling
	}
	return st
}

// usage is the pool's usage by group (ENI ID).
func (s *Source) usage() map[string]ipsource.GroupUsage {
	out := map[string]ipsource.GroupUsage{}
	for _, u := range s.pool.Usage() {
		out[u.Group] = u
	}
	return out
}

// counts sums the usage of the managed ENIs.
func (s *Source) counts() poolCounts {
	usage := s.usage()
	s.mu.Lock()
	defer s.mu.Unlock()
	var c poolCounts
	for id := range s.enis {
		u := usage[id]
		c.total += u.Total
		c.free += u.Total - u.Assigned - u.Cooling
	}
	return c
}

// capacity is how many pod addresses the ENIs this source may use hold.
func (s *Source) capacity() int { return max(s.maxENIs()-len(s.foreign), 0) * s.perENI() }

// recordGrowth keeps the outcome of a growth attempt for Status and logs
// when growth becomes blocked or unblocked, not on every retry.
func (s *Source) recordGrowth(err error) {
	blocked := ""
	switch {
	case errors.Is(err, ErrInstanceLimitReached):
		blocked = GrowthBlockedInstanceLimit
	case errors.Is(err, ErrSubnetFull):
		blocked = GrowthBlockedSubnetFull
	case errors.Is(err, ErrNothingAssigned):
		blocked = GrowthBlockedNothingAssigned
	}
	s.mu.Lock()
	was := s.state.blocked
	s.state.blocked = blocked
	s.mu.Unlock()
	switch {
	case blocked != "" && was != blocked:
		s.log.Error("address pool cannot reach its targets", slog.String("reason", blocked), slog.Any("error", err))
	case blocked == "" && was != "":
		s.log.Info("address pool can grow again", slog.String("was", was))
	}
}

// noteError records a failed step of the loop, logging it when it differs
// from the last one so that a lasting outage does not flood the log.
func (s *Source) noteError(err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	repeated := s.state.lastError == err.Error()
	s.state.lastError, s.state.lastErrorAt = err.Error(), s.opts.Now()
	s.mu.Unlock()
	if !repeated && !isCapacityError(err) {
		s.log.Warn("pool adjustment failed; retried at the next check", slog.Any("error", err))
	}
}
