package client

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 2, 8, 2, ' ', 0) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// RenderPods prints one line per assignment, keyed as DEL matches.
func RenderPods(w io.Writer, p schema.Pods) error {
	tw := table(w)
	fmt.Fprintln(tw, "SANDBOX ID\tNETWORK\tIFNAME\tPOD\tUID\tIP\tAGE")
	for _, pod := range p.Pods {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", pod.SandboxID, pod.Network, pod.IfName,
			orDash(podName(pod)), orDash(pod.UID), orDash(podAddresses(pod)), pod.AgeFormatted)
	}
	fmt.Fprintf(tw, "%d assignment(s)\n", len(p.Pods))
	return tw.Flush()
}

// podAddresses is every address of the attachment (both of a dual-stack
// pod), in CIDR notation where ipamd knows the subnet.
func podAddresses(p schema.Pod) string {
	if len(p.Prefixes) > 0 {
		return strings.Join(p.Prefixes, ",")
	}
	if p.Prefix != "" {
		return p.Prefix
	}
	return p.IP
}

func podName(p schema.Pod) string {
	if p.Name == "" {
		return ""
	}
	return p.Namespace + "/" + p.Name
}

// RenderPool prints the totals and one line per group.
func RenderPool(w io.Writer, p schema.Pool) error {
	tw := table(w)
	fmt.Fprintf(tw, "source:\t%s\n", p.Source)
	fmt.Fprintf(tw, "checkpoint:\t%s %s\n", p.Recovery.Checkpoint, p.Recovery.Detail)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "GROUP\tTOTAL\tASSIGNED\tCOOLING\tFREE")
	for _, g := range p.Groups {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", g.Group, intCount(g.Total), g.Assigned, g.Cooling, intCount(g.Free))
	}
	fmt.Fprintf(tw, "all\t%s\t%d\t%d\t%s\n", intCount(p.Total), p.Assigned, p.Cooling, intCount(p.Free))
	if len(p.Families) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "FAMILY\tTOTAL\tASSIGNED\tCOOLING\tQUARANTINED\tFREE")
		for _, f := range p.Families {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", f.Family, count(f.Total), f.Assigned, f.Cooling, f.Quarantined, count(f.Free))
		}
	}
	if len(p.Ranges) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "RANGE\tFAMILY\tGROUP\tFIRST\tLAST\tSIZE\tASSIGNED\tCOOLING\tFREE")
		for _, r := range p.Ranges {
			free := count(r.Free)
			if r.Retiring {
				free = "retiring"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.Prefix, r.Family, r.Group, r.First, r.Last,
				count(r.Size), r.Assigned, r.Cooling, free)
		}
		for _, r := range p.Ranges {
			if r.Retiring {
				fmt.Fprintf(tw, "\nRETIRING %s: no longer this node's range; nothing is handed out of it, and it leaves once its %d held address(es) are released\n", r.Prefix, r.Assigned)
			}
		}
	}
	if p.Waiting != "" {
		fmt.Fprintf(tw, "\nWAITING: the pool has no range yet; no address is handed out until %s\n", p.Waiting)
	}
	if p.Proof.Unproven {
		fmt.Fprintf(tw, "\nUNPROVEN: no address is handed out (%d quarantined) until the runtime and the node account for every pod's address; waiting for:\n", p.Unproven)
		for _, w := range p.Proof.Waiting {
			fmt.Fprintf(tw, "  - %s\n", w)
		}
	} else if p.Unproven > 0 {
		fmt.Fprintf(tw, "\n%d address(es) are quarantined: a pod holds them while ipamd records them free or under another sandbox\n", p.Unproven)
	}
	return tw.Flush()
}

// count prints an address count; 2^64-1 is where counts saturate (an
// IPv6 /64 holds 2^64 addresses).
func count(n uint64) string {
	if n == math.MaxUint64 {
		return ">=2^64-1"
	}
	return strconv.FormatUint(n, 10)
}

// intCount prints a count that saturates at MaxInt.
func intCount(n int) string {
	if n == math.MaxInt {
		return ">=2^63-1"
	}
	return strconv.Itoa(n)
}

