// Package awslocal is a small, consistent stand-in for the parts of AWS that
// ipamd's aws IP source talks to: the EC2 Query API (form-encoded POST,
// Action=..., XML answers in EC2's real shapes and error codes) and the
// instance metadata service with IMDSv2 tokens. Both listen on 127.0.0.1
// only, so the real aws-sdk-go-v2 clients can be pointed at them in tests.
//
// One Cloud holds one VPC subnet (addresses drawn from 198.18.0.0/15), one
// instance with its primary ENI, the network interfaces created through the
// API and per-instance-type limits. IMDS reflects the EC2 state: an ENI
// appears under network/interfaces/macs as soon as it is attached, with the
// addresses it holds at that moment (the real IMDS lags by a few seconds;
// nothing here depends on that lag).
//
// Faults can be injected (every Nth call throttled with RequestLimitExceeded,
// added latency, a named action failing with a chosen code, assignments that
// succeed but assign nothing or list addresses that were not assigned), and
// calls are counted per action, which is what the source's benchmarks
// report, and logged with their parameters (CallLog).
//
// What is not modelled: DescribeNetworkInterfaces pagination (every match is
// returned in one page), IPv6, prefix delegation, more than one network
// card, and authentication beyond checking that a request is SigV4-signed.
package awslocal

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Limits are an instance type's network limits as DescribeInstanceTypes
// reports them.
type Limits struct {
	// MaxENIs is networkInfo.maximumNetworkInterfaces.
	MaxENIs int
	// IPv4PerENI is networkInfo.ipv4AddressesPerInterface, the ENI's
	// primary address included.
	IPv4PerENI int
}

// DefaultInstanceTypes are the limits of a few real instance types.
func DefaultInstanceTypes() map[string]Limits {
	return map[string]Limits{
		"t3.nano":    {MaxENIs: 2, IPv4PerENI: 2},
		"t3.small":   {MaxENIs: 3, IPv4PerENI: 4},
		"t3.medium":  {MaxENIs: 3, IPv4PerENI: 6},
		"m5.large":   {MaxENIs: 3, IPv4PerENI: 10},
		"m5.xlarge":  {MaxENIs: 4, IPv4PerENI: 15},
		"m5.4xlarge": {MaxENIs: 8, IPv4PerENI: 30},
	}
}

// Options shape a Cloud. Zero fields take the defaults in their comments.
type Options struct {
	// Region defaults to "us-west-2"; the AZ is Region + "a".
	Region string
	// VPCID defaults to "vpc-0a1b2c3d4e5f60718".
	VPCID string
	// SubnetID defaults to "subnet-0123456789abcdef0".
	SubnetID string
	// SubnetCIDR defaults to 198.18.0.0/20. As in a real VPC the first
	// four addresses and the last one are reserved.
	SubnetCIDR netip.Prefix
	// SecurityGroups of the primary ENI; default ["sg-0aa11bb22cc33dd44"].
	SecurityGroups []string
	// InstanceID defaults to "i-0123456789abcdef0".
	InstanceID string
	// InstanceType defaults to "t3.medium" (3 ENIs x 6 IPv4 addresses).
	InstanceType string
	// InstanceTypes replaces DefaultInstanceTypes when set.
	InstanceTypes map[string]Limits
	// SubnetIPv6CIDR is the subnet's IPv6 block, from which
	// AssignIpv6Addresses delegates /80 prefixes; default 2001:db8:1::/64.
	SubnetIPv6CIDR netip.Prefix
}

func (o *Options) applyDefaults() {
	if o.Region == "" {
		o.Region = "us-west-2"
	}
	if o.VPCID == "" {
		o.VPCID = "vpc-0a1b2c3d4e5f60718"
	}
	if o.SubnetID == "" {
		o.SubnetID = "subnet-0123456789abcdef0"
	}
	if !o.SubnetCIDR.IsValid() {
		o.SubnetCIDR = netip.MustParsePrefix("198.18.0.0/20")
	}
	if len(o.SecurityGroups) == 0 {
		o.SecurityGroups = []string{"sg-0aa11bb22cc33dd44"}
	}
	if o.InstanceID == "" {
		o.InstanceID = "i-0123456789abcdef0"
	}
	if o.InstanceType == "" {
		o.InstanceType = "t3.medium"
	}
	if o.InstanceTypes == nil {
		o.InstanceTypes = DefaultInstanceTypes()
	}
	if !o.SubnetIPv6CIDR.IsValid() {
		o.SubnetIPv6CIDR = netip.MustParsePrefix("2001:db8:1::/64")
	}
}

