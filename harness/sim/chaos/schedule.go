package chaos

import (
	"math/rand"
	"sort"
	"time"

	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
)

// Kind is a kind of fault.
type Kind string

// The faults the harness injects.
const (
	// Kill is a SIGKILL of a scheduler process, restarted after a delay.
	Kill Kind = "kill"
	// LeaderKill is a SIGKILL of the leading replica, restarted after a delay.
	LeaderKill Kind = "leaderKill"
	// APIServerRestart restarts kube-apiserver, etcd's data kept.
	APIServerRestart Kind = "apiserverRestart"
	// RunnerFailure makes a running runner's container exit 1.
	RunnerFailure Kind = "runnerFailure"
	// NodeDeletion deletes a node and adds a fresh one.
	NodeDeletion Kind = "nodeDeletion"
)

// kinds lists the kinds in the order ties are broken.
var kinds = []Kind{Kill, LeaderKill, APIServerRestart, RunnerFailure, NodeDeletion}

func count(f scenario.Faults, k Kind) int {
	switch k {
	case Kill:
		return f.Kills
	case LeaderKill:
		return f.LeaderKills
	case APIServerRestart:
		return f.APIServerRestarts
	case RunnerFailure:
		return f.RunnerFailures
	case NodeDeletion:
		return f.NodeDeletions
	}
	return 0
}

// Fault is a planned fault: what, and when in simulated time since the job
// stream started.
type Fault struct {
	Kind Kind
	At   time.Duration
}

// Plan draws the moments of the faults from seed: the n faults of a kind
// fall one in each of n equal slices of [from, to), at a uniformly random
// point of the slice, so that they are random but spread over the whole
// window. The plan is sorted by time (ties in kind order); the same seed
// gives the same plan.
func Plan(seed int64, f scenario.Faults, from, to time.Duration) []Fault {
	if to < from {
		to = from
	}
	var plan []Fault
	for i, k := range kinds {
		n := count(f, k)
		if n == 0 {
			continue
		}
		r := rand.New(rand.NewSource(seed*int64(len(kinds)) + int64(i)))
		slice := (to - from) / time.Duration(n)
		for j := range n {
			at := from + time.Duration(j)*slice
			if slice > 0 {
				at += time.Duration(r.Int63n(int64(slice)))
			}
			plan = append(plan, Fault{Kind: k, At: at.Round(time.Second)})
		}
	}
	rank := map[Kind]int{}
	for i, k := range kinds {
		rank[k] = i
	}
	sort.SliceStable(plan, func(i, j int) bool {
		if plan[i].At != plan[j].At {
			return plan[i].At < plan[j].At
		}
		return rank[plan[i].Kind] < rank[plan[j].Kind]
	})
	return plan
}

// Window is the part of a job stream (arrival times) in which faults are
// injected: from a tenth of the way in, once the first jobs have filled the
// nodes, to the last arrival.
func Window(arrivals []time.Duration) (from, to time.Duration) {
	if len(arrivals) == 0 {
		return 0, 0
	}
	first, last := arrivals[0], arrivals[0]
	for _, a := range arrivals {
		first, last = min(first, a), max(last, a)
	}
	return first + (last-first)/10, last
}