// RenderAdapter prints the adapter, its health and the last pass.
func RenderAdapter(w io.Writer, a schema.Adapter) error {
	tw := table(w)
	fmt.Fprintf(tw, "adapter:\t%s\n", orDash(a.Name))
	fmt.Fprintf(tw, "binary:\t%s %s\n", orDash(a.Binary), strings.Join(a.Args, " "))
	fmt.Fprintf(tw, "chosen because:\t%s\n", orDash(a.Reason))
	if a.Error != "" {
		fmt.Fprintf(tw, "selection error:\t%s\n", a.Error)
	}
	fmt.Fprintf(tw, "runtime:\t%s %s at %s\n", orDash(a.Runtime.RuntimeName), a.Runtime.RuntimeVersion, orDash(a.Runtime.Endpoint))
	fmt.Fprintf(tw, "health:\t%s (pid %d, %d restart(s), since %s)\n", a.Health.State, a.Health.PID, a.Health.Restarts,
		a.Health.LastChange.Format(time.RFC3339))
	if a.Health.LastError != "" {
		fmt.Fprintf(tw, "last error:\t%s\n", a.Health.LastError)
	}
	fmt.Fprintf(tw, "reconcile:\tevery %s, grace %s\n", a.Interval, a.Grace)
	if a.SeesCNI != "" {
		fmt.Fprintf(tw, "sees CNI:\tyes, it listed sandbox %s, which CNI added\n", a.SeesCNI)
	} else {
		fmt.Fprintf(tw, "sees CNI:\tnot shown yet (no listing has shown a sandbox CNI added; until one does, a sandbox CNI added that no listing shows holds back every release)\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if a.Last == nil {
		_, err := fmt.Fprintln(w, "\nno reconcile pass yet")
		return err
	}
	fmt.Fprintln(w, "\nlast reconcile pass:")
	return RenderReconcile(w, *a.Last)
}

// RenderReconcile prints a pass and what it released (or would).
func RenderReconcile(w io.Writer, r schema.Reconcile) error {
	verb := "released"
	if r.DryRun {
		verb = "would release"
	}
	fmt.Fprintf(w, "at %s: listed %d sandbox(es), adopted %d, %s %d\n", r.At.Format(time.RFC3339), r.Listed, r.Adopted, verb, len(r.Released))
	if r.Error != "" {
		fmt.Fprintf(w, "FAILED, released nothing: %s\n", r.Error)
	}
	if len(r.Missing) > 0 {
		fmt.Fprintf(w, "ADAPTER IS BLIND: it does not list %d sandbox(es) CNI added; nothing is released until they are listed, or released by their DEL or `ipamctl release`:\n", len(r.Missing))
		for _, id := range r.Missing {
			fmt.Fprintf(w, "  %s\n", id)
		}
	}
	if r.Unproven {
		fmt.Fprintln(w, "the datastore is still unproven; unaccounted for:")
		for _, u := range r.Unaccounted {
			fmt.Fprintf(w, "  %s\n", u)
		}
	}
	if r.Conflicts > 0 {
		fmt.Fprintf(w, "%d address(es) newly quarantined (%d quarantined in all)\n", r.Conflicts, r.Quarantined)
	}
	if len(r.Released) == 0 {
		return nil
	}
	return RenderPods(w, schema.Pods{Pods: r.Released})
}

// RenderRoutes prints the routes to other nodes and the nodes skipped.
func RenderRoutes(w io.Writer, r schema.Routes) error {
	tw := table(w)
	fmt.Fprintf(tw, "node:\t%s\n", r.Node)
	fmt.Fprintf(tw, "protocol:\t%d\n", r.Protocol)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "NODE\tDST\tVIA\tDEV")
	for _, rt := range r.Routes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", rt.Node, rt.Dst, rt.Via, rt.Dev)
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "SKIPPED NODE\tDST\tREASON")
		for _, s := range r.Skipped {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Node, s.Dst, s.Reason)
		}
	}
	if r.Error != "" {
		fmt.Fprintf(tw, "\nERROR: %s\n", r.Error)
	}
	return tw.Flush()
}
