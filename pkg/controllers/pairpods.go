package controllers

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
)

// Pair pods. Cluster Autoscaler and Karpenter take every pending pod that a
// scheduler marked Unschedulable, whatever its schedulerName, simulate it
// with the in-tree plugins and drop it if it fits an existing node. A runner
// that tandem keeps pending because a node has room for the runner but not
// for the pair fits there in that simulation: no node is added. So while a
// runner waits for pair room, a pending pod of the pair's size stands for it:
// it fits no existing node, and the autoscaler adds one where the pair fits.
// tandem never binds it; it goes when the runner is bound or gone.

// PairPodIndex indexes pair pods by "<namespace>/<runner>".
const PairPodIndex = "tandem.dev/pair-of"

// RunnerKey names a runner incarnation whose pair pod is to be checked.
type RunnerKey struct {
	Namespace, Name string
	UID             types.UID
}

// PairPods keeps each waiting runner's pair pod in step with what the
// scheduling cycles asked for: PostFilter says a runner waits for pair room
// (want), the handlers say a runner was bound or went (check); a worker,
// on the leader only, creates and deletes the pods.
type PairPods struct {
	client   clientset.Interface
	pods     corelisters.PodLister
	indexer  cache.Indexer
	recorder func(pod *v1.Pod, eventType, reason, note string)
	leaderQueue

	mu sync.Mutex
	// want holds the pair pod each waiting runner asked for, by runner UID.
	want map[types.UID]*v1.Pod
	// warned holds, by runner UID and reason, the runners told once that
	// their pair pod cannot be created or its name is taken (every retry
	// would say it again).
	warned map[warnKey]bool
}

func (p *PairPods) firstWarning(uid types.UID, reason string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := warnKey{uid, reason}
	if p.warned[k] {
		return false
	}
	p.warned[k] = true
	return true
}

// NewPairPods returns the pair pods of waiting runners, created and deleted
// through client on the leader only; recorder reports on a runner.
func NewPairPods(client clientset.Interface, pods corelisters.PodLister, indexer cache.Indexer, leader *leadership.Leadership, recorder func(*v1.Pod, string, string, string)) *PairPods {
	return &PairPods{
		client: client, pods: pods, indexer: indexer, recorder: recorder,
		leaderQueue: newLeaderQueue("tandem-pair-pods", "pair pod", leader),
		want:        map[types.UID]*v1.Pod{},
		warned:      map[warnKey]bool{},
	}
}

// IndexPairPod indexes a pair pod by the runner it stands for.
func IndexPairPod(obj any) ([]string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok || !contract.IsPairPod(pod) || pod.Annotations[contract.PairOfAnnotation] == "" {
		return nil, nil
	}
	return []string{pod.Namespace + "/" + pod.Annotations[contract.PairOfAnnotation]}, nil
}

// Ask records that runner waits for pair room and wants pod to stand for it.
func (p *PairPods) Ask(runner *v1.Pod, pod *v1.Pod) {
	if p == nil || !p.leader.IsLeader() {
		return
	}
	p.mu.Lock()
	old, had := p.want[runner.UID]
	p.want[runner.UID] = pod
	p.mu.Unlock()
	if had && old.Annotations[contract.PairSizeAnnotation] == pod.Annotations[contract.PairSizeAnnotation] {
		return // asked already; a failed sync retries with backoff
	}
	p.queue.Add(RunnerKey{Namespace: runner.Namespace, Name: runner.Name, UID: runner.UID})
}

// Observed has the worker look at a pair pod the informer shows: one
// created while its runner was being bound must go too.
func (p *PairPods) Observed(pod *v1.Pod) {
	if p == nil || !p.leader.IsLeader() || !contract.IsPairPod(pod) {
		return
	}
	p.queue.Add(RunnerKey{Namespace: pod.Namespace, Name: pod.Annotations[contract.PairOfAnnotation], UID: metav1.GetControllerOf(pod).UID})
}

// Check has the worker look at runner's pair pod again: the runner was
// bound or went.
func (p *PairPods) Check(runner *v1.Pod) {
	if p == nil || !p.leader.IsLeader() {
		return
	}
	if !p.hasPairPod(runner.Namespace, runner.Name) && !p.Wanted(runner.UID) {
		return
	}
	p.queue.Add(RunnerKey{Namespace: runner.Namespace, Name: runner.Name, UID: runner.UID})
}

