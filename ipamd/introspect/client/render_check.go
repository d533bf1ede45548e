package client

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// RenderCheck prints first what could not be compared (a check that
// could not look must say so before anything that reads like a pass),
// then each disagreement in words, then what was compared.
func RenderCheck(w io.Writer, c schema.Check) error {
	for _, nc := range c.NotCompared {
		if _, err := fmt.Fprintf(w, "NOT COMPARED: %s: %s\n", sourceWords(nc.Source), nc.Reason); err != nil {
			return err
		}
	}
	for _, d := range c.Disagreements {
		if _, err := fmt.Fprintf(w, "%-20s %s\n", d.Kind, d.Words); err != nil {
			return err
		}
	}
	verdict := "ipamd, the runtime and the kernel agree"
	switch n := len(c.Disagreements); {
	case n > 0:
		verdict = fmt.Sprintf("%d disagreement(s)", n)
	case len(c.NotCompared) > 0:
		verdict = "INCOMPLETE, no disagreement in what was compared"
	}
	fmt.Fprintf(w, "%s: %d assignment(s), %d sandbox(es), %d pod link(s) compared", verdict, c.Assignments, c.Sandboxes, c.PodLinks)
	if c.Settling > 0 {
		fmt.Fprintf(w, "; %d too young to judge", c.Settling)
	}
	fmt.Fprintln(w)
	if c.Raced {
		fmt.Fprintf(w, "RACED: changes kept landing during all %d attempts\n", c.Attempts)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

// RenderReadiness prints /readyz's answer as ipamd words it: "ready", or
// "not ready:" and a "- reason" line per unmet condition.
func RenderReadiness(w io.Writer, r Readiness) error {
	if r.Ready {
		_, err := fmt.Fprintln(w, "ready")
		return err
	}
	if _, err := fmt.Fprintln(w, "not ready:"); err != nil {
		return err
	}
	for _, reason := range r.Reasons {
		if _, err := fmt.Fprintf(w, "- %s\n", reason); err != nil {
			return err
		}
	}
	return nil
}

// sourceWords names a NotCompared source for a person.
func sourceWords(source string) string {
	switch source {
	case schema.SourceRuntime:
		return "the runtime's sandboxes"
	case schema.SourceKernel:
		return "the kernel's pod links and routes"
	}
	return source
}

// RenderWho prints the holders with their runtime state, then the history.
func RenderWho(w io.Writer, v schema.Who) error {
	tw := table(w)
	if len(v.Holders) == 0 {
		fmt.Fprintf(tw, "ipamd holds no address for %s %q\n", v.QueryKind, v.Query)
	} else {
		fmt.Fprintln(tw, "IP\tSANDBOX ID\tPOD\tSINCE\tRUNTIME")
		for _, h := range v.Holders {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s (%s ago)\t%s\n", h.Pod.IP, h.Pod.SandboxID, orDash(podName(h.Pod)),
				h.Pod.AssignedAt.UTC().Format(time.RFC3339), h.Pod.AgeFormatted, runtimeWords(h.Runtime, v.RuntimeError))
		}
	}
	ids := make([]string, 0, len(v.Sandboxes))
	for id := range v.Sandboxes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		sb := v.Sandboxes[id]
		fmt.Fprintf(tw, "the runtime lists sandbox %s (%s, IPs %s), which holds no address in ipamd\n", id, sb.State, orDash(strings.Join(sb.IPs, ", ")))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "WHEN\tEVENT\tWHY\tIP\tSANDBOX ID\tPOD")
	for _, e := range v.History {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.At.UTC().Format(time.RFC3339), e.Kind, orDash(e.Reason), e.IP, e.SandboxID, orDash(e.Pod))
	}
	if len(v.History) == 0 {
		fmt.Fprintln(tw, "(no event in ipamd's history since it started)")
	}
	if v.HistoryDropped > 0 {
		fmt.Fprintf(tw, "(the history keeps the last events only: %d older ones are gone; the log has one line per release)\n", v.HistoryDropped)
	}
	return tw.Flush()
}

func runtimeWords(r *schema.RuntimeSandbox, runtimeErr string) string {
	switch {
	case r == nil && runtimeErr != "":
		return "unknown: " + runtimeErr
	case r == nil:
		return "unknown"
	case !r.Listed:
		return "NOT LISTED by the runtime"
	default:
		return r.State
	}
}
