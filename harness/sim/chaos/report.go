package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tandem-scheduler/tandem/harness/sim/arc"
	"github.com/tandem-scheduler/tandem/harness/sim/report"
)

// Report is `make chaos`'s result (_output/chaos/report.json): the totals
// over the runs, then each run.
type Report struct {
	Scenario  string  `json:"scenario"`
	Seed      int64   `json:"seed"`
	TimeScale float64 `json:"timeScale"`

	// Faults injected, by kind.
	Kills                  int `json:"kills"`
	LeaderKills            int `json:"leaderKills"`
	APIServerRestarts      int `json:"apiserverRestarts"`
	RunnerFailuresInjected int `json:"runnerFailuresInjected"`
	NodesDeleted           int `json:"nodesDeleted"`
	// SchedulerExits are exits of scheduler processes that no kill caused
	// (a leader that lost its lease while the apiserver restarted); each
	// was started again.
	SchedulerExits int `json:"schedulerExits"`
	// FaultsNotInjected counts planned faults that did not happen.
	FaultsNotInjected int `json:"faultsNotInjected"`

	Jobs
	InvariantViolations int `json:"invariantViolations"`
	// LeakedReservations are reservations left after every runner ended:
	// still recorded on a live runner pod, or room the scheduler would
	// not give to a probe pod.
	LeakedReservations int `json:"leakedReservations"`
	// PodsRejectedByKubelet counts pods the kubelet rejected at admission,
	// by reason: a scheduled pod the kubelet cannot admit means a
	// double-booked node, even when no job failed for it.
	PodsRejectedByKubelet map[string]int `json:"podsRejectedByKubelet"`

	// FailoverSeconds: leader kills, from the SIGKILL to the first pod
	// bound by the new leader. KillRecoverySeconds: the same for kills of
	// the only replica (restart delay included). APIServerRecoverySeconds:
	// from the apiserver's stop to the first pod bound after it. Real time.
	FailoverSeconds          Stats `json:"failoverSeconds"`
	LeaseTakeoverSeconds     Stats `json:"leaseTakeoverSeconds"`
	KillRecoverySeconds      Stats `json:"killRecoverySeconds"`
	APIServerRecoverySeconds Stats `json:"apiserverRecoverySeconds"`

	WallSeconds float64     `json:"wallSeconds"`
	Runs        []RunReport `json:"runs"`
}

// Jobs counts job outcomes.
type Jobs struct {
	JobsSubmitted int `json:"jobsSubmitted"`
	JobsSucceeded int `json:"jobsSucceeded"`
	// JobsFailedByFaults failed because of an injected fault (Classify).
	JobsFailedByFaults         int            `json:"jobsFailedByFaults"`
	JobsFailedByFaultsByReason map[string]int `json:"jobsFailedByFaultsByReason"`
	// JobsLost never ended, or failed for a capacity/scheduling or an
	// unexplained reason; "Unfinished" counts those that never ended.
	JobsLost         int            `json:"jobsLost"`
	JobsLostByReason map[string]int `json:"jobsLostByReason"`
}

// RunReport is one run of the job stream.
type RunReport struct {
	Name           string `json:"name"`
	Replicas       int    `json:"replicas"`
	LeaderElection bool   `json:"leaderElection"`
	Namespace      string `json:"namespace"`
	LogDir         string `json:"logDir"`

	Jobs
	InvariantViolations   int            `json:"invariantViolations"`
	Violations            []string       `json:"violations,omitempty"`
	LeakedReservations    int            `json:"leakedReservations"`
	PodsRejectedByKubelet map[string]int `json:"podsRejectedByKubelet"`
	Faults                []FaultRecord  `json:"faults"`
	SchedulerExits        []Exit         `json:"schedulerExits,omitempty"`
	// LostJobs lists the lost jobs' failures.
	LostJobs        []report.Failure `json:"lostJobs,omitempty"`
	MakespanSeconds float64          `json:"makespanSeconds"`
	WallSeconds     float64          `json:"wallSeconds"`
	// HostStallSeconds is real time in which the host ran nothing of the
	// harness (a loaded shared machine); simulated time was held meanwhile.
	HostStallSeconds float64 `json:"hostStallSeconds"`
	// Error is what stopped the run early, if anything did.
	Error string `json:"error,omitempty"`
}

