package cni

import (
	"context"
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
		return p.printOrRelease(conf, args, ipamResult(conf, addrs))
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
	return p.printOrRelease(conf, args, podResult(args, links, addrs))
}

func (p *plugin) printOrRelease(conf *NetConf, args *Args, res types.Result) error {
	if err := types.PrintResult(res, conf.CNIVersion); err != nil {
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
	if err := ipamdDel(ctx, conf, args); err != nil {
		var cniErr *types.Error
		if errors.As(cause, &cniErr) {
			cniErr.Details = fmt.Sprintf("%s; releasing the address failed too: %v", cniErr.Details, err)
			return cniErr
		}
		return fmt.Errorf("%w; releasing the address failed too: %v", cause, err)
	}
	return cause
}

func (p *plugin) del(cmd *CmdArgs) error {
	conf, args, err := load(cmd)
	if err != nil {
		return err
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
	return checkHeld(args, want, held)
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
