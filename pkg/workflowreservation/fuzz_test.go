package workflowreservation

import (
	"testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// The parsers of user input: whatever they are given, they do not panic,
// and what they accept is something the scheduler can account with.

func FuzzRecordedReservation(f *testing.F) {
	for _, s := range []string{
		recordedFor("r"),
		`{"node":"n1","requests":{"cpu":"1","pods":"1"},"source":"annotation","runnerUID":"r","staleWorkflowPods":["a","b"]}`,
		`{"node":"n1","requests":{"cpu":"-1"},"runnerUID":"r"}`,
		`{"node":"n2","requests":{"cpu":"1"},"runnerUID":"r"}`,
		`{`, `null`, `[]`, `{"requests":{"cpu":"1e100"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		pod := runnerPod("r").Node("n1").Annotation(contract.ReservationAnnotation, value).Obj()
		r, err := reservations.FromPod(pod)
		if err != nil || r == nil {
			return
		}
		if r.Node != "n1" || r.RunnerUID != pod.UID {
			t.Fatalf("record %q accepted for node %q, uid %q", value, r.Node, r.RunnerUID)
		}
		if r.Size.IsZero() || r.Size.Negative() {
			t.Fatalf("record %q accepted with size %+v", value, r.Size)
		}
	})
}
