// Package demo runs the seed scenarios of ARC kubernetes mode on a real
// control plane: runner pods go through a scheduler, and once a runner is
// bound the demo creates its workflow pod pinned with nodeName, as hooks
// v0.7.0 does, and admits or rejects it the way the kubelet would.
package demo

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tandem-scheduler/tandem/pkg/workflowreservation"
	"github.com/tandem-scheduler/tandem/test/controlplane"
	"github.com/tandem-scheduler/tandem/test/inprocess"
)

const (
	// Namespace holds the demo's pods.
	Namespace = "arc-runners"
	// SchedulerName is the schedulerName of every demo pod; the profile
	// behind it is either plain kube-scheduler or tandem.
	SchedulerName = "tandem-scheduler"
	nodeCPU       = "3"
	unitCPU       = "1"
)

// Scheduler says which profile serves SchedulerName.
type Scheduler string

const (
	Plain  Scheduler = "kube-scheduler"
	Tandem Scheduler = "tandem"
)

// Case is one scenario.
type Case struct {
	Name        string
	Description string
	// Scoring is the NodeResourcesFit strategy: LeastAllocated (the
	// default) or MostAllocated (bin-packing).
	Scoring string
	Nodes   int
	// Waves of runners: every runner of a wave arrives at once; the
	// workflow pods of a wave's bound runners are created before the
	// next wave arrives.
	Waves [][]string
}

// Cases are the two scenarios of `make demo`.
var Cases = []Case{
	{
		Name:        "seed",
		Description: "pair 1 lands, its job starts, then runner 2 arrives (bin-packing: MostAllocated)",
		Scoring:     "MostAllocated",
		Nodes:       2,
		Waves:       [][]string{{"runner-1"}, {"runner-2"}},
	},
	{
		Name:        "burst",
		Description: "4 runners at once, 2 pair slots (default scoring: LeastAllocated)",
		Scoring:     "LeastAllocated",
		Nodes:       2,
		Waves:       [][]string{{"runner-1", "runner-2", "runner-3", "runner-4"}},
	},
}

// Outcome of one runner and its workflow pod.
type Outcome struct {
	Runner string
	// Node is where the runner landed, empty while it waits.
	Node string
	// Pending is the scheduler's message for a runner that waits.
	Pending string
	// Workflow is "admitted", "rejected: <reason>" or empty when there is no
	// workflow pod (the runner waits).
	Workflow string
	// Admitted reports the workflow pod was admitted.
	Admitted bool
	// FreeCPU is the node's free cpu when the workflow pod arrived.
	FreeCPU string
}

// Result of one case under one scheduler.
type Result struct {
	Case      Case
	Scheduler Scheduler
	Outcomes  []Outcome
}

// Rejected counts workflow pods the kubelet would reject: failed jobs.
func (r Result) Rejected() int {
	n := 0
	for _, o := range r.Outcomes {
		if o.Workflow != "" && !o.Admitted {
			n++
		}
	}
	return n
}

// Waiting counts runners left pending.
func (r Result) Waiting() int {
	n := 0
	for _, o := range r.Outcomes {
		if o.Node == "" {
			n++
		}
	}
	return n
}

// SchedulerConfig is the KubeSchedulerConfiguration of one run: the same
// scoring strategy, with tandem counting reserved room as used.
func SchedulerConfig(s Scheduler, scoring string) string {
	return inprocess.Config(inprocess.Profile{SchedulerName: SchedulerName, Tandem: s == Tandem, Scoring: scoring})
}

// Run runs c under s on the control plane behind cfg. It starts and stops
// its own scheduler and leaves no nodes or pods behind.
func Run(ctx context.Context, cfg *rest.Config, c Case, s Scheduler) (Result, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Result{}, err
	}
	if err := controlplane.EnsureNamespace(ctx, client, Namespace); err != nil {
		return Result{}, err
	}
	var nodes []string
	for i := 1; i <= c.Nodes; i++ {
		name := fmt.Sprintf("node-%d", i)
		capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse(nodeCPU), v1.ResourceMemory: resource.MustParse("12Gi"), v1.ResourcePods: resource.MustParse("110")}
		if _, err := controlplane.CreateNode(ctx, client, name, capacity, nil); err != nil {
			return Result{}, err
		}
		nodes = append(nodes, name)
	}
	defer cleanup(client, nodes)

	sched, err := inprocess.Start(ctx, cfg, SchedulerConfig(s, c.Scoring))
	if err != nil {
		return Result{}, err
	}
	defer sched.Stop()

	res := Result{Case: c, Scheduler: s}
	for _, wave := range c.Waves {
		for _, name := range wave {
			if _, err := client.CoreV1().Pods(Namespace).Create(ctx, runnerPod(name), metav1.CreateOptions{}); err != nil {
				return res, err
			}
		}
		for _, name := range wave {
			o, err := settle(ctx, client, name)
			if err != nil {
				return res, err
			}
			if o.Node != "" {
				if err := startJob(ctx, client, &o); err != nil {
					return res, err
				}
			}
			res.Outcomes = append(res.Outcomes, o)
		}
	}
	return res, nil
}

func runnerPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: Namespace,
			Labels: map[string]string{
				"actions-ephemeral-runner":          "True",
				"app.kubernetes.io/component":       "runner",
				"app.kubernetes.io/part-of":         "gha-runner-scale-set",
				"actions.github.com/scale-set-name": "demo",
			},
			// The workflow pod's size; a hook template works too.
			Annotations: map[string]string{workflowreservation.WorkflowRequestsAnnotation: "cpu=" + unitCPU},
		},
		Spec: v1.PodSpec{
			SchedulerName: SchedulerName,
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name:      "runner",
				Image:     "actions-runner",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(unitCPU)}},
			}},
		},
	}
}

// settle waits until the runner is bound, or the scheduler has marked it
// unschedulable.
func settle(ctx context.Context, client kubernetes.Interface, name string) (Outcome, error) {
	o := Outcome{Runner: name}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pod, err := client.CoreV1().Pods(Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if pod.Spec.NodeName != "" {
			o.Node = pod.Spec.NodeName
			return true, nil
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
				o.Pending = c.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return o, fmt.Errorf("runner %s neither bound nor marked unschedulable: %w", name, err)
	}
	return o, nil
}

// startJob creates the runner's workflow pod the way hooks v0.7.0 does
// (nodeName = the runner's node, label runner-pod) and admits it as the
// kubelet would: rejected pods are marked Failed with the kubelet's reason.
func startJob(ctx context.Context, client kubernetes.Interface, o *Outcome) error {
	node, err := client.CoreV1().Nodes().Get(ctx, o.Node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	onNode, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + o.Node})
	if err != nil {
		return err
	}
	var admitted []*v1.Pod
	for i := range onNode.Items {
		p := &onNode.Items[i]
		if p.Status.Phase != v1.PodFailed && p.Status.Phase != v1.PodSucceeded {
			admitted = append(admitted, p)
		}
	}
	ni := framework.NewNodeInfo(admitted...)
	ni.SetNode(node)
	free := ni.Allocatable.MilliCPU - ni.Requested.MilliCPU
	o.FreeCPU = resource.NewMilliQuantity(free, resource.DecimalSI).String()

	wf := workflowPod(o.Runner, o.Node)
	created, err := client.CoreV1().Pods(Namespace).Create(ctx, wf, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	results := scheduler.AdmissionCheck(created, ni, false)
	if len(results) == 0 {
		o.Admitted, o.Workflow = true, "admitted"
		created.Status.Phase = v1.PodRunning
	} else {
		reason, message := "UnexpectedAdmissionError", results[0].Reason
		if ir := results[0].InsufficientResource; ir != nil {
			reason = "OutOf" + string(ir.ResourceName)
			message = fmt.Sprintf("Pod was rejected: Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
				ir.ResourceName, ir.Requested, ir.Used, ir.Capacity)
		}
		o.Workflow = "rejected: " + reason
		created.Status.Phase, created.Status.Reason, created.Status.Message = v1.PodFailed, reason, message
	}
	_, err = client.CoreV1().Pods(Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

func workflowPod(runner, node string) *v1.Pod {
	name := runner
	if len(name) > 54 {
		name = name[:54]
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name + "-workflow",
			Namespace: Namespace,
			Labels:    map[string]string{"runner-pod": runner},
		},
		Spec: v1.PodSpec{
			NodeName:      node,
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name:      "job",
				Image:     "job-image",
				Command:   []string{"tail", "-f", "/dev/null"},
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(unitCPU)}},
			}},
		},
	}
}

// cleanup removes the run's pods and nodes, so the next run starts empty.
func cleanup(client kubernetes.Interface, nodes []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zero := int64(0)
	_ = client.CoreV1().Pods(Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	for _, n := range nodes {
		_ = client.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
	}
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Everything().String()})
		return err == nil && len(pods.Items) == 0, nil
	})
}
