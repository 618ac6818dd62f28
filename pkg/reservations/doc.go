// Package reservations is tandem's reservation model: the room held on a
// node for a runner's future workflow pod (Reservation), the resource
// arithmetic it is held in (contract.Amount), what a reservation still holds given
// its runner's pods on the node (Holds, through the contract's hold rule), and the Store of
// all of them. It is pure: no clients, informers or clocks; the scheduler
// plugin and its controllers feed it.
//
// # Lifecycle
//
// A reservation belongs to one incarnation of its runner (ARC recreates a
// failed runner pod under the same name). Its state is one of Held,
// StepsOnly, Claimed and UsedUp; two flags go with it: Bound (the runner
// was seen bound to the node, so only its end releases the reservation)
// and ClaimSeen (the claim was seen on a bound workflow pod, so the
// Unreserve of the pod's cycle no longer takes it back). Only the Store's
// verbs change them; each verb's table test (lifecycle_test.go) holds the
// transitions below, the ones it refuses included.
//
//	verb                 from                                to                             refuses (no change)
//	Take                 (none, or any: it replaces)         Held                           -
//	Rebuild              (none, or any: it replaces)         Held, Bound                    -
//	Return               Held, not Bound, the one taken      removed                        Bound (the bind went through); replaced
//	MarkBound            not Bound (same UID)                Bound                          another UID
//	Claim                Held, StepsOnly (same UID, the      Claimed                        Claimed, UsedUp, another UID, another
//	                     reserved node)                                                     node
//	Unclaim              Claimed/UsedUp by the pod,          as before the Claim            ClaimSeen, another pod's claim
//	                     not ClaimSeen
//	SeeWorkflowPod       Held, StepsOnly (the incarnation's  Claimed, ClaimSeen             a pod of an earlier runner of the
//	                     pod on the reserved node);                                         name (stale); claimed by another;
//	                     Claimed by the pod                                                 on another node (SeenElsewhere)
//	WorkflowPodGone      Claimed by the pod                  UsedUp, ClaimSeen              UsedUp, another pod's claim
//	WorkflowPodFinished  Held, StepsOnly, Claimed by it      UsedUp, ClaimSeen              UsedUp, claimed by another, other UID
//	JobStarted           Held, no start noted                Held, job started              a start noted, the stale job, Claimed,
//	                                                                                        UsedUp
//	ReleaseWorkflowRoom  Held (same UID)                     StepsOnly                      StepsOnly, Claimed, UsedUp, other UID
//	Release              any (same UID, or any)              removed                        another UID
//	ReleaseNode          any on the node                     removed                        -
//
// # What a reservation holds
//
// See contract.Holding: all of it before the workflow pod arrives, the step
// headroom the pods do not use while the workflow pod runs, nothing once it
// is used up; less what the runner's placeholder already requests there.
package reservations
