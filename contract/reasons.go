package contract

// Event reasons, on the runner unless noted.
const (
	// ReasonReserved: room for the workflow pod was reserved.
	ReasonReserved = "WorkflowCapacityReserved"
	// ReasonClaimed (on the workflow pod, and on the runner for pods that
	// bypass the scheduler): the workflow pod took the reservation.
	ReasonClaimed = "WorkflowReservationClaimed"
	// ReasonReleased: the reservation was dropped unclaimed.
	ReasonReleased = "WorkflowReservationReleased"
	// ReasonInvalidWorkflowSize: a size source is broken; the next is used.
	ReasonInvalidWorkflowSize = "InvalidWorkflowSize"
	// ReasonNoWorkflowSize: nothing says how big the workflow pod will be.
	ReasonNoWorkflowSize = "WorkflowSizeUnknown"
	// ReasonInvalidReservation: a runner's recorded reservation is unreadable
	// or was not recorded for this pod.
	ReasonInvalidReservation = "InvalidReservation"
	// ReasonNotRecorded: the runner is bound without a valid record (another
	// bind plugin or scheduler bound it, it was pinned with nodeName, or the
	// record was removed): no room is held for it after a restart.
	ReasonNotRecorded = "WorkflowReservationNotRecorded"
	// ReasonNotAnEphemeralRunner: a pod matches the runner selector, but no
	// EphemeralRunner of ARC controls it; it is scheduled as an ordinary pod.
	ReasonNotAnEphemeralRunner = "NotAnEphemeralRunner"
	// ReasonIgnoredAnnotation: a pod that is not a runner carries the sizing
	// annotation.
	ReasonIgnoredAnnotation = "WorkflowRequestsIgnored"
	// ReasonIncompleteHookTemplate: the hook template sizes the workflow pod
	// only in part: it has no $job container (the reservation covers its
	// other containers only), or it gives the pod resourceClaims, whose
	// devices tandem does not hold.
	ReasonIncompleteHookTemplate = "IncompleteHookTemplate"
	// ReasonNoReservation (on a workflow pod scheduled by tandem): its runner
	// holds no reservation it can claim.
	ReasonNoReservation = "NoWorkflowReservation"
	// ReasonPairPodCreated: a pending pod of the pair's size now stands for
	// the waiting runner, for cluster autoscalers.
	ReasonPairPodCreated = "PairPodCreated"
	// ReasonPairPodFailed: the pair pod could not be created.
	ReasonPairPodFailed = "PairPodFailed"
	// ReasonPairPodNameTaken: a pod tandem did not create has the pair
	// pod's name; the pair pod was created under a generated name.
	ReasonPairPodNameTaken = "PairPodNameTaken"
	// ReasonPlaceholderNameTaken: a pod tandem did not create has the
	// placeholder's name; the placeholder was created under a generated
	// name (reservationMode: Pods).
	ReasonPlaceholderNameTaken = "PlaceholderNameTaken"
	// ReasonPlaceholderFailed: a bound runner's placeholder could not be
	// created (reservationMode: Pods).
	ReasonPlaceholderFailed = "PlaceholderFailed"
	// ReasonPlaceholderLost: a bound runner's placeholder was removed by
	// someone else while its reservation waited for the workflow pod.
	ReasonPlaceholderLost = "PlaceholderLost"
	// ReasonPlaceholderNotReleased (on a workflow pod): it was created
	// pinned to its runner's node while the runner's placeholder still held
	// its room; tandem-webhook did not release it (reservationMode: Pods).
	ReasonPlaceholderNotReleased = "PlaceholderNotReleased"
	// ReasonRejectedByKubelet (on a runner): a kubelet rejected its workflow
	// or step pod at admission.
	ReasonRejectedByKubelet = "WorkflowPodRejected"
	// ReasonTooManyWorkflowPods: more pods labelled as a runner's workflow
	// pods existed when it was bound than its record keeps
	// (MaxStaleWorkflowPods).
	ReasonTooManyWorkflowPods = "TooManyWorkflowPods"
	// ReasonRepaired: the reconciler found the reservation out of step with
	// the cluster and repaired it.
	ReasonRepaired = "WorkflowReservationRepaired"
)

// Filter reasons: what `kubectl describe pod` shows in a pending pod's
// PodScheduled condition when tandem's Filter turned a node away.
const (
	// ErrReasonPairDoesNotFit is the Filter reason for a runner whose
	// workflow pod would not fit next to it.
	ErrReasonPairDoesNotFit = "node(s) can't fit runner and workflow pod together"
	// ErrReasonRoomReserved is the Filter reason for a pod that would need
	// room held for a workflow pod.
	ErrReasonRoomReserved = "node(s) have their remaining room reserved for workflow pods"
	// ErrReasonWorkflowDoesNotFit is the Filter reason for a workflow pod
	// larger than its reservation plus the node's free room.
	ErrReasonWorkflowDoesNotFit = "node(s) can't fit workflow pod beyond its reservation"
	// ErrReasonPortsTaken is the Filter reason for a runner whose workflow
	// pod's host ports are in use or held on the node.
	ErrReasonPortsTaken = "node(s) have the workflow pod's host ports in use or reserved"
	// ErrReasonPortReserved is the Filter reason for a pod asking for a
	// host port held for a workflow pod.
	ErrReasonPortReserved = "node(s) have the pod's host port reserved for a workflow pod"
)
