package demo

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Print writes one case's runs side by side in a table a person can read.
func Print(w io.Writer, c Case, runs []Result) {
	fmt.Fprintf(w, "\n=== %s: %s\n", c.Name, c.Description)
	fmt.Fprintf(w, "    %d nodes x %s cpu; runner %s cpu, workflow pod %s cpu (created after its runner binds, pinned with nodeName)\n\n", c.Nodes, nodeCPU, unitCPU, unitCPU)
	for _, r := range runs {
		fmt.Fprintf(w, "  %s\n", r.Scheduler)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "    RUNNER\tNODE\tFREE CPU AT JOB START\tWORKFLOW POD")
		for _, o := range r.Outcomes {
			node, free, wf := o.Node, o.FreeCPU, o.Workflow
			if node == "" {
				node, free, wf = "(pending)", "-", "none yet: runner waits for a pair slot"
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", o.Runner, node, free, wf)
		}
		_ = tw.Flush()
		for _, o := range r.Outcomes {
			if o.Node == "" {
				fmt.Fprintf(w, "    kubectl describe pod %s: %s\n", o.Runner, o.Pending)
				break
			}
		}
		fmt.Fprintf(w, "    => %s\n\n", Summary(r))
	}
}

// Summary is one line: failed jobs and waiting runners.
func Summary(r Result) string {
	var parts []string
	parts = append(parts, fmt.Sprintf("%d job(s) failed", r.Rejected()))
	if n := r.Waiting(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d runner(s) pending until a pair slot frees", n))
	}
	return strings.Join(parts, ", ")
}
