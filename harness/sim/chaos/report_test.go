package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-scheduler/tandem/harness/sim/arc"
)

func TestCountJobs(t *testing.T) {
	ok := arc.Result{Succeeded: true}
	failed := func(id int, reason string) arc.Result {
		return arc.Result{Job: arc.Job{ID: id}, Reason: reason, Node: "n1", Ended: 90 * time.Second}
	}
	tests := map[string]struct {
		submitted int
		results   []arc.Result
		want      Jobs
		wantLost  []int
	}{
		"all succeeded": {
			submitted: 2, results: []arc.Result{ok, ok},
			want: Jobs{JobsSubmitted: 2, JobsSucceeded: 2, JobsFailedByFaultsByReason: map[string]int{}, JobsLostByReason: map[string]int{}},
		},
		"faults, capacity, other and unfinished": {
			submitted: 7,
			results: []arc.Result{ok, failed(2, arc.ReasonRunnerFailed), failed(3, arc.ReasonNodeDeleted),
				failed(4, "OutOfcpu"), failed(5, arc.ReasonWorkflowPodGone)},
			want: Jobs{
				JobsSubmitted: 7, JobsSucceeded: 1,
				JobsFailedByFaults: 2, JobsFailedByFaultsByReason: map[string]int{arc.ReasonRunnerFailed: 1, arc.ReasonNodeDeleted: 1},
				JobsLost: 4, JobsLostByReason: map[string]int{"OutOfcpu": 1, arc.ReasonWorkflowPodGone: 1, "Unfinished": 2},
			},
			wantLost: []int{4, 5},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, lost := countJobs(tc.submitted, tc.results)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("jobs (-want,+got):\n%s", diff)
			}
			var ids []int
			for _, f := range lost {
				ids = append(ids, f.Job)
			}
			if diff := cmp.Diff(tc.wantLost, ids); diff != "" {
				t.Errorf("lost jobs (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	sec := func(s float64) *float64 { return &s }
	runs := []RunReport{
		{
			Name: "kill", Replicas: 1,
			Jobs: Jobs{JobsSubmitted: 10, JobsSucceeded: 9, JobsFailedByFaults: 1,
				JobsFailedByFaultsByReason: map[string]int{arc.ReasonRunnerFailed: 1}, JobsLostByReason: map[string]int{}},
			PodsRejectedByKubelet: map[string]int{},
			Faults: []FaultRecord{
				{Kind: Kill, Injected: true, RecoverySeconds: sec(2), recovery: 2 * time.Second},
				{Kind: Kill, Injected: true, RecoverySeconds: sec(4), recovery: 4 * time.Second},
				{Kind: RunnerFailure, Injected: true},
				{Kind: NodeDeletion, Error: "not injected"},
			},
		},
		{
			Name: "failover", Replicas: 2, LeaderElection: true, InvariantViolations: 1, LeakedReservations: 1,
			Jobs: Jobs{JobsSubmitted: 10, JobsSucceeded: 8, JobsLost: 2,
				JobsFailedByFaultsByReason: map[string]int{}, JobsLostByReason: map[string]int{"OutOfcpu": 2}},
			PodsRejectedByKubelet: map[string]int{"OutOfcpu": 2},
			SchedulerExits:        []Exit{{Replica: "tandem-scheduler-1"}},
			Faults: []FaultRecord{
				{Kind: LeaderKill, Injected: true, RecoverySeconds: sec(5), recovery: 5 * time.Second, LeaseTakeoverSeconds: sec(4.5), takeover: 4500 * time.Millisecond},
				{Kind: LeaderKill, Injected: true, RecoverySeconds: sec(7), recovery: 7 * time.Second, LeaseTakeoverSeconds: sec(6), takeover: 6 * time.Second},
				{Kind: LeaderKill, Injected: true, RecoverySeconds: sec(6), recovery: 6 * time.Second},
				{Kind: APIServerRestart, Injected: true, RecoverySeconds: sec(12), recovery: 12 * time.Second},
				{Kind: NodeDeletion, Injected: true},
			},
		},
	}
	rep := summarize("chaos", 1, 20, runs, time.Minute)
	want := []struct {
		name      string
		got, want any
	}{
		{"kills", rep.Kills, 2},
		{"leaderKills", rep.LeaderKills, 3},
		{"apiserverRestarts", rep.APIServerRestarts, 1},
		{"runnerFailuresInjected", rep.RunnerFailuresInjected, 1},
		{"nodesDeleted", rep.NodesDeleted, 1},
		{"faultsNotInjected", rep.FaultsNotInjected, 1},
		{"schedulerExits", rep.SchedulerExits, 1},
		{"jobsSubmitted", rep.JobsSubmitted, 20},
		{"jobsSucceeded", rep.JobsSucceeded, 17},
		{"jobsFailedByFaults", rep.JobsFailedByFaults, 1},
		{"jobsLost", rep.JobsLost, 2},
		{"invariantViolations", rep.InvariantViolations, 1},
		{"leakedReservations", rep.LeakedReservations, 1},
		{"failoverSeconds", rep.FailoverSeconds, Stats{Count: 3, P50: 6, Max: 7}},
		{"leaseTakeoverSeconds", rep.LeaseTakeoverSeconds, Stats{Count: 2, P50: 4.5, Max: 6}},
		{"killRecoverySeconds", rep.KillRecoverySeconds, Stats{Count: 2, P50: 2, Max: 4}},
		{"apiserverRecoverySeconds", rep.APIServerRecoverySeconds, Stats{Count: 1, P50: 12, Max: 12}},
		{"podsRejectedByKubelet", rep.PodsRejectedByKubelet, map[string]int{"OutOfcpu": 2}},
	}
	for _, w := range want {
		if diff := cmp.Diff(w.want, w.got); diff != "" {
			t.Errorf("%s (-want,+got):\n%s", w.name, diff)
		}
	}
	problems := strings.Join(rep.Problems(), "\n")
	for _, p := range []string{"2 job(s) lost: OutOfcpu=2", "1 invariant violation", "1 reservation(s) leaked", "2 pod(s) rejected", "1 planned fault(s) not injected"} {
		if !strings.Contains(problems, p) {
			t.Errorf("Problems() = %q, want it to contain %q", problems, p)
		}
	}
	var out strings.Builder
	PrintSummary(&out, rep)
	for _, s := range []string{"kill", "failover", "2 (leader election)", "failover p50 6.00 max 7.00"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("summary does not contain %q:\n%s", s, out.String())
		}
	}
}

func TestReportJSONFields(t *testing.T) {
	rep := summarize("chaos", 1, 20, nil, time.Second)
	b := strings.Builder{}
	if err := writeJSONTo(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"kills"`, `"leaderKills"`, `"apiserverRestarts"`, `"jobsSubmitted"`, `"jobsLost"`,
		`"jobsFailedByFaults"`, `"invariantViolations"`, `"leakedReservations"`, `"failoverSeconds": {`, `"p50"`, `"max"`,
		`"runnerFailuresInjected"`, `"nodesDeleted"`} {
		if !strings.Contains(b.String(), field) {
			t.Errorf("report JSON has no %s:\n%s", field, b.String())
		}
	}
}
