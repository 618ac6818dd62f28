package reservations

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// State is where a reservation is in its life; see the package doc for the
// transitions between states.
type State string

const (
	// StateHeld unclaimed; the workflow room, the step headroom and the
	// host ports are held.
	StateHeld State = "Held"
	// StateStepsOnly unclaimed, but the runner's job started and no
	// workflow pod came within the grace (a job without a container): only
	// the step headroom is held.
	StateStepsOnly State = "StepsOnly"
	// StateClaimed a workflow pod claimed it; what the pod does not use of
	// the step headroom stays held while it runs.
	StateClaimed State = "Claimed"
	// StateUsedUp the claiming workflow pod is gone, or ran on another
	// node: it holds nothing, and stays until its runner goes.
	StateUsedUp State = "UsedUp"
)

// State returns the reservation's state.
func (r *Reservation) State() State {
	switch {
	case r.done:
		return StateUsedUp
	case r.claimedBy != "":
		return StateClaimed
	case r.noWorkflowPod:
		return StateStepsOnly
	default:
		return StateHeld
	}
}

// ClaimedBy is the workflow pod that claimed the reservation, "" while
// unclaimed.
func (r *Reservation) ClaimedBy() types.UID { return r.claimedBy }

// ClaimSeen reports whether the claim was seen on a bound workflow pod:
// the Unreserve of the pod's scheduling cycle no longer takes it back.
func (r *Reservation) ClaimSeen() bool { return r.claimSeen }

// UsedUp reports whether the reservation holds nothing any more.
func (r *Reservation) UsedUp() bool { return r.done }

// Bound reports whether the runner was seen bound to the node: only its end
// releases the reservation from then on.
func (r *Reservation) Bound() bool { return r.bound }

// JobStarted is when the runner was seen to start a job, zero before.
func (r *Reservation) JobStarted() time.Time { return r.jobStarted }

// NoWorkflowPod reports whether the job started and no workflow pod came
// within the grace: only the step headroom stays held.
func (r *Reservation) NoWorkflowPod() bool { return r.noWorkflowPod }

// transition applies fn to runner's reservation under the lock. fn reports
// whether it changed anything; only then does the tally change, and the
// node's version (which invalidates what Filter cached for the node) only
// if what the hold rule reads of the reservation changed (its Facts). fn
// must not change the reservation's node. It returns a copy of the
// reservation after fn, and whether fn changed it.
func (s *Store) transition(runner types.NamespacedName, fn func(r *Reservation) bool) (Reservation, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.byPod[runner]
	if r == nil {
		return Reservation{}, false
	}
	before := *r
	if !fn(r) {
		return *r, false
	}
	s.tally.count(&before, -1)
	s.tally.count(r, 1)
	if n := s.byNode[r.Node]; n != nil {
		n.update(r)
	}
	return *r, true
}

// Take puts a reservation a scheduling cycle took for a runner (Reserve),
// replacing any the runner had: it is Held, the runner not bound yet.
func (s *Store) Take(r *Reservation) { s.put(r) }

// Rebuild puts a reservation read back from its bound runner pod (its
// record, or a recovery), replacing any the runner had.
func (s *Store) Rebuild(r *Reservation) {
	r.bound = true
	s.put(r)
}

// Return takes back the reservation taken, if it is still the runner's and
// the runner was not seen bound (Unreserve: a bind that reported a failure
// may have gone through). It reports whether it did.
func (s *Store) Return(taken *Reservation) bool {
	return s.removeIf(taken.Runner, taken.RunnerUID, func(r *Reservation) bool { return r == taken && !r.bound }) != nil
}

// MarkBound notes that the runner incarnation uid is bound to the node.
func (s *Store) MarkBound(runner types.NamespacedName, uid types.UID) bool {
	_, changed := s.transition(runner, func(r *Reservation) bool {
		changed := r.RunnerUID == uid && !r.bound
		r.bound = r.bound || changed
		return changed
	})
	return changed
}

// Claim hands the reservation of runner incarnation runnerUID to the
// workflow pod being scheduled onto node (Reserve). Only a pod scheduled onto
// the reserved node claims: one scheduled elsewhere (an unpinned workflow
// pod, or any pod that carries the runner's name) is an ordinary pod there,
// and the reservation stays held for its runner. It reports whether it
// claimed, and whether the reservation was used up before (for Unclaim).
func (s *Store) Claim(runner types.NamespacedName, runnerUID, pod types.UID, node string) (claimed, wasUsedUp bool) {
	s.transition(runner, func(r *Reservation) bool {
		if r.RunnerUID != runnerUID || r.claimedBy != "" || r.Node != node {
			return false
		}
		claimed, wasUsedUp = true, r.done
		r.claimedBy = pod
		return true
	})
	return claimed, wasUsedUp
}