// Faults are injected into EC2 calls (IMDS is never faulted).
type Faults struct {
	// ThrottleEvery answers every Nth EC2 call (counting all actions)
	// with RequestLimitExceeded; 0 disables.
	ThrottleEvery int
	// Latency is added before every EC2 call is answered.
	Latency time.Duration
	// FailActions makes the named actions fail with the given error
	// every time, before they change any state.
	FailActions map[string]APIError
	// Hold, when not nil, makes every EC2 call wait until it is closed
	// (or the client gives up); the call then runs normally. InFlight
	// tells how many calls wait.
	Hold <-chan struct{}
	// AssignNothing makes the next AssignNothing AssignPrivateIpAddresses
	// calls (secondary addresses or Ipv4PrefixCount) succeed without
	// assigning anything: the answer lists nothing and the ENI is
	// unchanged, as an EC2 implementation that is not AWS's was seen to
	// answer. Each such call counts down by one.
	AssignNothing int
	// AssignExtra, when not nil, adds to every successful
	// AssignPrivateIpAddresses answer for secondary addresses the
	// addresses it returns, which were not assigned (the ENI does not get
	// them): an answer listing addresses the client did not ask for. It
	// gets the ENI as it is after the assignment.
	AssignExtra func(ENI) []netip.Addr
}

// APIError is an EC2 error answer.
type APIError struct {
	// HTTPStatus defaults to 400.
	HTTPStatus int
	Code       string
	Message    string
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

func apiErrorf(code, format string, args ...any) *APIError {
	return &APIError{HTTPStatus: http.StatusBadRequest, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Cloud is the shared state behind the EC2 and IMDS servers.
type Cloud struct {
	opts Options

	ec2Listener, imdsListener net.Listener
	ec2Server, imdsServer     *http.Server

	mu     sync.Mutex
	enis   map[string]*networkInterface
	used   map[netip.Addr]bool // addresses taken in the subnet
	nextID uint64
	faults Faults
	calls  map[string]int // EC2 calls per action, throttled ones included
	log    []Call         // every EC2 call in order, throttled ones included
	tokens map[string]time.Time

	// Counters a test reads while calls are answered (it waits for one in
	// flight, say), so reading takes no lock; total and throttle still
	// change under mu, with calls.
	total    atomic.Int64 // EC2 calls answered, for ThrottleEvery
	throttle atomic.Int64 // calls answered with RequestLimitExceeded
	inFlight atomic.Int64 // calls being answered
}

// Start builds a Cloud with its instance and primary ENI and starts the EC2
// and IMDS servers on loopback ports. Close stops them.
func Start(opts Options) (*Cloud, error) {
	opts.applyDefaults()
	if _, ok := opts.InstanceTypes[opts.InstanceType]; !ok {
		return nil, fmt.Errorf("awslocal: instance type %q has no limits in InstanceTypes", opts.InstanceType)
	}
	c := &Cloud{
		opts:   opts,
		enis:   map[string]*networkInterface{},
		used:   map[netip.Addr]bool{},
		calls:  map[string]int{},
		tokens: map[string]time.Time{},
	}
	if err := c.createPrimaryENI(); err != nil {
		return nil, err
	}
	if err := c.listen(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cloud) createPrimaryENI() error {
	eni, apiErr := c.newENI(c.opts.SubnetID, c.opts.SecurityGroups, "primary network interface", 0)
	if apiErr != nil {
		return fmt.Errorf("awslocal: primary ENI: %w", apiErr)
	}
	eni.attachment = &attachment{
		id:                  c.newID("eni-attach-"),
		instanceID:          c.opts.InstanceID,
		deviceIndex:         0,
		status:              "attached",
		deleteOnTermination: true,
	}
	eni.status = "in-use"
	return nil
}

func (c *Cloud) listen() error {
	var err error
	if c.ec2Listener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return fmt.Errorf("awslocal: listen for EC2: %w", err)
	}
	if c.imdsListener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		c.ec2Listener.Close()
		return fmt.Errorf("awslocal: listen for IMDS: %w", err)
	}
	c.ec2Server = &http.Server{Handler: http.HandlerFunc(c.serveEC2), ReadHeaderTimeout: 10 * time.Second}
	c.imdsServer = &http.Server{Handler: http.HandlerFunc(c.serveIMDS), ReadHeaderTimeout: 10 * time.Second}
	go c.ec2Server.Serve(c.ec2Listener)   //nolint:errcheck // ends with ErrServerClosed on Close
	go c.imdsServer.Serve(c.imdsListener) //nolint:errcheck // ends with ErrServerClosed on Close
	return nil
}

// Close stops both servers.
func (c *Cloud) Close() error {
	return errors.Join(c.ec2Server.Close(), c.imdsServer.Close())
}

// EC2Endpoint is the base URL for the EC2 client (ec2.Options.BaseEndpoint).
func (c *Cloud) EC2Endpoint() string { return "http://" + c.ec2Listener.Addr().String() }

// IMDSEndpoint is the base URL for the IMDS client (imds.Options.Endpoint).
func (c *Cloud) IMDSEndpoint() string { return "http://" + c.imdsListener.Addr().String() }

// Region is the region the Cloud pretends to be in.
func (c *Cloud) Region() string { return c.opts.Region }

// InstanceID is the ID of the Cloud's one instance.
func (c *Cloud) InstanceID() string { return c.opts.InstanceID }

// SubnetCIDR is the subnet every ENI lives in.
func (c *Cloud) SubnetCIDR() netip.Prefix { return c.opts.SubnetCIDR }

// SetFaults replaces the injected faults.
func (c *Cloud) SetFaults(f Faults) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults = f
}

// Calls returns how many EC2 calls each action received, throttled and
// failed ones included.
func (c *Cloud) Calls() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.calls))
	for action, n := range c.calls {
		out[action] = n
	}
	return out
}

