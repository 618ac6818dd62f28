package workflowreservation

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/internal/tandemtest"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
	"github.com/tandem-scheduler/tandem/pkg/sizing/sizingtest"
)

// badInputTemplates are the hook templates the bad-input cases mount.
var badInputTemplates = &v1.ConfigMap{
	ObjectMeta: metav1.ObjectMeta{Namespace: "arc", Name: "hooks"},
	Data: map[string]string{
		"not-yaml.yaml":    "spec: [",
		"a-list.yaml":      "- name: $job\n",
		"deployment.yaml":  "kind: Deployment\nspec:\n  replicas: 3\n",
		"no-job.yaml":      "spec:\n  containers:\n  - name: envoy\n    resources:\n      requests: {cpu: 250m}\n",
		"limits-only.yaml": "spec:\n  containers:\n  - name: $job\n    resources:\n      limits: {cpu: \"2\"}\n",
		"claims.yaml":      "spec:\n  resourceClaims:\n  - name: gpu\n    resourceClaimTemplateName: one-gpu\n  containers:\n  - name: $job\n    resources:\n      requests: {cpu: 250m}\n      claims: [{name: gpu}]\n",
	},
}

// schedule runs a pod through PreFilter, Filter on each node and, if it fits
// nowhere, PostFilter, and returns the status the pod would carry.
func schedule(ctx context.Context, pl *WorkflowReservation, pod *v1.Pod, nodes ...fwk.NodeInfo) *fwk.Status {
	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, pod, nil); !status.IsSuccess() {
		return status
	}
	var reasons []string
	for _, ni := range nodes {
		status := pl.Filter(ctx, cs, pod, ni)
		if status.IsSuccess() {
			return status
		}
		reasons = append(reasons, status.Reasons()...)
	}
	_, status := pl.PostFilter(ctx, cs, pod, nil)
	return fwk.NewStatus(status.Code(), append(reasons, status.Reasons()...)...)
}

// heldReservations lists the reservations held as runner@node:state.
func heldReservations(pl *WorkflowReservation) []string { return tandemtest.Held(pl.store) }

