package kubectltandem

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/contract"
)

func TestExplainVerdict(t *testing.T) {
	nodes := func() []*v1.Node {
		return []*v1.Node{
			makeNode("n1", rl("cpu=4,memory=16Gi,pods=110")),
			makeNode("n2", rl("cpu=2,memory=8Gi,pods=110")),
		}
	}
	// r1 holds cpu=2,memory=4Gi on n1: 1750m and 11776Mi free there; n2 is
	// empty, with more cpu and less memory.
	r1 := makePod("arc", "r1").runner().req(rl("cpu=250m,memory=512Mi")).node("n1").
		record(contract.Recorded{Node: "n1", Requests: rl("cpu=2,memory=4Gi,pods=1"), Source: "annotation"}).obj()
	testCases := map[string]struct {
		nodes    []*v1.Node
		pods     []*v1.Pod
		pod      *v1.Pod
		events   []Event
		wantKind PodKind
		want     string
	}{
		"runner too big for every node": {
			pod:      makePod("arc", "r3").runner().req(rl("cpu=250m")).annotate(contract.WorkflowRequestsAnnotation, "cpu=2").obj(),
			wantKind: KindRunner,
			want:     "no node has cpu=2250m free after reservations; the largest is n2 with 2",
		},
		"runner sized by the scheduler's message": {
			pod: makePod("arc", "r3").runner().req(rl("cpu=250m")).unschedulable("0/2 nodes are available: 2 node(s) can't fit runner and workflow pod together. " +
				"runner arc/r3 needs cpu=250m and its workflow pod cpu=1650m,memory=10Gi (from hook-template); no node has room for both").obj(),
			wantKind: KindRunner,
			want:     "no node has cpu=1900m,memory=10Gi free at once after reservations: n1 lacks cpu=1750m, n2 lacks memory=8Gi",
		},
		"runner short of two resources": {
			pod:      makePod("arc", "r3").runner().annotate(contract.WorkflowRequestsAnnotation, "cpu=3,memory=40Gi").obj(),
			wantKind: KindRunner,
			want:     "no node has cpu=3 or memory=40Gi free after reservations; the largest are n2 with cpu=2 and n1 with memory=11776Mi",
		},
		"runner that fits": {
			pod:      makePod("arc", "r3").runner().req(rl("cpu=250m")).annotate(contract.WorkflowRequestsAnnotation, "cpu=1").obj(),
			wantKind: KindRunner,
			want:     "n1, n2 have room for cpu=1250m after reservations; if it stays pending, something kubectl-tandem does not check stops it (pod affinity, topology spread, host ports, volumes): see the PodScheduled message",
		},
		"runner sized by its hook template": {
			pod: func() *v1.Pod {
				p := makePod("arc", "r3").runner().req(rl("cpu=3")).obj()
				p.Spec.Containers[0].Env = []v1.EnvVar{{Name: contract.HookTemplateEnv, Value: "/home/runner/pod-templates/default.yaml"}}
				return p
			}(),
			wantKind: KindRunner,
			want:     "its workflow pod's size is unknown here (its hook template (/home/runner/pod-templates/default.yaml) decides; kubectl-tandem does not read hook templates); for the runner alone: no node has cpu=3 free after reservations; the largest is n2 with 2",
		},
		"runner whose size source is broken": {
			pod: makePod("arc", "r3").runner().annotate(contract.WorkflowRequestsAnnotation, "cpu").
				unschedulable("runner arc/r3: the size of its workflow pod is unknown (annotation tandem.dev/workflow-requests=\"cpu\": \"cpu\" is not name=quantity) and no defaultWorkflowRequests is configured").obj(),
			wantKind: KindRunner,
			want:     "tandem does not know how big its workflow pod will be (see the InvalidWorkflowSize events): fix the sizing source, or configure defaultWorkflowRequests",
		},
		"pair pod of a waiting runner": {
			pod: func() *v1.Pod {
				p := makePod("arc", "r3-pair").req(rl("cpu=3")).obj()
				p.Labels = map[string]string{contract.PairPodLabel: "true"}
				p.Annotations = map[string]string{contract.PairOfAnnotation: "r3"}
				yes := true
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "r3", UID: "r3", Controller: &yes}}
				return p
			}(),
			wantKind: KindPair,
			want:     "tandem never binds it: it stands for runner r3 and its workflow pod (cpu=3) so that cluster autoscalers add a node where both fit; it goes once the runner is bound or gone",
		},
		"runner of another scheduler": {
			pod:      makePod("arc", "r3").runner().scheduler("default-scheduler").obj(),
			wantKind: KindRunner,
			want:     `its scheduler is "default-scheduler", not tandem (--scheduler-name): tandem does not place it`,
		},
		"runner that tolerates no node's taint": {
			nodes: func() []*v1.Node {
				ns := nodes()
				for _, n := range ns {
					n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
				}
				return ns
			}(),
			pod:      makePod("arc", "r3").runner().annotate(contract.WorkflowRequestsAnnotation, "cpu=1").obj(),
			wantKind: KindRunner,
			want:     "no node matches its nodeSelector, required node affinity, tolerations (or nodeName)",
		},
		"bound runner holding its room": {
			pod:      r1,
			wantKind: KindRunner,
			want:     "bound to node n1; its reservation holds cpu=2,memory=4Gi there until its workflow pod comes",
		},
		"bound runner without a record": {
			pod:      makePod("arc", "r3").runner().node("n2").obj(),
			wantKind: KindRunner,
			want: "bound to node n2 without a recorded reservation: tandem reserved nothing when it bound it (see its events: WorkflowSizeUnknown, WorkflowReservationNotRecorded); " +
				"tandem holds no room for such a runner either (a WorkflowReservationNotRecorded Warning on it says so)",
		},
		// Found in review (issue 40): the reconciler no longer sizes such a
		// runner again; its repair events say what it released. explain
		// quoted any repair as room held in the scheduler's memory.
		"bound runner with a copied record, released by the reconciler": {
			pod:      makePod("arc", "r3").runner().node("n2").record(contract.Recorded{Node: "n2", Requests: rl("cpu=1"), RunnerUID: "another"}).obj(),
			events:   []Event{{Reason: "WorkflowReservationRepaired", Note: `Released: recorded for pod UID "another", not this pod (r3-uid)`}},
			wantKind: KindRunner,
			want: `bound to node n2; its recorded reservation holds nothing (recorded for pod UID "another", not this pod (r3-uid)): ` +
				"tandem holds no room for such a runner either (a WorkflowReservationNotRecorded Warning on it says so)",
		},
		"workflow pod bigger than its reservation and the node's free room": {
			pod:      makePod("arc", "r1-workflow").workflowOf("r1").req(rl("cpu=4")).nodeSelector(v1.LabelHostname, "n1").obj(),
			wantKind: KindWorkflow,
			want:     "its runner arc/r1 holds cpu=2 on node n1, which has cpu=1750m free besides; the workflow pod needs cpu=4",
		},
		"workflow pod that fits with its reservation": {
			pod:      makePod("arc", "r1-workflow").workflowOf("r1").req(rl("cpu=3")).nodeSelector(v1.LabelHostname, "n1").obj(),
			wantKind: KindWorkflow,
			want:     "it fits on node n1 with its runner arc/r1's reservation (cpu=2,memory=4Gi held, cpu=1750m,memory=11776Mi free besides); if it stays pending, something kubectl-tandem does not check stops it: see the PodScheduled message",
		},
		"workflow pod of an earlier runner": {
			pod:      makePod("arc", "r1-workflow").workflowOf("r1").req(rl("cpu=3")).created(-time.Hour).obj(),
			wantKind: KindWorkflow,
			want:     "it belongs to an earlier runner named r1 and claims nothing; as an ordinary pod: no node has cpu=3 free after reservations; the largest is n2 with 2",
		},
		"workflow pod on its runner's node": {
			pod:      makePod("arc", "r1-workflow").workflowOf("r1").req(rl("cpu=2,memory=4Gi")).node("n1").obj(),
			wantKind: KindWorkflow,
			want:     "on node n1: claimed its runner arc/r1's reservation, which still holds nothing of step headroom",
		},
		"workflow pod without a runner": {
			pod:      makePod("arc", "r9-workflow").workflowOf("r9").req(rl("cpu=1")).obj(),
			wantKind: KindWorkflow,
			want:     "its runner arc/r9 holds no reservation; as an ordinary pod: n1, n2 have room for cpu=1 after reservations; if it stays pending, something kubectl-tandem does not check stops it (pod affinity, topology spread, host ports, volumes): see the PodScheduled message",
		},
		"an ordinary pod kept out by a reservation": {
			pod:      makePod("ci", "build").req(rl("cpu=3")).obj(),
			wantKind: KindOther,
			want:     "no node has cpu=3 free after reservations; the largest is n2 with 2",
		},
		"finished pod": {
			pod:      makePod("ci", "build").node("n1").phase(v1.PodSucceeded).obj(),
			wantKind: KindOther,
			want:     "the pod has succeeded: it holds nothing",
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			ns := tc.nodes
			if ns == nil {
				ns = nodes()
			}
			pods := append([]*v1.Pod{r1}, tc.pods...)
			if !containsPod(pods, tc.pod) {
				pods = append(pods, tc.pod)
			}
			s := snapshot(ns, pods, nil)
			e := explain(klog.Background(), s, AnnotationSource{}.Reservations(s), tc.pod, tc.events)
			if diff := cmp.Diff(tc.wantKind, e.Kind); diff != "" {
				t.Errorf("kind (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, e.Verdict); diff != "" {
				t.Errorf("verdict (-want,+got):\n%s", diff)
			}
		})
	}
}

