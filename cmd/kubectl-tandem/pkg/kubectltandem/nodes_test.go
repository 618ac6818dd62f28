package kubectltandem

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/tandem-scheduler/tandem/contract"
)

// cluster is a small cluster for the table tests: node n1 with a held
// reservation, n2 with a claimed one (GPU) and an ordinary pod, a forged
// record, a finished pod and a pending one.
func cluster() *Snapshot {
	return snapshot(
		[]*v1.Node{
			makeNode("n1", rl("cpu=4,memory=16Gi,pods=110")),
			makeNode("n2", rl("cpu=4,memory=8Gi,pods=110,nvidia.com/gpu=2")),
		},
		[]*v1.Pod{
			makePod("arc", "r1").runner().req(rl("cpu=250m,memory=512Mi")).node("n1").
				record(contract.Recorded{Node: "n1", Requests: rl("cpu=2,memory=4Gi,pods=1"), Source: "annotation"}).obj(),
			makePod("arc", "r2").runner().req(rl("cpu=250m,memory=512Mi")).node("n2").
				record(contract.Recorded{Node: "n2", Requests: rl("cpu=2,memory=2Gi,nvidia.com/gpu=1,pods=2"), StepRequests: rl("cpu=500m,pods=1"), Source: "hook-template", HostPorts: []string{"6379/TCP"}}).obj(),
			// r1's reservation held by a placeholder: reserved, not requested.
			makePod("arc", "r1-hold").placeholderOf("r1").req(rl("cpu=2,memory=4Gi")).node("n1").obj(),
			makePod("arc", "r2-workflow").workflowOf("r2").req(rl("cpu=1500m,memory=2Gi,nvidia.com/gpu=1")).node("n2").obj(),
			makePod("ci", "build").req(rl("cpu=1")).node("n2").obj(),
			makePod("ci", "forged").runner().node("n1").record(contract.Recorded{Node: "n1", Requests: rl("cpu=3"), RunnerUID: "copied"}).obj(),
			makePod("ci", "done").req(rl("cpu=3")).node("n1").phase(v1.PodSucceeded).obj(),
			makePod("ci", "waiting").req(rl("cpu=3")).obj(),
		},
		nil)
}

func TestNodeUsage(t *testing.T) {
	s := cluster()
	got := nodeUsage(s, AnnotationSource{}.Reservations(s))
	want := []NodeUsage{
		{
			Name: "n1", Allocatable: rl("cpu=4,memory=16Gi,pods=110"),
			// r1 and the forged pod; the finished pod holds nothing.
			Requested:    rl("cpu=250m,memory=512Mi,pods=2"),
			Reserved:     rl("cpu=2,memory=4Gi,pods=1"),
			Free:         rl("cpu=1750m,memory=11776Mi,pods=107"),
			Reservations: map[Phase]int{PhaseHeld: 1, PhaseClaimed: 0, PhaseFinished: 0},
			Holders:      []Holder{{Runner: "arc/r1", Phase: PhaseHeld, Holds: rl("cpu=2,memory=4Gi,pods=1")}},
			Runners:      []string{"arc/r1"},
		},
		{
			Name: "n2", Allocatable: rl("cpu=4,memory=8Gi,pods=110,nvidia.com/gpu=2"),
			Requested: rl("cpu=2750m,memory=2560Mi,pods=3,nvidia.com/gpu=1"),
			// The claim leaves the step headroom.
			Reserved:     rl("cpu=500m,pods=1"),
			Free:         rl("cpu=750m,memory=5632Mi,pods=106,nvidia.com/gpu=1"),
			Reservations: map[Phase]int{PhaseHeld: 0, PhaseClaimed: 1, PhaseFinished: 0},
			Holders:      []Holder{{Runner: "arc/r2", Phase: PhaseClaimed, Holds: rl("cpu=500m,pods=1")}},
			Runners:      []string{"arc/r2"},
		},
	}
	if diff := cmp.Diff(want, got, quantities); diff != "" {
		t.Errorf("nodeUsage (-want,+got):\n%s", diff)
	}
}

func TestNodesTable(t *testing.T) {
	s := cluster()
	us := nodeUsage(s, AnnotationSource{}.Reservations(s))
	testCases := map[string]struct {
		format string
		want   string
	}{
		"default": {
			want: `NAME   CPU-ALLOC   CPU-REQ   CPU-RSVD   CPU-FREE   MEM-ALLOC   MEM-REQ   MEM-RSVD   MEM-FREE   PODS-ALLOC   PODS-REQ   PODS-RSVD   PODS-FREE
n1     4           250m      2          1750m      16Gi        512Mi     4Gi        11776Mi    110          2          1           107
n2     4           2750m     500m       750m       8Gi         2560Mi    0          5632Mi     110          3          1           106
`,
		},
		"wide": {
			format: "wide",
			want: `NAME   CPU-ALLOC   CPU-REQ   CPU-RSVD   CPU-FREE   MEM-ALLOC   MEM-REQ   MEM-RSVD   MEM-FREE   PODS-ALLOC   PODS-REQ   PODS-RSVD   PODS-FREE   OTHER-FREE         HELD   CLAIMED   FINISHED   RUNNERS
n1     4           250m      2          1750m      16Gi        512Mi     4Gi        11776Mi    110          2          1           107         <none>             1      0         0          arc/r1
n2     4           2750m     500m       750m       8Gi         2560Mi    0          5632Mi     110          3          1           106         nvidia.com/gpu=1   0      1         0          arc/r2
`,
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			p := newPrinter()
			p.format = tc.format
			var out bytes.Buffer
			if err := p.print(&out, nodesTable(us), nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("table (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestReservationsTable(t *testing.T) {
	s := cluster()
	rs := AnnotationSource{}.Reservations(s)
	sortReservations(rs)
	testCases := map[string]struct {
		format string
		all    bool
		want   string
	}{
		"default": {
			want: `RUNNER   NODE   SIZE                                       SOURCE          PHASE     AGE
r1       n1     cpu=2,memory=4Gi,pods=1                    annotation      held      59m
r2       n2     cpu=2,memory=2Gi,pods=2,nvidia.com/gpu=1   hook-template   claimed   59m
forged   n1     cpu=3                                      <none>          invalid   59m
`,
		},
		"wide, all namespaces": {
			format: "wide", all: true,
			want: `NAMESPACE   RUNNER   NODE   SIZE                                       SOURCE          PHASE     AGE   HOLDS                     WORKFLOW-POD   STEP-HEADROOM     HOST-PORTS   RUNNER-UID
arc         r1       n1     cpu=2,memory=4Gi,pods=1                    annotation      held      59m   cpu=2,memory=4Gi,pods=1   <none>         -                 <none>       r1-uid
arc         r2       n2     cpu=2,memory=2Gi,pods=2,nvidia.com/gpu=1   hook-template   claimed   59m   cpu=500m,pods=1           r2-workflow    cpu=500m,pods=1   6379/TCP     r2-uid
ci          forged   n1     cpu=3                                      <none>          invalid   59m   -                         <none>         -                 <none>       copied
`,
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			p := newPrinter()
			p.format = tc.format
			var out bytes.Buffer
			if err := p.print(&out, reservationsTable(rs, tc.all, s.Now), nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("table (-want,+got):\n%s", diff)
			}
		})
	}
}
