package cni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

// SupportedVersions are the CNI spec versions the plugin speaks. CHECK
// needs 0.4.0; STATUS and GC need 1.1.0.
var SupportedVersions = version.PluginSupports("0.4.0", "1.0.0", "1.1.0")

// plugin holds the verbs; ctx bounds every call together with the
// config's timeout.
type plugin struct {
	ctx context.Context
}

func (p *plugin) withTimeout(conf *NetConf) (context.Context, context.CancelFunc) {
	return context.WithTimeout(p.ctx, time.Duration(conf.Timeout))
}

func load(cmd *CmdArgs) (*NetConf, *Args, error) {
	conf, err := ParseConfig(cmd.StdinData)
	if err != nil {
		return nil, nil, err
	}
	args, err := ParseArgs(cmd.ContainerID, cmd.IfName, cmd.Netns, cmd.Args)
	if err != nil {
		return nil, nil, err
	}
	return conf, args, nil
}

func (p *plugin) add(cmd *CmdArgs) error {
	conf, args, err := load(cmd)
	if err != nil {
		return err
	}
	if err := args.ValidateForAdd(); err != nil {
		return err
	}
	ctx, cancel := p.withTimeout(conf)
	defer cancel()
	if conf.IPAMMode {
		addrs, err := ipamdAdd(ctx, conf, args)
		if err != nil {
			return p.releaseIfUnanswered(conf, args, err)
		}
		return p.printOrRelease(cmd, conf, args, ipamResult(conf, addrs))
	}
	// The pod's namespace is opened first: a missing one is a bad
	// argument, rejected before anything is assigned.
	h, err := openHandles(args.Netns)
	if err != nil {
		return err
	}
	defer h.Close()
	addrs, err := ipamdAdd(ctx, conf, args)
	if err != nil {
		return p.releaseIfUnanswered(conf, args, err)
	}
	links, err := setUpPod(h, conf, args, addrs)
	if err != nil {
		return p.release(conf, args, err)
	}
	res := podResult(args, links, addrs)
	if conf.mapsPorts() {
		if err := p.mapPorts(cmd, conf, res); err != nil {
			return p.release(conf, args, alsoFailed(err, "removing the pod's veth", tearDownPod(conf, args)))
		}
	}
	return p.printOrRelease(cmd, conf, args, res)
}

// mapPorts runs portmap's ADD for the pod's hostPorts with res as its
// prevResult. A failed ADD may have left some of its rules: its DEL,
// idempotent, removes them before the caller undoes the rest.
func (p *plugin) mapPorts(cmd *CmdArgs, conf *NetConf, res types.Result) error {
	prev, err := encodeResult(res, conf.CNIVersion)
	if err != nil {
		return err
	}
	path, err := portMapPath(cmd)
	if err != nil {
		return err
	}
	if err := runPortMap(p.ctx, cmd, conf, path, "ADD", prev); err != nil {
		return alsoFailed(err, "portmap's DEL", runPortMap(context.WithoutCancel(p.ctx), cmd, conf, path, "DEL", prev))
	}
	return nil
}

// encodeResult is res in the config's version, as the runtime would pass
// it to the next plugin of a chain.
func encodeResult(res types.Result, cniVersion string) ([]byte, error) {
	versioned, err := res.GetAsVersion(cniVersion)
	if err != nil {
		return nil, types.NewError(types.ErrIncompatibleCNIVersion, "convert the result", err.Error())
	}
	b, err := json.Marshal(versioned)
	if err != nil {
		return nil, types.NewError(types.ErrInternal, "encode the result", err.Error())
	}
	return b, nil
}

// printOrRelease prints the result, or undoes the whole ADD (portmap's
// rules, the veth, the address) when it cannot.
func (p *plugin) printOrRelease(cmd *CmdArgs, conf *NetConf, args *Args, res types.Result) error {
	if err := types.PrintResult(res, conf.CNIVersion); err != nil {
		if conf.mapsPorts() {
			err = errors.Join(err, runPortMap(context.WithoutCancel(p.ctx), cmd, conf, "", "DEL", nil))
		}
		if !conf.IPAMMode {
			err = errors.Join(err, tearDownPod(conf, args))
		}
		return p.release(conf, args, fmt.Errorf("print result: %w", err))
	}
	return nil
}

