package scenario

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Chaos is what `make chaos` (harness/sim/chaos) injects while the scenario's
// job stream runs: one run of the stream per entry of Runs, each with its
// own tandem-scheduler processes and faults. Other tools ignore it.
type Chaos struct {
	// RestartDelay bounds the random real-time delay after which a killed
	// scheduler process is started again (default 500ms to 3s).
	RestartDelay *DurationRange `json:"restartDelay,omitempty"`
	Runs         []ChaosRun     `json:"runs"`
}

// DurationRange is [Min, Max].
type DurationRange struct {
	Min metav1.Duration `json:"min"`
	Max metav1.Duration `json:"max"`
}

// ChaosRun is one run of the job stream under faults.
type ChaosRun struct {
	Name string `json:"name"`
	// Replicas is how many tandem-scheduler processes run (default 1).
	Replicas int `json:"replicas,omitempty"`
	// LeaderElection runs them with kube-scheduler's leader election on a
	// Lease (short timings, for a fast failover).
	LeaderElection bool   `json:"leaderElection,omitempty"`
	Faults         Faults `json:"faults"`
}

// Faults counts the faults of a run, each injected at a random moment of
// the job stream.
type Faults struct {
	// Kills: SIGKILL a scheduler process (any replica), start it again
	// after the restart delay.
	Kills int `json:"kills,omitempty"`
	// LeaderKills: SIGKILL the leading replica, start it again after the
	// restart delay (needs leaderElection and 2 replicas).
	LeaderKills int `json:"leaderKills,omitempty"`
	// APIServerRestarts: restart kube-apiserver, etcd's data kept.
	APIServerRestarts int `json:"apiserverRestarts,omitempty"`
	// RunnerFailures: the runner container of a random running runner
	// exits 1; ARC recreates its pod under the same name.
	RunnerFailures int `json:"runnerFailures,omitempty"`
	// NodeDeletions: a random node goes away and a fresh one replaces it.
	NodeDeletions int `json:"nodeDeletions,omitempty"`
}

// Total is the number of faults.
func (f Faults) Total() int {
	return f.Kills + f.LeaderKills + f.APIServerRestarts + f.RunnerFailures + f.NodeDeletions
}

// Delays returns the restart delay range.
func (c *Chaos) Delays() (minDelay, maxDelay time.Duration) {
	if c.RestartDelay == nil {
		return 500 * time.Millisecond, 3 * time.Second
	}
	return c.RestartDelay.Min.Duration, c.RestartDelay.Max.Duration
}

func (c *Chaos) validate() []error {
	var errs []error
	if len(c.Runs) == 0 {
		errs = append(errs, errors.New("chaos: no runs"))
	}
	if d := c.RestartDelay; d != nil && (d.Min.Duration < 0 || d.Max.Duration < d.Min.Duration) {
		errs = append(errs, errors.New("chaos: want 0 <= restartDelay.min <= restartDelay.max"))
	}
	names := map[string]bool{}
	for _, r := range c.Runs {
		if r.Name == "" || names[r.Name] {
			errs = append(errs, fmt.Errorf("chaos: run %q: want a unique name", r.Name))
		}
		names[r.Name] = true
		f := r.Faults
		if r.Replicas < 0 || r.Replicas > 5 {
			errs = append(errs, fmt.Errorf("chaos: run %q: want 0 to 5 replicas", r.Name))
		}
		if f.Kills < 0 || f.LeaderKills < 0 || f.APIServerRestarts < 0 || f.RunnerFailures < 0 || f.NodeDeletions < 0 {
			errs = append(errs, fmt.Errorf("chaos: run %q: fault counts must not be negative", r.Name))
		}
		if r.Replicas > 1 && !r.LeaderElection {
			errs = append(errs, fmt.Errorf("chaos: run %q: several replicas need leaderElection", r.Name))
		}
		if f.LeaderKills > 0 && (!r.LeaderElection || r.Replicas < 2) {
			errs = append(errs, fmt.Errorf("chaos: run %q: leaderKills need leaderElection and 2 replicas or more", r.Name))
		}
	}
	return errs
}