// countJobs classifies the results of submitted jobs.
func countJobs(submitted int, results []arc.Result) (Jobs, []report.Failure) {
	j := Jobs{JobsSubmitted: submitted, JobsFailedByFaultsByReason: map[string]int{}, JobsLostByReason: map[string]int{}}
	var lost []report.Failure
	for _, r := range results {
		switch {
		case r.Succeeded:
			j.JobsSucceeded++
		case Classify(r.Reason) == ByFault:
			j.JobsFailedByFaults++
			j.JobsFailedByFaultsByReason[r.Reason]++
		default:
			j.JobsLost++
			j.JobsLostByReason[r.Reason]++
			lost = append(lost, report.Failure{Job: r.Job.ID, Node: r.Node, AtSeconds: r.Ended.Seconds(), Reason: r.Reason, Message: r.Message})
		}
	}
	if unfinished := submitted - len(results); unfinished > 0 {
		j.JobsLost += unfinished
		j.JobsLostByReason["Unfinished"] += unfinished
	}
	return j, lost
}

func (j *Jobs) add(o Jobs) {
	j.JobsSubmitted += o.JobsSubmitted
	j.JobsSucceeded += o.JobsSucceeded
	j.JobsFailedByFaults += o.JobsFailedByFaults
	j.JobsLost += o.JobsLost
	addCounts(j.JobsFailedByFaultsByReason, o.JobsFailedByFaultsByReason)
	addCounts(j.JobsLostByReason, o.JobsLostByReason)
}

func addCounts(dst, src map[string]int) {
	for k, v := range src {
		dst[k] += v
	}
}

// summarize adds the runs up.
func summarize(scenario string, seed int64, scale float64, runs []RunReport, wall time.Duration) *Report {
	rep := &Report{
		Scenario: scenario, Seed: seed, TimeScale: scale, Runs: runs,
		Jobs:                  Jobs{JobsFailedByFaultsByReason: map[string]int{}, JobsLostByReason: map[string]int{}},
		PodsRejectedByKubelet: map[string]int{},
		WallSeconds:           float64(wall.Round(100*time.Millisecond)) / float64(time.Second),
	}
	var failover, takeover, kill, apiserver []time.Duration
	for _, run := range runs {
		rep.add(run.Jobs)
		rep.InvariantViolations += run.InvariantViolations
		rep.LeakedReservations += run.LeakedReservations
		rep.SchedulerExits += len(run.SchedulerExits)
		addCounts(rep.PodsRejectedByKubelet, run.PodsRejectedByKubelet)
		for _, f := range run.Faults {
			if !f.Injected {
				rep.FaultsNotInjected++
				continue
			}
			switch f.Kind {
			case Kill:
				rep.Kills++
				if f.RecoverySeconds != nil {
					kill = append(kill, f.recovery)
				}
			case LeaderKill:
				rep.LeaderKills++
				if f.RecoverySeconds != nil {
					failover = append(failover, f.recovery)
				}
				if f.LeaseTakeoverSeconds != nil {
					takeover = append(takeover, f.takeover)
				}
			case APIServerRestart:
				rep.APIServerRestarts++
				if f.RecoverySeconds != nil {
					apiserver = append(apiserver, f.recovery)
				}
			case RunnerFailure:
				rep.RunnerFailuresInjected++
			case NodeDeletion:
				rep.NodesDeleted++
			}
		}
	}
	rep.FailoverSeconds, rep.LeaseTakeoverSeconds = statsOf(failover), statsOf(takeover)
	rep.KillRecoverySeconds, rep.APIServerRecoverySeconds = statsOf(kill), statsOf(apiserver)
	return rep
}

