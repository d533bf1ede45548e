// Command familyipam is a CNI IPAM plugin for the conformance suite's own
// tests: it gives each pod the address families its sandbox asks for
// through fixture.AnnotationIPFamilies (dual-stack, IPv4-only or
// IPv6-only) out of one CNI config, so that one containerd runs all three
// kinds of pod side by side, as a dual-stack cluster does.
//
// Its ipam section is host-local's, with one range set per family; the
// main plugin (bridge) must declare the "io.kubernetes.cri.pod-annotations"
// capability, so that containerd puts the pod's annotations in its
// runtimeConfig, and passes its whole config on to this plugin. On ADD and
// CHECK it keeps the range sets of the asked families and runs host-local
// with them; a pod that asks for none gets every range. DEL runs host-local
// with every range, which releases the container's addresses in all.
//
// containerd 1.6 chooses one CNI config for every pod (max_conf_num 1)
// and has no per-pod network; hence a plugin. Built only by the suite's
// tests, never shipped.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
)

// Names containerd and host-local use.
const (
	podAnnotationsCapability = "io.kubernetes.cri.pod-annotations"
	hostLocal                = "host-local"
)

func main() {
	skel.PluginMainFuncs(skel.CNIFuncs{Add: cmdAdd, Check: cmdCheck, Del: cmdDel},
		version.All, "familyipam: host-local with one range set per address family a pod asks for")
}

func cmdAdd(args *skel.CmdArgs) error {
	conf, err := hostLocalConf(args.StdinData, true)
	if err != nil {
		return err
	}
	result, err := invoke.DelegateAdd(context.Background(), hostLocal, conf, nil)
	if err != nil {
		return fmt.Errorf("host-local: %w", err)
	}
	return result.Print()
}

func cmdCheck(args *skel.CmdArgs) error {
	conf, err := hostLocalConf(args.StdinData, true)
	if err != nil {
		return err
	}
	return invoke.DelegateCheck(context.Background(), hostLocal, conf, nil)
}

func cmdDel(args *skel.CmdArgs) error {
	conf, err := hostLocalConf(args.StdinData, false)
	if err != nil {
		return err
	}
	return invoke.DelegateDel(context.Background(), hostLocal, conf, nil)
}

// hostLocalConf rewrites the network config for host-local: its ipam type,
// and (with filter) only the range sets of the families the pod asks for.
func hostLocalConf(stdin []byte, filter bool) ([]byte, error) {
	var conf map[string]any
	if err := json.Unmarshal(stdin, &conf); err != nil {
		return nil, fmt.Errorf("familyipam: network config: %w", err)
	}
	ipam, ok := conf["ipam"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("familyipam: network config has no ipam section")
	}
	ipam["type"] = hostLocal
	families := askedFamilies(conf)
	if filter && len(families) > 0 {
		kept, err := rangesOf(ipam["ranges"], families)
		if err != nil {
			return nil, err
		}
		ipam["ranges"] = kept
	}
	out, err := json.Marshal(conf)
	if err != nil {
		return nil, fmt.Errorf("familyipam: %w", err)
	}
	return out, nil
}

// askedFamilies reads the pod's families from the annotations containerd
// put in runtimeConfig; none when it asked for none.
func askedFamilies(conf map[string]any) []fixture.IPFamily {
	runtimeConfig, _ := conf["runtimeConfig"].(map[string]any)
	annotations, _ := runtimeConfig[podAnnotationsCapability].(map[string]any)
	value, _ := annotations[fixture.AnnotationIPFamilies].(string)
	var families []fixture.IPFamily
	for _, part := range strings.Split(value, ",") {
		if part = strings.TrimSpace(part); part != "" {
			families = append(families, fixture.IPFamily(part))
		}
	}
	return families
}

// rangesOf keeps the range sets whose first subnet is of one of families.
func rangesOf(raw any, families []fixture.IPFamily) ([]any, error) {
	sets, _ := raw.([]any)
	var kept []any
	for _, set := range sets {
		ranges, _ := set.([]any)
		if len(ranges) == 0 {
			continue
		}
		first, _ := ranges[0].(map[string]any)
		subnet, _ := first["subnet"].(string)
		prefix, err := netip.ParsePrefix(subnet)
		if err != nil {
			return nil, fmt.Errorf("familyipam: range subnet %q: %w", subnet, err)
		}
		if slices.Contains(families, fixture.FamilyOf(prefix.Addr())) {
			kept = append(kept, set)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("familyipam: no range of the families %v the pod asks for", families)
	}
	return kept, nil
}