// Wanted reports whether the runner incarnation uid asked for a pair pod.
func (p *PairPods) Wanted(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.want[uid]
	return ok
}

func (p *PairPods) hasPairPod(namespace, runner string) bool {
	objs, err := p.indexer.ByIndex(PairPodIndex, namespace+"/"+runner)
	return err == nil && len(objs) > 0
}

// Run works the queue while this replica leads.
func (p *PairPods) Run(ctx context.Context) { p.work(ctx, p.sync) }

// sync makes the runner's pair pods what they should be: one of the wanted
// size while the runner waits unbound, none otherwise.
func (p *PairPods) sync(ctx context.Context, key RunnerKey) error {
	logger := klog.FromContext(ctx)
	runner, err := p.pods.Pods(key.Namespace).Get(key.Name)
	waiting := err == nil && runner.UID == key.UID && runner.Spec.NodeName == "" && runner.DeletionTimestamp == nil && !contract.IsTerminal(runner)
	p.mu.Lock()
	want := p.want[key.UID]
	if !waiting {
		delete(p.want, key.UID)
		delete(p.warned, warnKey{key.UID, contract.ReasonPairPodFailed})
		delete(p.warned, warnKey{key.UID, contract.ReasonPairPodNameTaken})
		want = nil
	}
	p.mu.Unlock()

	pods, err := keyedPods(p.indexer, PairPodIndex, contract.IsPairPod, key, runner)
	if err != nil {
		return err
	}
	ownFirst(pods, "", contract.PairPodName(key.Name))
	have := false
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			// Being deleted: by this worker, or held by someone's finalizer,
			// for which a delete again and again would only spend the
			// budget.
			continue
		}
		owner := metav1.GetControllerOf(pod).UID
		if owner == key.UID && waiting && !have {
			if want == nil || pod.Annotations[contract.PairSizeAnnotation] == want.Annotations[contract.PairSizeAnnotation] && holdsAsMuch(pod, want) {
				// Wanted, or still waiting with no word yet (a new leader).
				// One: a second (created under another name) goes.
				have = true
				continue
			}
		}
		if err := p.delete(ctx, pod); err != nil {
			return err
		}
		logger.V(2).Info("Deleted pair pod", "pod", klog.KObj(pod), "runner", klog.KRef(key.Namespace, key.Name), "runnerWaiting", waiting)
	}
	if want == nil || have {
		return nil
	}
	created, err := p.client.CoreV1().Pods(key.Namespace).Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = p.createRenamed(ctx, key, runner, want, err)
	}
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			// This runner's pair pod, which the informer has not shown
			// yet: look again.
			return err
		}
		metrics.PairPods.WithLabelValues(metrics.PairPodFailed).Inc()
		if p.firstWarning(key.UID, contract.ReasonPairPodFailed) {
			p.recorder(runner, v1.EventTypeWarning, contract.ReasonPairPodFailed, Truncate(fmt.Sprintf("Cannot create pending pod %s for cluster autoscalers: %v", want.Name, err)))
		}
		return err
	}
	metrics.PairPods.WithLabelValues(metrics.PairPodCreated).Inc()
	logger.V(2).Info("Created pair pod for cluster autoscalers", "pod", klog.KObj(created), "runner", klog.KObj(runner), "requests", want.Spec.Containers[0].Resources.Requests)
	p.recorder(runner, v1.EventTypeNormal, contract.ReasonPairPodCreated, Truncate(fmt.Sprintf(
		"Created pending pod %s requesting %s for cluster autoscalers: no node has room for the runner and its workflow pod together",
		created.Name, contract.AmountFromList(want.Spec.Containers[0].Resources.Requests))))
	return nil
}

