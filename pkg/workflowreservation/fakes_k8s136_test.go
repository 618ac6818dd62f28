//go:build tandem_k8s_ge_1_36

package workflowreservation

import (
	"k8s.io/client-go/tools/events"
)

// From 1.36 WaitingPod.Reject reports whether the pod was still waiting,
// and Handle.EventRecorder returns an EventRecorderLogger.
func (w *fakeWaitingPod) Reject(_, message string) bool {
	w.verdict <- "rejected: " + message
	return true
}

func (h *fakeHandle) EventRecorder() events.EventRecorderLogger { return h.recorder }