// Call is one EC2 call as the server received it.
type Call struct {
	Action string
	// Params are the call's query parameters, Action and Version left
	// out (PrivateIpAddress.1, Ipv4PrefixCount, ...).
	Params url.Values
}

// CallLog returns every EC2 call since Start or ResetCalls, in order.
func (c *Cloud) CallLog() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

// TotalCalls is the sum of Calls.
func (c *Cloud) TotalCalls() int { return int(c.total.Load()) }

// Throttled is how many calls were answered with RequestLimitExceeded.
func (c *Cloud) Throttled() int { return int(c.throttle.Load()) }

// InFlight is how many EC2 calls are being answered right now.
func (c *Cloud) InFlight() int { return int(c.inFlight.Load()) }

// ResetCalls zeroes the call counters (Throttled included).
func (c *Cloud) ResetCalls() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = map[string]int{}
	c.log = nil
	c.total.Store(0)
	c.throttle.Store(0)
}

// ENI is a snapshot of one network interface.
type ENI struct {
	ID             string
	MAC            string
	SubnetID       string
	SecurityGroups []string
	Status         string // "available" or "in-use"
	PrimaryIP      netip.Addr
	SecondaryIPs   []netip.Addr
	// IPv4Prefixes are delegated /28s (each takes one address slot of
	// the ENI); IPv6Prefixes delegated /80s.
	IPv4Prefixes []netip.Prefix
	IPv6Prefixes []netip.Prefix
	Tags         map[string]string
	// Attachment fields are zero when Status is "available".
	AttachmentID        string
	InstanceID          string
	DeviceIndex         int
	DeleteOnTermination bool
}

// ENIs returns every network interface, sorted by ID.
func (c *Cloud) ENIs() []ENI {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ENI, 0, len(c.enis))
	for _, eni := range c.enis {
		out = append(out, eni.snapshot())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// LookupENI returns one network interface.
func (c *Cloud) LookupENI(id string) (ENI, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	eni, ok := c.enis[id]
	if !ok {
		return ENI{}, false
	}
	return eni.snapshot(), true
}