// Bad input never crashes the plugin, never loses or leaks a reservation,
// and always says what is wrong: a PodScheduled message or a Warning event
// on the pod, and a log line.
func TestBadInput(t *testing.T) {
	template := func(file string) *v1.Pod {
		return sizingtest.WithHookTemplate(runnerPod("r").Obj(), "hooks", "/home/runner/pod-templates/"+file)
	}
	sized := func(annotation string) *v1.Pod {
		return runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, annotation).Req(units("1")).Obj()
	}
	fullNode := nodeInfo(threeUnits, st.MakePod().Namespace("x").Name("filler").Req(units("2")).Node("n1").Obj())
	runner1 := runnerPod("r1").Req(units("1")).Node("n1").Obj()

	tests := map[string]struct {
		reservations []*reservations.Reservation
		// args changes the default args.
		args func(*config.WorkflowReservationArgs)
		// act does what the case is about, with ctx carrying the
		// buffered logger (also given to handlers as logger).
		act        func(ctx context.Context, logger klog.Logger, pl *WorkflowReservation) *fwk.Status
		wantStatus string
		wantEvent  string
		wantLog    string
		wantHeld   []string
	}{
		"malformed size": {
			act:        runnerCycle(sized("cpu=plenty")),
			wantStatus: `invalid quantity "plenty" for cpu`,
			wantEvent:  "Warning " + contract.ReasonInvalidWorkflowSize,
			wantLog:    "Ignoring a broken workflow size source",
		},
		"negative size": {
			act:        runnerCycle(sized("memory=-1Gi")),
			wantStatus: "negative quantity",
			wantEvent:  "Warning " + contract.ReasonInvalidWorkflowSize,
			wantLog:    "broken workflow size source",
		},
		"zero size": {
			act:        runnerCycle(sized("cpu=0")),
			wantStatus: "zero quantity for cpu",
			wantEvent:  "Warning " + contract.ReasonInvalidWorkflowSize,
			wantLog:    "broken workflow size source",
		},
		// Issue 20: it wrapped to cpu=-616m, cancelling other runners' holds.
		"size beyond what the scheduler counts": {
			act:        runnerCycle(sized("cpu=18446744073709551")),
			wantStatus: "more cpu than tandem accepts",
			wantEvent:  "Warning " + contract.ReasonInvalidWorkflowSize,
			wantLog:    "broken workflow size source",
		},
		// Issue 20: the admin bounds what one runner may hold, not the
		// runner's author.
		"size beyond the admin's maximum, no default": {
			args: func(a *config.WorkflowReservationArgs) {
				a.MaxWorkflowRequests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}
			},
			act:        runnerCycle(sized("cpu=3")),
			wantStatus: "the size of its workflow pod is unknown",
			wantEvent:  "more than maxWorkflowRequests allows one runner (2)",
			wantLog:    "broken workflow size source",
		},
		"size beyond the admin's maximum, sized by the default": {
			args: func(a *config.WorkflowReservationArgs) {
				a.MaxWorkflowRequests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}
				a.DefaultWorkflowRequests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
			},
			act:       runnerCycle(sized("cpu=3")),
			wantEvent: "Warning " + contract.ReasonInvalidWorkflowSize,
			wantLog:   "broken workflow size source",
			wantHeld:  []string{"r@n1:held"},
		},
		"a record beyond the admin's maximum": {
			args: func(a *config.WorkflowReservationArgs) {
				a.MaxWorkflowRequests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}
			},
			act: func(_ context.Context, logger klog.Logger, pl *WorkflowReservation) *fwk.Status {
				r := &reservations.Reservation{Runner: key("r1"), RunnerUID: "r1", Node: "n1", Size: contract.Amount{MilliCPU: 3000, Pods: 1}, Source: contract.SourceAnnotation}
				value, err := reservations.Encode(r)
				if err != nil {
					return fwk.AsStatus(err)
				}
				pod := runner1.DeepCopy()
				pod.Annotations = map[string]string{contract.ReservationAnnotation: value}
				feederOf(pl).OnPod(logger, pod)
				return nil
			},
			wantEvent: "more than maxWorkflowRequests",
			wantLog:   "Cannot rebuild the reservation",
		},
		"unknown resource name": {
			act:        runnerCycle(sized("gpu=1")),
			wantStatus: `invalid resource name "gpu"`,
			wantEvent:  "Warning " + contract.ReasonInvalidWorkflowSize,
			wantLog:    "broken workflow size source",
		},
		"a resource given twice": {
			act:        runnerCycle(sized("cpu=1,cpu=2")),
			wantStatus: "given twice",
			wantEvent:  "Warning " + contract.ReasonInvalidWorkflowSize,
			wantLog:    "broken workflow size source",
		},
		"malformed step headroom beside a valid size": {
			act: runnerCycle(runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Annotation(contract.StepRequestsAnnotation, "cpu=lots").Obj()),
			// Sized without the headroom, and told.
			wantEvent: contract.StepRequestsAnnotation,
			wantLog:   "broken workflow size source",
			wantHeld:  []string{"r@n1:held"},
		},
		"hook template ConfigMap missing": {
			act:        runnerCycle(sizingtest.WithHookTemplate(runnerPod("r").Obj(), "gone", "/home/runner/pod-templates/default.yaml")),
			wantStatus: "ConfigMap arc/gone not found",
			wantEvent:  "Warning " + contract.ReasonInvalidWorkflowSize,
			wantLog:    "broken workflow size source",
		},
		"hook template key missing": {
			act:        runnerCycle(template("absent.yaml")),
			wantStatus: `has no key "absent.yaml"`,
			wantEvent:  "Warning " + contract.ReasonInvalidWorkflowSize,
			wantLog:    "broken workflow size source",
		},
		"hook template not YAML": {
			act:        runnerCycle(template("not-yaml.yaml")),
			wantStatus: "cannot parse",
			wantEvent:  "Warning " + contract.ReasonInvalidWorkflowSize,
			wantLog:    "broken workflow size source",
		},
		"hook template not a mapping": {
			act:        runnerCycle(template("a-list.yaml")),
			wantStatus: "cannot parse as a PodTemplateSpec",
			wantEvent:  "Warning " + contract.ReasonInvalidWorkflowSize,
			wantLog:    "broken workflow size source",
		},
		"hook template not a PodTemplateSpec": {
			act:        runnerCycle(template("deployment.yaml")),
			wantStatus: "asks for no resources",
			wantEvent:  "Warning " + contract.ReasonInvalidWorkflowSize,
			wantLog:    "broken workflow size source",
		},
		"hook template without $job": {
			act:       runnerCycle(template("no-job.yaml")),
			wantEvent: "Warning " + contract.ReasonIncompleteHookTemplate + " hook template",
			wantLog:   "sizes the workflow pod only in part",
			wantHeld:  []string{"r@n1:held"},
		},
		// Issue 41: devices a template's claims ask for are not held; the
		// runner is told so, and its cpu is held.
		"hook template with resourceClaims": {
			act:       runnerCycle(template("claims.yaml")),
			wantEvent: `gives the workflow pod resourceClaims (gpu): tandem holds no device for them`,
			wantLog:   "sizes the workflow pod only in part",
			wantHeld:  []string{"r@n1:held"},
		},
		"hook template path on no volume": {
			act: runnerCycle(func() *v1.Pod {
				pod := template("default.yaml")
				pod.Spec.Containers[0].VolumeMounts = nil
				return pod
			}()),
			wantStatus: "is not on any volume mount",
			wantEvent:  "Warning " + contract.ReasonInvalidWorkflowSize,
			wantLog:    "broken workflow size source",
		},
		"a runner whose pair fits no node": {
			act: func(ctx context.Context, _ klog.Logger, pl *WorkflowReservation) *fwk.Status {
				return schedule(ctx, pl, sized("cpu=2"), fullNode)
			},
			wantStatus: "no node has room for both",
			wantLog:    "Runner fits no node together with its workflow pod",
		},
		"sizing annotation on a pod that is not a runner": {
			act: func(ctx context.Context, _ klog.Logger, pl *WorkflowReservation) *fwk.Status {
				return schedule(ctx, pl, st.MakePod().Namespace("arc").Name("x").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj(), nodeInfo(threeUnits))
			},
			wantEvent: "Warning " + contract.ReasonIgnoredAnnotation,
			wantLog:   "not a runner; ignoring it",
		},
		"a second workflow pod of a claimed runner": {
			reservations: []*reservations.Reservation{claimedBy(oneUnitReservation("r1"), "first")},
			act: func(ctx context.Context, _ klog.Logger, pl *WorkflowReservation) *fwk.Status {
				return schedule(ctx, pl, workflowPod("r1").UID("second").Req(units("1")).Obj(), nodeInfo(threeUnits, runner1))
			},
			wantEvent: "Warning " + contract.ReasonNoReservation + " Scheduled as an ordinary pod: the reservation of runner arc/r1 was claimed by another workflow pod",
			wantLog:   "claims no reservation",
			wantHeld:  []string{"r1@n1:claimed"},
		},
		"a workflow pod whose runner does not exist": {
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			act: func(ctx context.Context, _ klog.Logger, pl *WorkflowReservation) *fwk.Status {
				return schedule(ctx, pl, workflowPod("nobody").Req(units("1")).Obj(), nodeInfo(threeUnits, runner1))
			},
			wantEvent: "Warning " + contract.ReasonNoReservation + " Scheduled as an ordinary pod: runner arc/nobody holds no reservation",
			wantLog:   "claims no reservation",
			wantHeld:  []string{"r1@n1:held"},
		},
		"a workflow pod of a terminal runner": {
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			act: func(ctx context.Context, logger klog.Logger, pl *WorkflowReservation) *fwk.Status {
				finished := runner1.DeepCopy()
				finished.Status.Phase = v1.PodSucceeded
				feederOf(pl).OnPodDelete(logger, finished)
				return schedule(ctx, pl, workflowPod("r1").Req(units("1")).Obj(), nodeInfo(threeUnits))
			},
			wantEvent: "Warning " + contract.ReasonNoReservation,
			wantLog:   "Released reservation",
		},
		// Issue 20: it used up r1's reservation, so anyone who may create
		// pods in the namespace could void another runner's room.
		"a workflow pod bound to another node than its reservation": {
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			act: func(_ context.Context, logger klog.Logger, pl *WorkflowReservation) *fwk.Status {
				feederOf(pl).OnPod(logger, workflowPod("r1").Node("n2").Obj())
				return nil
			},
			wantEvent: "Warning " + contract.ReasonNoReservation + " Runs on node n2, not on node n1 where runner r1's room is reserved: it claims nothing",
			wantLog:   "runs on another node than the runner's reservation; it claims nothing",
			wantHeld:  []string{"r1@n1:held"},
		},
		"a workflow pod scheduled to another node than its reservation": {
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			act: func(ctx context.Context, _ klog.Logger, pl *WorkflowReservation) *fwk.Status {
				cs := framework.NewCycleState()
				pod := workflowPod("r1").Obj()
				if _, status := pl.PreFilter(ctx, cs, pod, nil); !status.IsSuccess() {
					return status
				}
				return pl.Reserve(ctx, cs, pod, "n2")
			},
			wantEvent: "Warning " + contract.ReasonNoReservation + " Scheduled to node n2, not to node n1 where runner r1's room is reserved: it claims nothing",
			wantLog:   "scheduled to another node than its runner's reservation; it claims nothing",
			wantHeld:  []string{"r1@n1:held"},
		},
		"a workflow pod larger than its reservation": {
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			act: func(ctx context.Context, _ klog.Logger, pl *WorkflowReservation) *fwk.Status {
				return schedule(ctx, pl, workflowPod("r1").Req(units("2")).Obj(), nodeInfo(threeUnits, runner1, st.MakePod().Namespace("x").Name("f").Req(units("1")).Node("n1").Obj()))
			},
			wantStatus: "needs cpu=2; its reservation on node n1 holds cpu=1",
			wantLog:    "Workflow pod does not fit beside its reservation",
			wantHeld:   []string{"r1@n1:held"},
		},
		"a stale workflow pod of a recreated runner": {
			reservations: []*reservations.Reservation{func() *reservations.Reservation {
				r := oneUnitReservation("r1")
				r.RunnerCreated = later.Time
				return r
			}()},
			act: func(ctx context.Context, _ klog.Logger, pl *WorkflowReservation) *fwk.Status {
				return schedule(ctx, pl, workflowPod("r1").CreationTimestamp(earlier).Req(units("1")).Obj(), nodeInfo(threeUnits, runner1))
			},
			wantEvent: "Warning " + contract.ReasonNoReservation + " Scheduled as an ordinary pod: the pod was created before runner arc/r1",
			wantLog:   "claims no reservation",
			wantHeld:  []string{"r1@n1:held"},
		},
		"a node deleted under a reservation": {
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			act: func(_ context.Context, logger klog.Logger, pl *WorkflowReservation) *fwk.Status {
				feederOf(pl).OnNodeDelete(logger, st.MakeNode().Name("n1").Obj())
				feederOf(pl).OnPod(logger, runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj())
				return nil
			},
			wantEvent: "Normal " + contract.ReasonReleased + " Released cpu=1: node n1 was deleted",
			wantLog:   "node_deleted",
		},
		"an unreadable recorded reservation": {
			act: func(_ context.Context, logger klog.Logger, pl *WorkflowReservation) *fwk.Status {
				feederOf(pl).OnPod(logger, runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, "{").Obj())
				return nil
			},
			wantEvent: "Warning " + contract.ReasonInvalidReservation,
			wantLog:   "Cannot rebuild the reservation",
		},
		"a reservation recorded for another pod": {
			act: func(_ context.Context, logger klog.Logger, pl *WorkflowReservation) *fwk.Status {
				feederOf(pl).OnPod(logger, runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("copied-from-elsewhere")).Obj())
				return nil
			},
			wantEvent: "Warning " + contract.ReasonInvalidReservation + ` annotation tandem.dev/reservation: recorded for pod UID "copied-from-elsewhere"`,
			wantLog:   "Cannot rebuild the reservation",
		},
		"a recorded reservation of nothing": {
			act: func(_ context.Context, logger klog.Logger, pl *WorkflowReservation) *fwk.Status {
				feederOf(pl).OnPod(logger, runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, `{"node":"n1","requests":{"cpu":"0"},"runnerUID":"r1"}`).Obj())
				return nil
			},
			wantEvent: "Warning " + contract.ReasonInvalidReservation + " annotation tandem.dev/reservation: holds no valid requests",
			wantLog:   "Cannot rebuild the reservation",
		},
		"a hand-written reservation on a pending runner": {
			act: func(ctx context.Context, _ klog.Logger, pl *WorkflowReservation) *fwk.Status {
				pod := runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").
					Annotation(contract.ReservationAnnotation, `{"node":"n9","requests":{"cpu":"64"},"runnerUID":"r"}`).Obj()
				cs := framework.NewCycleState()
				pl.PreFilter(ctx, cs, pod, nil)
				pl.Reserve(ctx, cs, pod, "n1")
				if r, _ := pl.store.Get(key("r")); r.Size.String() != "cpu=1" {
					return fwk.NewStatus(fwk.Error, "reservation "+r.Size.String()+" taken from the hand-written record")
				}
				return fwk.NewStatus(fwk.Success, "the record is replaced by the Binding's")
			},
			wantStatus: "replaced by the Binding's",
			wantHeld:   []string{"r@n1:held"},
		},
	}
	if len(tests) < 20 {
		t.Fatalf("%d bad-input cases, want at least 20", len(tests))
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			args := defaultArgs()
			if tc.args != nil {
				tc.args(args)
			}
			pl, h := newTestPlugin(t, args, true, badInputTemplates)
			drainEvents(h)
			for _, r := range tc.reservations {
				pl.store.Take(r)
			}
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(4)))
			ctx := klog.NewContext(context.Background(), logger)
			status := tc.act(ctx, logger, pl)
			if tc.wantStatus != "" && (status == nil || !strings.Contains(status.Message(), tc.wantStatus)) {
				t.Errorf("status %v, want a message containing %q", status, tc.wantStatus)
			}
			events := strings.Join(drainEvents(h), "\n")
			if tc.wantEvent != "" && !strings.Contains(events, tc.wantEvent) {
				t.Errorf("events:\n%s\nwant one containing %q", events, tc.wantEvent)
			}
			logs := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
			if tc.wantLog != "" && !strings.Contains(logs, tc.wantLog) {
				t.Errorf("log:\n%s\nwant a line containing %q", logs, tc.wantLog)
			}
			if got := heldReservations(pl); strings.Join(got, " ") != strings.Join(tc.wantHeld, " ") {
				t.Errorf("reservations %v, want %v", got, tc.wantHeld)
			}
		})
	}
}

// runnerCycle schedules a runner on an empty node n1 and, if it fits,
// reserves there: a broken source must leave no reservation behind.
func runnerCycle(pod *v1.Pod) func(ctx context.Context, _ klog.Logger, pl *WorkflowReservation) *fwk.Status {
	return func(ctx context.Context, _ klog.Logger, pl *WorkflowReservation) *fwk.Status {
		cs := framework.NewCycleState()
		if _, status := pl.PreFilter(ctx, cs, pod, nil); !status.IsSuccess() {
			return status
		}
		if status := pl.Filter(ctx, cs, pod, nodeInfo(threeUnits)); !status.IsSuccess() {
			return status
		}
		return pl.Reserve(ctx, cs, pod, "n1")
	}
}
