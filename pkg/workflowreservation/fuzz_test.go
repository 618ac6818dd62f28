package workflowreservation

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/tandem-scheduler/tandem/pkg/contract"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// The parsers of user input: whatever they are given, they do not panic,
// and what they accept is something the scheduler can account with.

func FuzzParseResourceList(f *testing.F) {
	for _, s := range []string{"cpu=2,memory=4Gi", " cpu=500m , nvidia.com/gpu=1 ", "cpu=", "memory=-1Gi", "cpu=1,cpu=2", ",,", "hugepages-2Mi=4Mi", "cpu=1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rl, err := parseResourceList(s)
		if err != nil {
			return
		}
		if len(rl) == 0 {
			t.Fatalf("parseResourceList(%q) accepted an empty list", s)
		}
		for name, q := range rl {
			if q.Sign() < 0 {
				t.Fatalf("parseResourceList(%q) accepted negative %s=%s", s, name, q.String())
			}
		}
		// What it prints, it reads back (the events and messages show it).
		again, err := parseResourceList(contract.FormatResources(rl))
		if err != nil {
			t.Fatalf("parseResourceList(%q) = %v, but its formatting %q does not parse: %v", s, rl, contract.FormatResources(rl), err)
		}
		if !equality.Semantic.DeepEqual(rl, again) {
			t.Fatalf("parseResourceList(%q) = %v, read back as %v", s, rl, again)
		}
	})
}

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
		r, err := reservationFromPod(pod)
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

func FuzzHookTemplate(f *testing.F) {
	for _, s := range []string{
		hookTemplate,
		"spec:\n  containers:\n  - name: $job\n    resources:\n      limits: {cpu: \"2\"}\n",
		"spec:\n  containers:\n  - name: $job\n    resources:\n      requests: {cpu: \"-2\"}\n",
		"spec: [", "- a\n- b\n", "kind: Deployment\n", "",
		"spec:\n  overhead: {cpu: 100m}\n  initContainers:\n  - name: i\n    resources:\n      requests: {memory: 1Gi}\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		tmpl, err := parseHookTemplate(data)
		if err != nil {
			return
		}
		for _, rl := range []v1.ResourceList{tmpl.workflow, tmpl.step} {
			for name, q := range rl {
				if q.Sign() < 0 {
					t.Fatalf("template %q accepted with negative %s=%s", data, name, q.String())
				}
			}
		}
		// A step pod is the workflow pod without its services: never larger.
		w, st := reservations.AmountFromList(tmpl.workflow), reservations.AmountFromList(tmpl.step)
		if st.Sub(w).AtLeastZero().MilliCPU > 0 || st.Sub(w).AtLeastZero().Memory > 0 {
			t.Fatalf("template %q: step pod %s larger than the workflow pod %s", data, st, w)
		}
	})
}