// Problems lists what the run proves wrong: lost jobs, invariant
// violations, leaked reservations, pods the kubelet rejected, and faults
// that were planned but not injected (the run did not test what it should).
func (r *Report) Problems() []string {
	var out []string
	if r.JobsLost > 0 {
		out = append(out, fmt.Sprintf("%d job(s) lost: %s", r.JobsLost, counts(r.JobsLostByReason)))
	}
	if r.InvariantViolations > 0 {
		out = append(out, fmt.Sprintf("%d invariant violation(s)", r.InvariantViolations))
	}
	if r.LeakedReservations > 0 {
		out = append(out, fmt.Sprintf("%d reservation(s) leaked", r.LeakedReservations))
	}
	if n := total(r.PodsRejectedByKubelet); n > 0 {
		out = append(out, fmt.Sprintf("%d pod(s) rejected by the kubelet: %s", n, counts(r.PodsRejectedByKubelet)))
	}
	if r.FaultsNotInjected > 0 {
		out = append(out, fmt.Sprintf("%d planned fault(s) not injected", r.FaultsNotInjected))
	}
	for _, run := range r.Runs {
		if run.Error != "" {
			out = append(out, fmt.Sprintf("run %s: %s", run.Name, run.Error))
		}
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, ",")
}

// PrintSummary writes the report as a table per run and the totals.
func PrintSummary(w io.Writer, r *Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tREPLICAS\tJOBS\tSUCCEEDED\tFAILED BY FAULTS\tLOST\tVIOLATIONS\tLEAKED\tKUBELET REJECTIONS\tFAULTS\tWALL (s)")
	for _, run := range r.Runs {
		injected := map[string]int{}
		for _, f := range run.Faults {
			if f.Injected {
				injected[string(f.Kind)]++
			}
		}
		le := ""
		if run.LeaderElection {
			le = " (leader election)"
		}
		fmt.Fprintf(tw, "%s\t%d%s\t%d\t%d\t%d %s\t%d %s\t%d\t%d\t%s\t%s\t%.0f\n", run.Name, run.Replicas, le,
			run.JobsSubmitted, run.JobsSucceeded, run.JobsFailedByFaults, counts(run.JobsFailedByFaultsByReason),
			run.JobsLost, counts(run.JobsLostByReason), run.InvariantViolations, run.LeakedReservations,
			counts(run.PodsRejectedByKubelet), counts(injected), run.WallSeconds)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nFaults: %d kills, %d leader kills, %d apiserver restarts, %d runner failures, %d nodes deleted; %d scheduler exits restarted; %d not injected.\n",
		r.Kills, r.LeaderKills, r.APIServerRestarts, r.RunnerFailuresInjected, r.NodesDeleted, r.SchedulerExits, r.FaultsNotInjected)
	fmt.Fprintf(w, "Jobs: %d submitted, %d succeeded, %d failed by faults (%s), %d lost (%s).\n",
		r.JobsSubmitted, r.JobsSucceeded, r.JobsFailedByFaults, counts(r.JobsFailedByFaultsByReason), r.JobsLost, counts(r.JobsLostByReason))
	fmt.Fprintf(w, "Checks: %d invariant violations, %d leaked reservations, %d pods rejected by the kubelet.\n",
		r.InvariantViolations, r.LeakedReservations, total(r.PodsRejectedByKubelet))
	fmt.Fprintf(w, "Real seconds: failover p50 %.2f max %.2f (lease takeover p50 %.2f max %.2f); kill recovery p50 %.2f max %.2f; apiserver recovery p50 %.2f max %.2f.\n",
		r.FailoverSeconds.P50, r.FailoverSeconds.Max, r.LeaseTakeoverSeconds.P50, r.LeaseTakeoverSeconds.Max,
		r.KillRecoverySeconds.P50, r.KillRecoverySeconds.Max, r.APIServerRecoverySeconds.P50, r.APIServerRecoverySeconds.Max)
}

// WriteJSON writes the report, creating the directory.
func WriteJSON(path string, r *Report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeJSONTo(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeJSONTo(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
