package chaos

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
)

func TestPlan(t *testing.T) {
	from, to := 100*time.Second, 1100*time.Second
	tests := map[string]struct {
		faults scenario.Faults
		want   map[Kind]int
	}{
		"none": {},
		"kill run": {
			faults: scenario.Faults{Kills: 10, RunnerFailures: 3, NodeDeletions: 2},
			want:   map[Kind]int{Kill: 10, RunnerFailure: 3, NodeDeletion: 2},
		},
		"failover run": {
			faults: scenario.Faults{LeaderKills: 5, APIServerRestarts: 1, RunnerFailures: 3, NodeDeletions: 2},
			want:   map[Kind]int{LeaderKill: 5, APIServerRestart: 1, RunnerFailure: 3, NodeDeletion: 2},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			plan := Plan(1, tc.faults, from, to)
			got := map[Kind]int{}
			for i, f := range plan {
				got[f.Kind]++
				if f.At < from || f.At > to {
					t.Errorf("fault %d (%s) at %v, want it in [%v, %v]", i, f.Kind, f.At, from, to)
				}
				if i > 0 && f.At < plan[i-1].At {
					t.Errorf("fault %d at %v before fault %d at %v: want the plan sorted", i, f.At, i-1, plan[i-1].At)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpEmptyMap); diff != "" {
				t.Errorf("faults by kind (-want,+got):\n%s", diff)
			}
			// Each kind's i-th fault falls in the i-th of its n slices.
			seen := map[Kind]int{}
			for _, f := range plan {
				n := tc.want[f.Kind]
				slice := (to - from) / time.Duration(n)
				i := seen[f.Kind]
				seen[f.Kind]++
				if lo, hi := from+time.Duration(i)*slice, from+time.Duration(i+1)*slice; f.At < lo-time.Second || f.At > hi+time.Second {
					t.Errorf("%s #%d at %v, want it in its slice [%v, %v]", f.Kind, i, f.At, lo, hi)
				}
			}
			if diff := cmp.Diff(plan, Plan(1, tc.faults, from, to)); diff != "" {
				t.Errorf("the same seed gave another plan (-first,+second):\n%s", diff)
			}
		})
	}
	a := Plan(1, scenario.Faults{Kills: 10}, from, to)
	if b := Plan(2, scenario.Faults{Kills: 10}, from, to); cmp.Equal(a, b) {
		t.Errorf("seeds 1 and 2 gave the same plan: %v", a)
	}
}

var cmpEmptyMap = cmp.FilterValues(func(a, b map[Kind]int) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

func TestWindow(t *testing.T) {
	tests := map[string]struct {
		arrivals []time.Duration
		from, to time.Duration
	}{
		"empty":    {},
		"one job":  {arrivals: []time.Duration{5 * time.Second}, from: 5 * time.Second, to: 5 * time.Second},
		"a stream": {arrivals: []time.Duration{0, 300 * time.Second, 1000 * time.Second}, from: 100 * time.Second, to: 1000 * time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			from, to := Window(tc.arrivals)
			if from != tc.from || to != tc.to {
				t.Errorf("Window = [%v, %v], want [%v, %v]", from, to, tc.from, tc.to)
			}
		})
	}
}