// Unclaim takes back pod's claim (Unreserve), unless the claim was seen on
// the bound pod since.
func (s *Store) Unclaim(runner types.NamespacedName, pod types.UID, wasUsedUp bool) bool {
	_, changed := s.transition(runner, func(r *Reservation) bool {
		if r.claimedBy != pod || r.claimSeen {
			return false
		}
		r.claimedBy, r.done = "", wasUsedUp
		return true
	})
	return changed
}

// Seen says what SeeWorkflowPod found.
type Seen int

const (
	// SeenNothingNew the claim was known, or another pod claimed.
	SeenNothingNew Seen = iota
	// SeenStale a workflow pod of an earlier runner of the name, while the
	// reservation is unclaimed; it claims nothing.
	SeenStale
	// SeenClaim the pod claimed the reservation on its node.
	SeenClaim
	// SeenElsewhere the pod runs on another node than the reservation's:
	// it claims nothing there, and the reservation stays held.
	SeenElsewhere
)

// SeeWorkflowPod notes a bound workflow pod of the runner, whether the
// scheduler or the pod's own nodeName put it there: it claims the
// reservation, or confirms the claim of its scheduling cycle. It returns the
// reservation after the change.
func (s *Store) SeeWorkflowPod(runner types.NamespacedName, pod *v1.Pod) (Reservation, Seen) {
	seen := SeenNothingNew
	r, _ := s.transition(runner, func(r *Reservation) bool {
		if !r.Owns(pod) {
			if r.claimedBy == "" {
				seen = SeenStale
			}
			return false
		}
		if r.claimedBy == pod.UID {
			changed := !r.claimSeen
			r.claimSeen = true
			return changed
		}
		if r.claimedBy != "" {
			return false
		}
		if r.Node != pod.Spec.NodeName {
			seen = SeenElsewhere
			return false
		}
		seen = SeenClaim
		r.claimedBy, r.claimSeen = pod.UID, true
		return true
	})
	return r, seen
}

// WorkflowPodGone uses up the reservation pod claimed: the pod is gone.
func (s *Store) WorkflowPodGone(runner types.NamespacedName, pod types.UID) bool {
	_, changed := s.transition(runner, func(r *Reservation) bool {
		if r.claimedBy != pod || r.done {
			return false
		}
		r.done, r.claimSeen = true, true
		return true
	})
	return changed
}

// WorkflowPodFinished uses up the reservation of runner incarnation
// runnerUID for its workflow pod pod, which finished (the reconciler found
// it so, also when no handler saw it claim).
func (s *Store) WorkflowPodFinished(runner types.NamespacedName, runnerUID, pod types.UID) bool {
	_, changed := s.transition(runner, func(r *Reservation) bool {
		if r.RunnerUID != runnerUID || r.done || (r.claimedBy != "" && r.claimedBy != pod) {
			return false
		}
		r.claimedBy, r.claimSeen, r.done = pod, true, true
		return true
	})
	return changed
}

// JobStarted notes that the runner started job at at, unless the
// reservation is claimed, a start was noted, or job is the stale one an
// earlier runner of the name showed. It returns the runner incarnation whose
// grace starts, "" when none.
func (s *Store) JobStarted(runner types.NamespacedName, job string, at time.Time) types.UID {
	var uid types.UID
	s.transition(runner, func(r *Reservation) bool {
		if r.claimedBy != "" || r.done || !r.jobStarted.IsZero() || job == r.StaleJob {
			return false
		}
		r.jobStarted, uid = at, r.RunnerUID
		return true
	})
	return uid
}

// ReleaseWorkflowRoom gives back the workflow room of runner incarnation
// uid's unclaimed reservation, keeping the step headroom: its job started
// and no workflow pod came within the grace. It returns the reservation
// before the change.
func (s *Store) ReleaseWorkflowRoom(runner types.NamespacedName, uid types.UID) (Reservation, bool) {
	var before Reservation
	_, released := s.transition(runner, func(r *Reservation) bool {
		if r.RunnerUID != uid || r.claimedBy != "" || r.done || r.noWorkflowPod {
			return false
		}
		before = *r
		r.noWorkflowPod = true
		return true
	})
	return before, released
}

// Release drops the reservation of runner if it belongs to uid (any uid
// when empty): the runner ended, or the reconciler found it gone. It returns
// the reservation dropped.
func (s *Store) Release(runner types.NamespacedName, uid types.UID) (Reservation, bool) {
	r := s.removeIf(runner, uid, func(*Reservation) bool { return true })
	if r == nil {
		return Reservation{}, false
	}
	return *r, true
}
