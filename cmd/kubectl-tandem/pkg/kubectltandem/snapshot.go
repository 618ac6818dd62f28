package kubectltandem

import (
	"context"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"

	"github.com/tandem-scheduler/tandem/contract"
)

// Rules say which pods are what, as the scheduler's configuration does:
// keep them in step with the WorkflowReservation args of your profile.
type Rules struct {
	// RunnerSelector selects runner pods (the plugin's runnerSelector).
	RunnerSelector labels.Selector
	// RunnerPodLabel is the label on workflow pods, and on container-step
	// pods or their Jobs, naming their runner pod (runnerPodLabel).
	RunnerPodLabel string
	// SchedulerNames are tandem's profiles: a record on a pod scheduled by
	// another scheduler holds nothing.
	SchedulerNames []string
}

// DefaultRules are the plugin's defaults and the shipped profile's name.
func DefaultRules() Rules {
	return Rules{
		RunnerSelector: labels.SelectorFromSet(labels.Set{"actions-ephemeral-runner": "True"}),
		RunnerPodLabel: "runner-pod",
		SchedulerNames: []string{"tandem-scheduler"},
	}
}

func (r *Rules) isRunner(pod *v1.Pod) bool {
	return r.RunnerSelector.Matches(labels.Set(pod.Labels))
}

func (r *Rules) isTandem(pod *v1.Pod) bool {
	return slices.Contains(r.SchedulerNames, pod.Spec.SchedulerName)
}

// Snapshot is what kubectl-tandem read from the cluster: one list of each
// kind, every computation works on it.
type Snapshot struct {
	// Nodes are every node, or none when the command needs none.
	Nodes []*v1.Node
	// Pods are the pods in the namespace looked at, or in all.
	Pods []*v1.Pod
	// Jobs are the Jobs carrying the runner-pod label (hooks v0.7.0 label
	// their container-step Jobs, not the Jobs' pods).
	Jobs []*batchv1.Job
	// Now is when the snapshot was taken.
	Now time.Time
	// Notes are what could not be read, for the user.
	Notes []string

	rules    Rules
	byRunner map[types.NamespacedName][]runnerPod
}

// runnerPod is a pod of a runner: its workflow pod or a container-step pod,
// labelled with the runner's name itself or (viaJob) through its Job.
type runnerPod struct {
	pod    *v1.Pod
	viaJob bool
}

// scope says what to read.
type scope struct {
	// namespace is where pods are read; "" for all namespaces.
	namespace string
	// nodes also reads the nodes.
	nodes bool
}

// gather reads a snapshot. Jobs are optional: without the right to list
// them, container-step pods of hooks v0.7.0 are not recognised, and a note
// says so.
func gather(ctx context.Context, client kubernetes.Interface, rules Rules, sc scope, now time.Time) (*Snapshot, error) {
	s := &Snapshot{Now: now, rules: rules}
	if sc.nodes {
		err := list(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Nodes().List(ctx, opts)
		}, metav1.ListOptions{}, func(n *v1.Node) { s.Nodes = append(s.Nodes, n) })
		if err != nil {
			return nil, fmt.Errorf("listing nodes: %w", err)
		}
	}
	err := list(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.CoreV1().Pods(sc.namespace).List(ctx, opts)
	}, metav1.ListOptions{}, func(p *v1.Pod) { s.Pods = append(s.Pods, p) })
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	err = list(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.BatchV1().Jobs(sc.namespace).List(ctx, opts)
	}, metav1.ListOptions{LabelSelector: rules.RunnerPodLabel}, func(j *batchv1.Job) { s.Jobs = append(s.Jobs, j) })
	switch {
	case apierrors.IsForbidden(err):
		s.Notes = append(s.Notes, "cannot list Jobs: container-step pods of hooks v0.7.0 (pods of a Job labelled "+rules.RunnerPodLabel+") are counted as ordinary pods")
	case err != nil:
		return nil, fmt.Errorf("listing jobs: %w", err)
	}
	s.index()
	return s, nil
}

// list reads every item of a list in pages of 500, as kubectl get does.
func list[T any](ctx context.Context, page pager.ListPageFunc, opts metav1.ListOptions, each func(*T)) error {
	p := pager.New(page)
	p.PageSize = 500
	return p.EachListItem(ctx, opts, func(obj runtime.Object) error {
		item, ok := any(obj).(*T)
		if !ok {
			return fmt.Errorf("unexpected %T in list", obj)
		}
		each(item)
		return nil
	})
}

// index finds every runner's pods: labelled with the runner's name, or
// controlled by a Job that is (the Job's UID checked, as the plugin does).
func (s *Snapshot) index() {
	jobs := map[types.UID]*batchv1.Job{}
	for _, j := range s.Jobs {
		jobs[j.UID] = j
	}
	s.byRunner = map[types.NamespacedName][]runnerPod{}
	for _, p := range s.Pods {
		if name, ok := p.Labels[s.rules.RunnerPodLabel]; ok {
			if name != "" {
				key := types.NamespacedName{Namespace: p.Namespace, Name: name}
				s.byRunner[key] = append(s.byRunner[key], runnerPod{pod: p})
			}
			continue
		}
		owner := metav1.GetControllerOf(p)
		if owner == nil || owner.Kind != "Job" {
			continue
		}
		if j := jobs[owner.UID]; j != nil && j.Namespace == p.Namespace && j.Name == owner.Name && j.Labels[s.rules.RunnerPodLabel] != "" {
			key := types.NamespacedName{Namespace: p.Namespace, Name: j.Labels[s.rules.RunnerPodLabel]}
			s.byRunner[key] = append(s.byRunner[key], runnerPod{pod: p, viaJob: true})
		}
	}
	for _, pods := range s.byRunner {
		slices.SortFunc(pods, func(a, b runnerPod) int { return contract.ClaimOrder(a.pod, b.pod) })
	}
}

// runnerPods returns the pods of runner, oldest first.
func (s *Snapshot) runnerPods(runner types.NamespacedName) []runnerPod {
	return s.byRunner[runner]
}

// pod returns the pod of that name, nil when the snapshot has none.
func (s *Snapshot) pod(namespace, name string) *v1.Pod {
	for _, p := range s.Pods {
		if p.Namespace == namespace && p.Name == name {
			return p
		}
	}
	return nil
}

// jobRunner returns the runner a pod belongs to through its Job, "" if none.
func (s *Snapshot) jobRunner(pod *v1.Pod) string {
	for key, pods := range s.byRunner {
		for _, rp := range pods {
			if rp.viaJob && rp.pod.UID == pod.UID {
				return key.Name
			}
		}
	}
	return ""
}

// scheduledSince is when the pod was bound (its PodScheduled condition),
// or created when it is not.
func scheduledSince(pod *v1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return pod.CreationTimestamp.Time
}
