package kubectltandem

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
)

// maxEvents is how many of the newest events explain prints.
const maxEvents = 20

// printExplanation writes e as kubectl describe writes a pod: fields, then
// the events, the nodes and the verdict.
func printExplanation(out io.Writer, e *Explanation, now time.Time) error {
	w := printers.GetNewTabWriter(out)
	field := func(name, format string, args ...any) {
		fmt.Fprintf(w, "%s:\t%s\n", name, fmt.Sprintf(format, args...))
	}
	age := func(t time.Time) string {
		if t.IsZero() {
			return "<unknown>"
		}
		return duration.HumanDuration(now.Sub(t))
	}
	field("Pod", "%s/%s", e.Namespace, e.Name)
	field("Kind", "%s (%s)", e.Kind, e.KindWhy)
	if e.Runner != "" {
		field("Runner", "%s/%s", e.Namespace, e.Runner)
	}
	field("Scheduler", "%s", e.SchedulerName)
	if e.Node != "" {
		field("Status", "%s, bound to node %s", e.Phase, e.Node)
	} else {
		field("Status", "%s, not bound", e.Phase)
	}
	switch c := e.Scheduled; {
	case c != nil:
		field("PodScheduled", "%s, since %s", strings.Join(nonEmpty(string(c.Status), c.Reason), " "), age(c.Since))
		if c.Message != "" {
			field("  Message", "%s", c.Message)
		}
	case e.Node != "":
		field("PodScheduled", "<none>: placed with nodeName, bypassing the schedulers")
	default:
		field("PodScheduled", "<none>: no scheduler has tried this pod yet")
	}
	field("Requests", "%s", format(e.Requests))
	if sz := e.Size; sz != nil {
		if len(sz.Annotations) > 0 {
			var as []string
			for _, a := range slices.Sorted(maps.Keys(sz.Annotations)) {
				as = append(as, a+"="+sz.Annotations[a])
			}
			field("Sizing", "%s", strings.Join(as, " "))
		}
		if sz.Workflow != nil {
			field("Workflow pod", "%s (from %s)", format(sz.Workflow), sz.From)
		} else {
			field("Workflow pod", "size unknown: %s", sz.From)
		}
		if sz.Step != nil {
			field("Step headroom", "%s", format(sz.Step))
		}
		for _, p := range sz.Problems {
			field("  Problem", "%s", p)
		}
	}
	if e.Node == "" {
		field("Needs", "%s on one node", format(e.Need))
	}
	if r := e.Reservation; r != nil {
		what := "Reservation"
		if e.Kind != KindRunner {
			what = "Runner's reservation"
		}
		if r.Phase == PhaseInvalid {
			field(what, "invalid, holds nothing: %s", r.Invalid)
		} else {
			field(what, "%s on node %s, size %s (from %s), holds %s now; workflow pod %s", r.Phase, r.Node, format(r.Requests), r.Source, format(r.Holds), orNone(r.WorkflowPod))
		}
	} else if e.Kind != KindOther {
		field("Reservation", "<none>")
	}
	if err := w.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(out, "Events:")
	if len(e.Events) == 0 {
		fmt.Fprintln(out, "  <none>")
	} else {
		events := e.Events
		if len(events) > maxEvents {
			fmt.Fprintf(out, "  (%d older events not shown)\n", len(events)-maxEvents)
			events = events[len(events)-maxEvents:]
		}
		w = printers.GetNewTabWriter(out)
		fmt.Fprintln(w, "  TYPE\tREASON\tAGE\tFROM\tMESSAGE")
		meanings := map[string]string{}
		for _, ev := range events {
			seen := age(ev.Last)
			if ev.Count > 1 {
				seen = fmt.Sprintf("%s (x%d)", seen, ev.Count)
			}
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", ev.Type, ev.Reason, seen, orNone(ev.From), strings.TrimSpace(ev.Note))
			if ev.Meaning != "" {
				meanings[ev.Reason] = ev.Meaning
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
		for _, reason := range slices.Sorted(maps.Keys(meanings)) {
			fmt.Fprintf(out, "  %s: %s\n", reason, meanings[reason])
		}
	}

	if e.Node != "" {
		fmt.Fprintf(out, "Its node:\n")
	} else {
		fmt.Fprintf(out, "Nodes it may go to (%d of %d):\n", len(e.Nodes), len(e.Nodes)+len(e.Excluded))
	}
	if len(e.Nodes) == 0 {
		fmt.Fprintln(out, "  <none>")
	} else {
		w = printers.GetNewTabWriter(out)
		fmt.Fprintln(w, "  NODE\tFREE\tALLOCATABLE\tREQUESTED\tRESERVED\tHELD BY")
		shown := relevant(e.Need)
		for _, u := range e.Nodes {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t%s\n", u.Name, only(u.Free, shown), only(u.Allocatable, shown),
				only(u.Requested, shown), only(u.Reserved, shown), holders(u.Holders))
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if len(e.Excluded) > 0 {
		fmt.Fprintln(out, "Nodes it may not go to:")
		w = printers.GetNewTabWriter(out)
		for _, x := range e.Excluded {
			fmt.Fprintf(w, "  %s\t%s\n", x.Node, x.Why)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	for _, n := range e.Notes {
		fmt.Fprintf(out, "Note: %s\n", n)
	}
	_, err := fmt.Fprintf(out, "Verdict: %s\n", e.Verdict)
	return err
}

// relevant are the resources a node's room is shown in: cpu, memory and
// whatever the pod needs.
func relevant(need v1.ResourceList) []v1.ResourceName {
	out := []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}
	for _, n := range names(need) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func holders(hs []Holder) string {
	if len(hs) == 0 {
		return "<none>"
	}
	parts := make([]string, 0, len(hs))
	for _, h := range hs {
		parts = append(parts, fmt.Sprintf("%s %s (%s)", h.Runner, formatWithoutPods(h.Holds), h.Phase))
	}
	return strings.Join(parts, ", ")
}
