// Package ipsource is where ipamd's addresses come from. A Source fills and
// trims the datastore's pool; the datastore alone decides which free address
// a pod gets, so a Source never sees the CNI ADD/DEL path.
//
// Two sources ship: static (CIDRs from config, package ipsource/static) and
// aws (secondary private IPs of ENIs, package ipsource/aws).
package ipsource

import (
	"context"
	"net/netip"
)

// Address is one address the pool may hand to a pod.
type Address struct {
	// IP is the pod address.
	IP netip.Addr
	// Subnet is the network the address lives in; its length is the
	// prefix length reported to the CNI plugin.
	Subnet netip.Prefix
	// Gateway is the next hop for the pod's default route; zero when the
	// CNI plugin should route via its host-side veth.
	Gateway netip.Addr
	// Group names where the address comes from: "static", or an ENI ID.
	// Sources use it to trim one group (one ENI) at a time.
	Group string
}

// Pool is the datastore's side of a Source: the only way a Source changes
// which addresses exist. Implementations are safe for concurrent use.
type Pool interface {
	// AddAddresses makes addresses available. Adding an address that is
	// already in the pool updates its Subnet, Gateway and Group.
	AddAddresses(ctx context.Context, addrs []Address) error
	// TakeFree removes up to n addresses of group that are free and past
	// their cooldown, durably, and returns them. An assigned or cooling
	// address is never taken. A source that fails to give the addresses
	// back to the provider returns them with AddAddresses.
	TakeFree(ctx context.Context, group string, n int) ([]Address, error)
	// Usage reports, per group, how many addresses exist and how many are
	// assigned to pods.
	Usage() []GroupUsage
}

// GroupUsage is one group's share of the pool.
type GroupUsage struct {
	Group    string
	Total    int // addresses in the pool
	Assigned int // held by pods
	Cooling  int // released, waiting out the cooldown
}

// Source fills a Pool and keeps it at the size its policy wants.
type Source interface {
	// Name is "static", "aws", ...
	Name() string
	// Run adds the source's addresses to pool and, for sources that grow
	// and shrink, keeps adjusting it until ctx is done. It returns once the
	// initial addresses are in the pool when the source has nothing more
	// to do (static), or when ctx is done. An error means the source could
	// not provide its initial addresses.
	Run(ctx context.Context, pool Pool) error
}
