package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// PrintTable writes the runs side by side with the ideal bound.
func PrintTable(w io.Writer, r *Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// The last column only when there is a workaround run to compare with.
	versus := false
	for _, run := range r.Runs {
		versus = versus || run.JobsPerHourVsAntiAffinity > 0
	}
	header := "SCHEDULER\tJOBS\tSUCCEEDED\tFAILED\tBY REASON\tSTART p50/p95/max (s)\tCPU UTIL\tMAKESPAN (s)\tJOBS/H\tOF IDEAL\tINVARIANT\tRESERVATIONS LEFT\tWALL (s)"
	if versus {
		header += "\tVS ANTI-AFFINITY"
	}
	fmt.Fprintln(tw, header)
	for _, run := range r.Runs {
		invariant := "held"
		if run.InvariantViolations > 0 {
			invariant = fmt.Sprintf("VIOLATED x%d", run.InvariantViolations)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%.0f/%.0f/%.0f\t%.0f%%\t%.0f\t%.1f\t%.0f%%\t%s\t%d\t%.1f",
			run.Scheduler, run.Jobs.Submitted, run.Jobs.Succeeded, run.Jobs.Failed, reasons(run.Jobs.FailedByReason),
			run.StartLatency.P50, run.StartLatency.P95, run.StartLatency.Max, 100*run.MeanNodeCPUUtilization,
			run.MakespanSeconds, run.JobsPerHour, 100*run.JobsPerHourOfIdeal, invariant, run.ReservationsLeft, run.WallSeconds)
		if versus {
			fmt.Fprintf(tw, "\t%.2fx", run.JobsPerHourVsAntiAffinity)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "ideal packing bound\t%d\t\t\t\t\t\t%.0f\t%.1f\t100%%\t\t\t\n", r.jobs(), r.Ideal.MakespanSeconds, r.Ideal.JobsPerHour)
	_ = tw.Flush()
	fmt.Fprintln(w)
	PrintCauses(w, r)
	PrintAutoscale(w, r)
	PrintRealNodes(w, r)
}

// PrintRealNodes writes, for runs on real kubelets, the pods the kubelets
// rejected and the placeholders they ran. Nothing for emulated nodes.
func PrintRealNodes(w io.Writer, r *Report) {
	onReal := false
	for _, run := range r.Runs {
		onReal = onReal || run.RealNodes != nil
	}
	if !onReal {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCHEDULER\tPODS REJECTED BY THE KUBELETS\tBY REASON\tPLACEHOLDERS\tOF THEM RAN")
	for _, run := range r.Runs {
		if n := run.RealNodes; n != nil {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\n", run.Scheduler, n.Rejected(), reasons(n.PodsRejected), n.Placeholders, n.PlaceholdersRan)
		}
	}
	_ = tw.Flush()
}

// PrintAutoscale writes, for runs with an autoscaler, what the autoscaling
// cost and gave: failures, start latency, nodes launched (by instance cpu),
// node-seconds and jobs per hour side by side. Nothing without autoscaling.
func PrintAutoscale(w io.Writer, r *Report) {
	autoscaled := false
	for _, run := range r.Runs {
		autoscaled = autoscaled || run.Autoscale != nil
	}
	if !autoscaled {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCHEDULER	FAILED	BY REASON	START p50/p95 (s)	NODES LAUNCHED	BY CPU	LEFT	LAST REMOVED (s)	NODE-SECONDS	NODE CPU-SECONDS	JOBS/H")
	for _, run := range r.Runs {
		a := run.Autoscale
		if a == nil {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f/%.0f\t%d\t%s\t%d\t%.0f\t%.0f\t%.0f\t%.1f\n",
			run.Scheduler, run.Jobs.Failed, reasons(run.Jobs.FailedByReason), run.StartLatency.P50, run.StartLatency.P95,
			a.Launched, reasons(a.BySize), a.Left, a.LastRemovedSeconds, a.NodeSeconds, a.NodeCPUSeconds, run.JobsPerHour)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "Reserved room taken by pods of other schedulers: not measured (every pod of the scenario goes through the scheduler under test; an overcommit would show as an invariant violation).")
}

// PrintCauses writes, per run, the failed jobs by cause (Cause) and the room
// held for nothing (Run.ReservedUnusedCPUSeconds).
func PrintCauses(w io.Writer, r *Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "SCHEDULER\tFAILED")
	for _, c := range Causes {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(c))
	}
	fmt.Fprintln(tw, "\tOF THEM IN A STEP\tRESERVED BUT UNUSED (cpu-s)\tOF IT STEP HEADROOM (cpu-s)")
	for _, run := range r.Runs {
		fmt.Fprintf(tw, "%s\t%d", run.Scheduler, run.Jobs.Failed)
		for _, c := range Causes {
			fmt.Fprintf(tw, "\t%d", run.Jobs.FailedByCause[c])
		}
		fmt.Fprintf(tw, "\t%d\t%.0f\t%.0f\n", run.Jobs.FailedInSteps, run.ReservedUnusedCPUSeconds, run.StepHeadroomUnusedCPUSeconds)
	}
	_ = tw.Flush()
}

func (r *Report) jobs() int {
	if len(r.Runs) == 0 {
		return 0
	}
	return r.Runs[0].Jobs.Submitted
}

func reasons(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, ",")
}
