package workflowreservation

import "unicode/utf8"

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
	// ReasonNotRecorded: another bind plugin bound the runner, so its
	// reservation is not recorded on the pod.
	ReasonNotRecorded = "WorkflowReservationNotRecorded"
	// ReasonIgnoredAnnotation: a pod that is not a runner carries the sizing
	// annotation.
	ReasonIgnoredAnnotation = "WorkflowRequestsIgnored"
	// ReasonIncompleteHookTemplate: the hook template has no $job container;
	// the reservation covers its other containers only.
	ReasonIncompleteHookTemplate = "IncompleteHookTemplate"
	// ReasonNoReservation (on a workflow pod scheduled by tandem): its runner
	// holds no reservation it can claim.
	ReasonNoReservation = "NoWorkflowReservation"
	// ReasonPairPodCreated: a pending pod of the pair's size now stands for
	// the waiting runner, for cluster autoscalers.
	ReasonPairPodCreated = "PairPodCreated"
	// ReasonPairPodFailed: the pair pod could not be created.
	ReasonPairPodFailed = "PairPodFailed"
	// ReasonPlaceholderFailed: a bound runner's placeholder could not be
	// created (reservationMode: Pods).
	ReasonPlaceholderFailed = "PlaceholderFailed"
	// ReasonPlaceholderLost: a bound runner's placeholder was removed by
	// someone else while its reservation waited for the workflow pod.
	ReasonPlaceholderLost = "PlaceholderLost"
	// ReasonRepaired: the reconciler found the reservation out of step with
	// the cluster and repaired it.
	ReasonRepaired = "WorkflowReservationRepaired"
)

// maxNoteLength is the events API's limit on a note.
const maxNoteLength = 1024

// truncate shortens s to at most maxNoteLength bytes for an event note,
// cutting at a rune boundary so that the note stays valid UTF-8.
func truncate(s string) string {
	if len(s) <= maxNoteLength {
		return s
	}
	const ellipsis = "..."
	cut := maxNoteLength - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
