package cni

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/sandboxipam/sandboxipam/ipamd/api/apierr"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire/msg"
)

// Plugin-specific CNI error codes (the spec reserves 100 and up). The
// ones ipamd's answers map to are apierr's, whose one table says which
// store error each comes from.
const (
	// ErrIPAMDRejected: ipamd refused the request for a reason of its own.
	ErrIPAMDRejected = apierr.CNIRejected
	// ErrPoolExhausted: ipamd has no free address.
	ErrPoolExhausted = apierr.CNIPoolExhausted
	// ErrAddressNotHeld: CHECK found that ipamd holds no address, or a
	// different one, for the attachment.
	ErrAddressNotHeld = apierr.CNINotHeld
	// ErrNetworkSetup: the veth, address or routes could not be set up.
	ErrNetworkSetup uint = 110
	// ErrCheckFailed: CHECK found the pod's network unlike prevResult.
	ErrCheckFailed uint = 111
)

// request is a message the plugin sends; response one it decodes (package
// msg: the plugin links no protobuf runtime).
type (
	request  interface{ Marshal([]byte) []byte }
	response interface{ Unmarshal([]byte) error }
)

// ipamdCall makes one call over a fresh connection. An unreachable ipamd
// is unreachableCode (11 for ADD/DEL/CHECK/GC, so the runtime retries; 50
// for STATUS); ipamd's own answers are mapped by apierr's table.
func ipamdCall(ctx context.Context, conf *NetConf, m wire.Method, req request, resp response, unreachableCode uint) error {
	conn, err := wire.Dial(ctx, conf.IPAMDSocket)
	if err != nil {
		return types.NewError(unreachableCode, "ipamd is unreachable", err.Error())
	}
	defer conn.Close()
	body, err := conn.Exchange(ctx, m, req.Marshal(nil))
	if err != nil {
		return ipamdError(m, err, unreachableCode)
	}
	if err := resp.Unmarshal(body); err != nil {
		// Unreadable is unanswered: ipamd may have acted on it.
		return ipamdError(m, fmt.Errorf("decode %s response from ipamd: %w", m, err), unreachableCode)
	}
	return nil
}

// unansweredError is a call whose request may have reached ipamd while
// no answer came back: ipamd may have acted on it.
type unansweredError struct {
	cniErr *types.Error
}

func (e *unansweredError) Error() string { return e.cniErr.Error() }
func (e *unansweredError) Unwrap() error { return e.cniErr }

func ipamdError(m wire.Method, err error, unreachableCode uint) error {
	var werr *wire.Error
	if !errors.As(err, &werr) {
		return &unansweredError{cniErr: types.NewError(unreachableCode, fmt.Sprintf("ipamd did not answer %s", m), err.Error())}
	}
	code, msg := apierr.CNI(m, werr.Code)
	return types.NewError(code, msg, werr.Message)
}

func attachment(conf *NetConf, args *Args) *msg.Attachment {
	return &msg.Attachment{Network: conf.Name, SandboxID: args.SandboxID, IfName: args.IfName}
}

// podAddress is one address ipamd assigned.
type podAddress struct {
	Prefix  netip.Prefix // the address with its subnet's length
	Gateway netip.Addr   // invalid when ipamd gave none
}

func parseIPConfigs(ips []msg.IPConfig) ([]podAddress, error) {
	out := make([]podAddress, 0, len(ips))
	for _, ip := range ips {
		prefix, err := netip.ParsePrefix(ip.Address)
		if err != nil {
			return nil, fmt.Errorf("ipamd answered a bad address %q: %w", ip.Address, err)
		}
		a := podAddress{Prefix: prefix}
		if gw := ip.Gateway; gw != "" {
			if a.Gateway, err = netip.ParseAddr(gw); err != nil {
				return nil, fmt.Errorf("ipamd answered a bad gateway %q: %w", gw, err)
			}
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, errors.New("ipamd answered no address")
	}
	return out, nil
}

// ipamdAdd asks ipamd for the attachment's addresses.
func ipamdAdd(ctx context.Context, conf *NetConf, args *Args) ([]podAddress, error) {
	req := msg.AddRequest{
		Attachment: attachment(conf, args),
		Netns:      args.Netns,
		Pod:        &msg.PodRef{Name: args.Pod.Name, Namespace: args.Pod.Namespace, UID: args.Pod.UID},
		// ipamd records it with the assignment: only a pod the plugin wires
		// itself has a pod link whose absence proves anything.
		Wiring: msg.WiringMainPlugin,
	}
	if conf.IPAMMode {
		req.Wiring = msg.WiringIPAMOnly
	}
	resp := &msg.AddResponse{}
	if err := ipamdCall(ctx, conf, wire.MethodAdd, req, resp, types.ErrTryAgainLater); err != nil {
		return nil, err
	}
	addrs, err := parseIPConfigs(resp.IPs)
	if err != nil {
		return nil, types.NewError(ErrIPAMDRejected, "ipamd's answer to Add is unusable", err.Error())
	}
	return addrs, nil
}

// ipamdDel releases the attachment's addresses; an unknown attachment is
// success on ipamd's side.
func ipamdDel(ctx context.Context, conf *NetConf, args *Args) error {
	req := msg.DelRequest{Attachment: attachment(conf, args)}
	return ipamdCall(ctx, conf, wire.MethodDel, req, &msg.DelResponse{}, types.ErrTryAgainLater)
}

// ipamdCheck returns the addresses ipamd holds for the attachment.
func ipamdCheck(ctx context.Context, conf *NetConf, args *Args) ([]podAddress, error) {
	req := msg.CheckRequest{Attachment: attachment(conf, args)}
	resp := &msg.CheckResponse{}
	if err := ipamdCall(ctx, conf, wire.MethodCheck, req, resp, types.ErrTryAgainLater); err != nil {
		return nil, err
	}
	addrs, err := parseIPConfigs(resp.IPs)
	if err != nil {
		return nil, types.NewError(ErrAddressNotHeld, "ipamd's answer to Check is unusable", err.Error())
	}
	return addrs, nil
}

// ipamdGC releases every attachment of the network not in valid.
func ipamdGC(ctx context.Context, conf *NetConf, valid []types.GCAttachment) error {
	req := msg.GCRequest{Network: conf.Name, Valid: make([]msg.Attachment, 0, len(valid))}
	for _, v := range valid {
		req.Valid = append(req.Valid, msg.Attachment{Network: conf.Name, SandboxID: v.ContainerID, IfName: v.IfName})
	}
	return ipamdCall(ctx, conf, wire.MethodGC, req, &msg.GCResponse{}, types.ErrTryAgainLater)
}

// ipamdStatus reports whether ipamd can hand out addresses.
func ipamdStatus(ctx context.Context, conf *NetConf) error {
	resp := &msg.StatusResponse{}
	if err := ipamdCall(ctx, conf, wire.MethodStatus, msg.StatusRequest{}, resp, types.ErrPluginNotAvailable); err != nil {
		var cniErr *types.Error
		if errors.As(err, &cniErr) {
			cniErr.Code = types.ErrPluginNotAvailable
		}
		return err
	}
	if !resp.Ready {
		return types.NewError(types.ErrPluginNotAvailable, "ipamd is not ready", resp.Message)
	}
	return nil
}
