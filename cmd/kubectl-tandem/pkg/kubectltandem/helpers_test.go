package kubectltandem

import (
	"encoding/json"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
)

// t0 is when the test objects were created.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// podWrapper builds test pods, in the manner of the scheduler's
// st.MakePod() (which this module cannot import).
type podWrapper struct{ v1.Pod }

func makePod(ns, name string) *podWrapper {
	return &podWrapper{v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid"), CreationTimestamp: metav1.NewTime(t0)},
		Spec:       v1.PodSpec{SchedulerName: "tandem-scheduler", Containers: []v1.Container{{Name: "main"}}},
		Status:     v1.PodStatus{Phase: v1.PodPending},
	}}
}

func (p *podWrapper) obj() *v1.Pod { return &p.Pod }

func (p *podWrapper) req(rl v1.ResourceList) *podWrapper {
	p.Spec.Containers[0].Resources.Requests = rl
	return p
}

func (p *podWrapper) label(k, v string) *podWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

func (p *podWrapper) annotate(k, v string) *podWrapper {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[k] = v
	return p
}

func (p *podWrapper) runner() *podWrapper { return p.label("actions-ephemeral-runner", "True") }

func (p *podWrapper) workflowOf(runner string) *podWrapper { return p.label("runner-pod", runner) }

// node binds the pod, its PodScheduled condition a minute after t0.
func (p *podWrapper) node(n string) *podWrapper {
	p.Spec.NodeName = n
	p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(time.Minute))})
	return p
}

func (p *podWrapper) unschedulable(msg string) *podWrapper {
	p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: msg, LastTransitionTime: metav1.NewTime(t0.Add(time.Minute))})
	return p
}

func (p *podWrapper) phase(ph v1.PodPhase) *podWrapper {
	p.Status.Phase = ph
	return p
}

func (p *podWrapper) created(d time.Duration) *podWrapper {
	p.CreationTimestamp = metav1.NewTime(t0.Add(d))
	return p
}

func (p *podWrapper) scheduler(name string) *podWrapper {
	p.Spec.SchedulerName = name
	return p
}

func (p *podWrapper) ownedByJob(j *batchv1.Job) *podWrapper {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: ptr.To(true)}}
	return p
}

// placeholderOf makes the pod runner's placeholder (reservationMode Pods).
func (p *podWrapper) placeholderOf(runner string) *podWrapper {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: runner, UID: types.UID(runner), Controller: ptr.To(true)}}
	return p.label(contract.PlaceholderLabel, "true").annotate(contract.PlaceholderOfAnnotation, runner)
}

func (p *podWrapper) nodeSelector(k, v string) *podWrapper {
	p.Spec.NodeSelector = map[string]string{k: v}
	return p
}

// record records rec on the pod (its UID unless rec names one).
func (p *podWrapper) record(rec contract.Recorded) *podWrapper {
	if rec.RunnerUID == "" {
		rec.RunnerUID = p.UID
	}
	data, err := json.Marshal(rec)
	if err != nil {
		panic(err)
	}
	return p.annotate(contract.ReservationAnnotation, string(data))
}

func makeNode(name string, alloc v1.ResourceList) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Status:     v1.NodeStatus{Allocatable: alloc, Capacity: alloc},
	}
}

func makeJob(ns, name, runner string) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid"), Labels: map[string]string{"runner-pod": runner}}}
}

// rl parses "cpu=1,memory=2Gi" into a ResourceList.
func rl(s string) v1.ResourceList {
	if s == "" {
		return v1.ResourceList{}
	}
	l, err := parseResourceList(s)
	if err != nil {
		panic(err)
	}
	return l
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

// snapshot builds a snapshot of objects with the default rules.
func snapshot(nodes []*v1.Node, pods []*v1.Pod, jobs []*batchv1.Job) *Snapshot {
	s := &Snapshot{Nodes: nodes, Pods: pods, Jobs: jobs, Now: t0.Add(time.Hour), rules: DefaultRules()}
	s.index()
	return s
}
