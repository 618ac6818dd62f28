package workflowreservation

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
	// ReasonInvalidReservation: a runner's recorded reservation is unreadable.
	ReasonInvalidReservation = "InvalidReservation"
)

// maxNoteLength is the events API's limit on a note.
const maxNoteLength = 1024

func truncate(s string) string {
	if len(s) <= maxNoteLength {
		return s
	}
	return s[:maxNoteLength-3] + "..."
}
