// Package kubelet emulates the parts of the kubelet that decide a job's fate
// in ARC kubernetes mode: resource admission of the pods bound to a node
// (with the kubelet's own admission code, so reasons and messages are the
// real ones), the status of admitted pods, and their termination.
package kubelet

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	schedulerframework "k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
)

// Result is the kubelet's admission verdict on a pod.
type Result = lifecycle.PodAdmitResult

// Admit runs the kubelet's predicate admission (the handler the kubelet
// installs, lifecycle.NewPredicateAdmitHandler, which runs the scheduler's
// AdmissionCheck: resources, host ports, node name and affinity, NoExecute
// taints) for pod on node, given the pods the kubelet has already admitted
// there. Terminal pods in admitted are ignored, as the kubelet does: they no
// longer hold resources. A pod that does not fit gets Reason OutOfcpu,
// OutOfmemory, OutOfephemeral-storage, OutOfpods or OutOf<extended resource>.
func Admit(node *v1.Node, pod *v1.Pod, admitted []*v1.Pod) Result {
	active := make([]*v1.Pod, 0, len(admitted))
	for _, p := range admitted {
		if !contract.IsTerminal(p) && p.UID != pod.UID {
			active = append(active, p)
		}
	}
	noPluginResources := func(*schedulerframework.NodeInfo, *lifecycle.PodAdmitAttributes) error { return nil }
	h := lifecycle.NewPredicateAdmitHandler(nodeGetter(node), lifecycle.NewAdmissionFailureHandlerStub(), noPluginResources)
	return admit(h, &lifecycle.PodAdmitAttributes{Pod: pod, OtherPods: active})
}

// RejectedStatus is the status the kubelet writes for a pod it did not
// admit (Kubelet.rejectPod).
func RejectedStatus(pod *v1.Pod, r Result) v1.PodStatus {
	return v1.PodStatus{
		Phase:    v1.PodFailed,
		Reason:   r.Reason,
		Message:  "Pod was rejected: " + r.Message,
		QOSClass: pod.Status.QOSClass,
	}
}

// RunningStatus is the status of an admitted pod whose containers all started.
func RunningStatus(pod *v1.Pod, now time.Time) v1.PodStatus {
	t := metav1.NewTime(now)
	status := v1.PodStatus{
		Phase:     v1.PodRunning,
		StartTime: &t,
		QOSClass:  pod.Status.QOSClass,
		HostIP:    "10.0.0.1",
		Conditions: []v1.PodCondition{
			{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: t},
			{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: t},
			{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: t},
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: t},
		},
	}
	for _, c := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, v1.ContainerStatus{
			Name:    c.Name,
			Image:   c.Image,
			ImageID: c.Image,
			Ready:   true,
			Started: ptr.To(true),
			State:   v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: t}},
		})
	}
	return status
}

// TerminatedStatus is the status of a pod whose containers all exited with
// exitCode: Succeeded for 0 (restartPolicy Never), else Failed.
func TerminatedStatus(pod *v1.Pod, exitCode int32, now time.Time) v1.PodStatus {
	t := metav1.NewTime(now)
	status := *pod.Status.DeepCopy()
	status.Phase, status.Reason = v1.PodSucceeded, "Completed"
	if exitCode != 0 {
		status.Phase, status.Reason = v1.PodFailed, "Error"
	}
	status.Conditions = []v1.PodCondition{
		{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: t},
		{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: t},
		{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: t},
	}
	status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, v1.ContainerStatus{
			Name:  c.Name,
			Image: c.Image,
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				ExitCode: exitCode, Reason: status.Reason, FinishedAt: t,
			}},
		})
	}
	return status
}