func containsPod(pods []*v1.Pod, p *v1.Pod) bool {
	for _, q := range pods {
		if q == p {
			return true
		}
	}
	return false
}

func TestPrintExplanation(t *testing.T) {
	r1 := makePod("arc", "r1").runner().req(rl("cpu=250m,memory=512Mi")).node("n1").
		record(contract.Recorded{Node: "n1", Requests: rl("cpu=2,memory=4Gi,pods=1"), Source: "annotation"}).obj()
	msg := "0/2 nodes are available: 1 node(s) can't fit runner and workflow pod together, 1 node(s) had untolerated taint {dedicated: gpu}. " +
		"runner arc/r3 needs cpu=250m and its workflow pod cpu=2 (from annotation); no node has room for both"
	r3 := makePod("arc", "r3").runner().req(rl("cpu=250m")).annotate(contract.WorkflowRequestsAnnotation, "cpu=2").unschedulable(msg).obj()
	gpu := makeNode("gpu-1", rl("cpu=8,memory=32Gi,pods=110"))
	gpu.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
	s := snapshot([]*v1.Node{makeNode("n1", rl("cpu=4,memory=16Gi,pods=110")), gpu}, []*v1.Pod{r1, r3}, nil)
	events := []Event{
		{UID: "e1", Type: "Warning", Reason: "FailedScheduling", Note: msg, Count: 3, Last: t0.Add(59 * time.Minute), From: "tandem-scheduler"},
		{UID: "e2", Type: "Warning", Reason: "InvalidWorkflowSize", Note: "annotation tandem.dev/workflow-requests=\"cpu\": \"cpu\" is not name=quantity", Count: 1, Last: t0.Add(30 * time.Minute), From: "tandem-scheduler", Meaning: tandemReasons["InvalidWorkflowSize"]},
	}
	e := explain(klog.Background(), s, AnnotationSource{}.Reservations(s), r3, events)
	var out bytes.Buffer
	if err := printExplanation(&out, e, s.Now); err != nil {
		t.Fatal(err)
	}
	want := `Pod:            arc/r3
Kind:           runner (matches the runner selector actions-ephemeral-runner=True)
Scheduler:      tandem-scheduler
Status:         Pending, not bound
PodScheduled:   False Unschedulable, since 59m
  Message:      ` + msg + `
Requests:       cpu=250m,pods=1
Sizing:         tandem.dev/workflow-requests=cpu=2
Workflow pod:   cpu=2,pods=1 (from the scheduler's message: size from annotation, step headroom included)
Needs:          cpu=2250m,pods=2 on one node
Reservation:    <none>
Events:
  TYPE      REASON                AGE        FROM               MESSAGE
  Warning   FailedScheduling      60s (x3)   tandem-scheduler   ` + msg + `
  Warning   InvalidWorkflowSize   30m        tandem-scheduler   annotation tandem.dev/workflow-requests="cpu": "cpu" is not name=quantity
  InvalidWorkflowSize: a size source is broken; tandem used the next one
Nodes it may go to (1 of 2):
  NODE   FREE                                ALLOCATABLE                  REQUESTED                      RESERVED                  HELD BY
  n1     cpu=1750m,memory=11776Mi,pods=108   cpu=4,memory=16Gi,pods=110   cpu=250m,memory=512Mi,pods=1   cpu=2,memory=4Gi,pods=1   arc/r1 cpu=2,memory=4Gi (held)
Nodes it may not go to:
  gpu-1   taint dedicated=gpu:NoSchedule not tolerated
Verdict: no node has cpu=2250m free after reservations; the largest is n1 with 1750m
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("explain (-want,+got):\n%s", diff)
	}
}