// createRenamed creates want under a generated name when its own name is
// taken (exists, the create's error) by anything but the runner's own pair
// pod: a pod that is not a pair pod (someone took the name first: the
// runner is told once) or one that is going. The runner's own, which the
// informer does not show yet, returns exists.
func (p *PairPods) createRenamed(ctx context.Context, key RunnerKey, runner, want *v1.Pod, exists error) (*v1.Pod, error) {
	old, taken := whoHasName(ctx, p.client, want, contract.IsPairPod, key.UID)
	if taken == nameOwn {
		return nil, exists
	}
	if taken == nameSquatted {
		metrics.PairPods.WithLabelValues(metrics.PairPodNameTaken).Inc()
		klog.FromContext(ctx).Info("A pod that is not tandem's has the pair pod's name; creating it under another", "pod", klog.KObj(old), "runner", klog.KObj(runner))
		if p.firstWarning(key.UID, contract.ReasonPairPodNameTaken) {
			p.recorder(runner, v1.EventTypeWarning, contract.ReasonPairPodNameTaken, Truncate(fmt.Sprintf(
				"Pod %s, which tandem did not create, has the name of this runner's pair pod; the pair pod gets a generated name", old.Name)))
		}
	}
	return p.client.CoreV1().Pods(key.Namespace).Create(ctx, withGeneratedName(want), metav1.CreateOptions{})
}

func (p *PairPods) delete(ctx context.Context, pod *v1.Pod) error {
	deleted, err := deleteNow(ctx, p.client, pod)
	if deleted {
		metrics.PairPods.WithLabelValues(metrics.PairPodDeleted).Inc()
	}
	return err
}

// Sweep deletes pair pods whose runner is bound or gone (a restart or a
// failover lost the handler's word), and checks those a waiting runner may
// still want. The reconciler calls it on the leader.
func (p *PairPods) Sweep() {
	if p == nil || !p.leader.IsLeader() {
		return
	}
	for _, runner := range p.indexer.ListIndexFuncValues(PairPodIndex) {
		objs, err := p.indexer.ByIndex(PairPodIndex, runner)
		if err != nil {
			continue
		}
		for _, o := range objs {
			if pod, ok := o.(*v1.Pod); ok && contract.IsPairPod(pod) {
				p.queue.Add(RunnerKey{Namespace: pod.Namespace, Name: pod.Annotations[contract.PairOfAnnotation], UID: metav1.GetControllerOf(pod).UID})
			}
		}
	}
}

// PairPodFor builds the pair pod of runner: requests of the runner and its
// reservation (workflow pod and step headroom), placed like the runner.
func PairPodFor(runner *v1.Pod, runnerRequest, workflow contract.Amount, ports []contract.HostPort, image string) *v1.Pod {
	total := runnerRequest.Add(workflow)
	total.Pods = 0
	requests := total.ToList()
	pod := holdingPod(runner, "pair", image, requests, ports)
	pod.Name = contract.PairPodName(runner.Name)
	pod.Labels = map[string]string{contract.PairPodLabel: "true"}
	pod.Annotations = map[string]string{contract.PairOfAnnotation: runner.Name, contract.PairSizeAnnotation: contract.AmountFromList(requests).String()}
	pod.Spec.NodeSelector = runner.Spec.NodeSelector
	if runner.Spec.Affinity != nil && runner.Spec.Affinity.NodeAffinity != nil {
		pod.Spec.Affinity = &v1.Affinity{NodeAffinity: runner.Spec.Affinity.NodeAffinity.DeepCopy()}
	}
	return pod
}

// holdingPod is the pod that stands for room on behalf of runner (a pair
// pod or a placeholder): one pause container requesting requests (limits
// the same: extended resources and hugepages need them, and a LimitRange's
// default limit below the request would make the pod invalid) and the host
// ports, the runner's priority class and tolerations, owned by the runner,
// non-root, no service account token.
func holdingPod(runner *v1.Pod, container, image string, requests v1.ResourceList, ports []contract.HostPort) *v1.Pod {
	c := v1.Container{
		Name:      container,
		Image:     image,
		Resources: v1.ResourceRequirements{Requests: requests, Limits: requests.DeepCopy()},
		SecurityContext: &v1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &v1.Capabilities{Drop: []v1.Capability{"ALL"}},
		},
	}
	for _, p := range ports {
		c.Ports = append(c.Ports, v1.ContainerPort{ContainerPort: p.Port, HostPort: p.Port, Protocol: p.Protocol})
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: runner.Namespace,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: runner.Name, UID: runner.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
			}},
		},
		Spec: v1.PodSpec{
			SchedulerName:                 runner.Spec.SchedulerName,
			PriorityClassName:             runner.Spec.PriorityClassName,
			Tolerations:                   runner.Spec.Tolerations,
			Containers:                    []v1.Container{c},
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			SecurityContext: &v1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](65535),
				SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
			},
		},
	}
}