// releaseIfUnanswered releases after an Add whose answer was lost (a
// timeout, a dropped connection): ipamd may hold an address for it. An
// Add that ipamd refused, or never received, assigned nothing.
func (p *plugin) releaseIfUnanswered(conf *NetConf, args *Args, err error) error {
	var unanswered *unansweredError
	if errors.As(err, &unanswered) {
		return p.release(conf, args, err)
	}
	return err
}

// release undoes ipamd's assignment after a failed ADD. It gets its own
// deadline: the ADD's may be what ran out.
func (p *plugin) release(conf *NetConf, args *Args, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), time.Duration(conf.Timeout))
	defer cancel()
	return alsoFailed(cause, "releasing the address", ipamdDel(ctx, conf, args))
}

// alsoFailed adds to cause what failed while undoing the call it failed;
// nil err leaves cause as it is. A CNI error keeps its code and message
// and gains the failure in its details: the plugin prints only the CNI
// error object, so a joined error would lose it.
func alsoFailed(cause error, undoing string, err error) error {
	if err == nil {
		return cause
	}
	var cniErr *types.Error
	if errors.As(cause, &cniErr) {
		cniErr.Details = fmt.Sprintf("%s; %s failed too: %v", cniErr.Details, undoing, err)
		return cniErr
	}
	return fmt.Errorf("%w; %s failed too: %v", cause, undoing, err)
}

func (p *plugin) del(cmd *CmdArgs) error {
	conf, args, err := load(cmd)
	if err != nil {
		return err
	}
	if conf.mapsPorts() {
		// portmap goes first, as the last plugin of a chain would: its
		// rules point at the address about to be released.
		prev, err := rawPrevResult(conf)
		if err != nil {
			return err
		}
		if err := runPortMap(p.ctx, cmd, conf, "", "DEL", prev); err != nil {
			return err
		}
	}
	if !conf.IPAMMode {
		// The veth goes first: an address released while its route still
		// points at the old pod could reach a new pod's route set-up.
		if err := tearDownPod(conf, args); err != nil {
			return types.NewError(ErrNetworkSetup, "remove the pod's veth", err.Error())
		}
	}
	ctx, cancel := p.withTimeout(conf)
	defer cancel()
	return ipamdDel(ctx, conf, args)
}

func (p *plugin) check(cmd *CmdArgs) error {
	conf, args, err := load(cmd)
	if err != nil {
		return err
	}
	if err := version.ParsePrevResult(&conf.PluginConf); err != nil {
		return types.NewError(types.ErrDecodingFailure, "parse prevResult", err.Error())
	}
	want, err := prevAddresses(conf, args)
	if err != nil {
		return err
	}
	if !conf.IPAMMode {
		if err := checkPod(conf, args, want); err != nil {
			return err
		}
	}
	ctx, cancel := p.withTimeout(conf)
	defer cancel()
	held, err := ipamdCheck(ctx, conf, args)
	if err != nil {
		return err
	}
	if err := checkHeld(args, want, held); err != nil {
		return err
	}
	if !conf.mapsPorts() {
		return nil
	}
	prev, err := rawPrevResult(conf)
	if err != nil {
		return err
	}
	return runPortMap(p.ctx, cmd, conf, "", "CHECK", prev)
}

// rawPrevResult is the prevResult the runtime passed, as JSON (nil: none),
// parsed (CHECK's) or not.
func rawPrevResult(conf *NetConf) ([]byte, error) {
	if conf.PrevResult != nil {
		return encodeResult(conf.PrevResult, conf.CNIVersion)
	}
	if conf.RawPrevResult == nil {
		return nil, nil
	}
	b, err := json.Marshal(conf.RawPrevResult)
	if err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "encode prevResult for portmap", err.Error())
	}
	return b, nil
}

func (p *plugin) gc(cmd *CmdArgs) error {
	conf, err := ParseConfig(cmd.StdinData)
	if err != nil {
		return err
	}
	ctx, cancel := p.withTimeout(conf)
	defer cancel()
	return ipamdGC(ctx, conf, conf.ValidAttachments)
}

func (p *plugin) status(cmd *CmdArgs) error {
	conf, err := ParseConfig(cmd.StdinData)
	if err != nil {
		return err
	}
	ctx, cancel := p.withTimeout(conf)
	defer cancel()
	return ipamdStatus(ctx, conf)
}
