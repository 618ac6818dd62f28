//go:build !tandem_k8s_ge_1_36

package workflowreservation

import (
	"k8s.io/client-go/tools/events"
)

func (w *fakeWaitingPod) Reject(_, message string) { w.verdict <- "rejected: " + message }

func (h *fakeHandle) EventRecorder() events.EventRecorder { return h.recorder }
