// Package pairpod is the pair-pod worker: while a runner waits for room
// for itself and its workflow pod, a pending pod of the pair's size stands
// for it, for cluster autoscalers.
package pairpod

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/controllers/podworker"
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

// Index indexes pair pods by "<namespace>/<runner>".
const Index = "tandem.dev/pair-of"

// Controller keeps each waiting runner's pair pod in step with what the
// scheduling cycles asked for: PostFilter says a runner waits for pair room
// (want), the handlers say a runner was bound or went (check); a worker,
// on the leader only, creates and deletes the pods.
type Controller struct {
	client   clientset.Interface
	pods     corelisters.PodLister
	indexer  cache.Indexer
	recorder func(pod *v1.Pod, eventType, reason, note string)
	podworker.Queue

	mu sync.Mutex
	// want holds the pair pod each waiting runner asked for, by runner UID.
	want map[types.UID]*v1.Pod
	// warned holds, by runner UID and reason, the runners told once that
	// their pair pod cannot be created or its name is taken (every retry
	// would say it again).
	warned podworker.Warned
	// created holds, by runner UID, the pair pod a create returned until
	// the informer shows it: a sync before then would create another one
	// where the name was taken (a generated name does not collide).
	created map[types.UID]createdPod
}

// createdPod is a pair pod a create returned, and when.
type createdPod struct {
	pod *v1.Pod
	at  time.Time
}

// createdTrust is how long a created pair pod the informer does not show
// counts as there: the informer shows a create within moments.
const createdTrust = 30 * time.Second

// Client is the client of the worker's creates and deletes.
func (p *Controller) Client() clientset.Interface { return p.client }

// New returns the pair pods of waiting runners, created and deleted
// through client on the leader only; recorder reports on a runner.
func New(client clientset.Interface, pods corelisters.PodLister, indexer cache.Indexer, leader *leadership.Leadership, recorder func(*v1.Pod, string, string, string)) *Controller {
	return &Controller{
		client: client, pods: pods, indexer: indexer, recorder: recorder,
		Queue:   podworker.NewQueue("tandem-pair-pods", "pair pod", leader),
		want:    map[types.UID]*v1.Pod{},
		created: map[types.UID]createdPod{},
	}
}

// IndexFunc indexes a pair pod by the runner it stands for.
func IndexFunc(obj any) ([]string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok || !contract.IsPairPod(pod) || pod.Annotations[contract.PairOfAnnotation] == "" {
		return nil, nil
	}
	return []string{pod.Namespace + "/" + pod.Annotations[contract.PairOfAnnotation]}, nil
}

// Ask records that runner waits for pair room and wants pod to stand for it.
func (p *Controller) Ask(runner *v1.Pod, pod *v1.Pod) {
	if p == nil || !p.Leads() {
		return
	}
	p.mu.Lock()
	old, had := p.want[runner.UID]
	p.want[runner.UID] = pod
	p.mu.Unlock()
	if had && old.Annotations[contract.PairSizeAnnotation] == pod.Annotations[contract.PairSizeAnnotation] {
		return // asked already; a failed sync retries with backoff
	}
	p.Keys.Add(podworker.RunnerKey{Namespace: runner.Namespace, Name: runner.Name, UID: runner.UID})
}

// Observed has the worker look at a pair pod the informer shows: one
// created while its runner was being bound must go too.
func (p *Controller) Observed(pod *v1.Pod) {
	if p == nil || !p.Leads() || !contract.IsPairPod(pod) {
		return
	}
	p.Keys.Add(podworker.RunnerKey{Namespace: pod.Namespace, Name: pod.Annotations[contract.PairOfAnnotation], UID: metav1.GetControllerOf(pod).UID})
}

// Check has the worker look at runner's pair pod again: the runner was
// bound or went.
func (p *Controller) Check(runner *v1.Pod) {
	if p == nil || !p.Leads() {
		return
	}
	if !p.hasPairPod(runner.Namespace, runner.Name) && !p.Wanted(runner.UID) {
		return
	}
	p.Keys.Add(podworker.RunnerKey{Namespace: runner.Namespace, Name: runner.Name, UID: runner.UID})
}

// Wanted reports whether the runner incarnation uid asked for a pair pod.
func (p *Controller) Wanted(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.want[uid]
	return ok
}

func (p *Controller) hasPairPod(namespace, runner string) bool {
	objs, err := p.indexer.ByIndex(Index, namespace+"/"+runner)
	return err == nil && len(objs) > 0
}

// Run works the queue while this replica leads.
func (p *Controller) Run(ctx context.Context) { p.Work(ctx, p.sync) }

// sync makes the runner's pair pods what they should be: one of the wanted
// size while the runner waits unbound, none otherwise.
func (p *Controller) sync(ctx context.Context, key podworker.RunnerKey) error {
	logger := klog.FromContext(ctx)
	runner, err := p.pods.Pods(key.Namespace).Get(key.Name)
	waiting := err == nil && runner.UID == key.UID && runner.Spec.NodeName == "" && runner.DeletionTimestamp == nil && !contract.IsTerminal(runner)
	p.mu.Lock()
	want, created := p.want[key.UID], p.created[key.UID]
	if !waiting {
		delete(p.want, key.UID)
		delete(p.created, key.UID) // the informer shows it; it goes below then
		p.warned.Forget(key.UID, contract.ReasonPairPodFailed, contract.ReasonPairPodNameTaken)
		want = nil
	}
	p.mu.Unlock()

	pods, err := podworker.KeyedPods(p.indexer, Index, contract.IsPairPod, key, runner)
	if err != nil {
		return err
	}
	var createdUID types.UID
	if created.pod != nil {
		createdUID = created.pod.UID
	}
	podworker.OwnFirst(pods, createdUID, contract.PairPodName(key.Name))
	have := false
	for _, pod := range pods {
		if pod.UID == createdUID {
			p.mu.Lock()
			delete(p.created, key.UID) // shown: the informer's view is the one
			p.mu.Unlock()
			created = createdPod{}
		}
		if pod.DeletionTimestamp != nil {
			// Being deleted: by this worker, or held by someone's finalizer,
			// for which a delete again and again would only spend the
			// budget.
			continue
		}
		owner := metav1.GetControllerOf(pod).UID
		if owner == key.UID && waiting && !have {
			if want == nil || pod.Annotations[contract.PairSizeAnnotation] == want.Annotations[contract.PairSizeAnnotation] && podworker.HoldsAsMuch(pod, want) {
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
	if created.pod != nil && time.Since(created.at) < createdTrust &&
		created.pod.Annotations[contract.PairSizeAnnotation] == want.Annotations[contract.PairSizeAnnotation] {
		// Created, not shown yet; looked at again when it shows, or when
		// the trust ends if it never does (deleted before the informer
		// saw it).
		p.Keys.AddAfter(key, createdTrust-time.Since(created.at))
		return nil
	}
	made, err := p.client.CoreV1().Pods(key.Namespace).Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		made, err = p.createRenamed(ctx, key, runner, want, err)
	}
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			// This runner's pair pod, which the informer has not shown
			// yet: look again.
			return err
		}
		metrics.PairPods.WithLabelValues(metrics.PairPodFailed).Inc()
		if p.warned.First(key.UID, contract.ReasonPairPodFailed) {
			p.recorder(runner, v1.EventTypeWarning, contract.ReasonPairPodFailed, fmt.Sprintf("Cannot create pending pod %s for cluster autoscalers: %v", want.Name, err))
		}
		return err
	}
	p.mu.Lock()
	p.created[key.UID] = createdPod{pod: made, at: time.Now()}
	p.mu.Unlock()
	metrics.PairPods.WithLabelValues(metrics.PairPodCreated).Inc()
	logger.V(2).Info("Created pair pod for cluster autoscalers", "pod", klog.KObj(made), "runner", klog.KObj(runner), "requests", want.Spec.Containers[0].Resources.Requests)
	p.recorder(runner, v1.EventTypeNormal, contract.ReasonPairPodCreated, fmt.Sprintf(
		"Created pending pod %s requesting %s for cluster autoscalers: no node has room for the runner and its workflow pod together",
		made.Name, contract.AmountFromList(want.Spec.Containers[0].Resources.Requests)))
	return nil
}

// createRenamed creates want under a generated name when its own name is
// taken (exists, the create's error) by anything but the runner's own pair
// pod: a pod that is not a pair pod (someone took the name first: the
// runner is told once) or one that is going. The runner's own, which the
// informer does not show yet, returns exists.
func (p *Controller) createRenamed(ctx context.Context, key podworker.RunnerKey, runner, want *v1.Pod, exists error) (*v1.Pod, error) {
	old, taken := podworker.WhoHasName(ctx, p.client, want, contract.IsPairPod, key.UID)
	if taken == podworker.NameOwn {
		return nil, exists
	}
	if taken == podworker.NameSquatted {
		metrics.PairPods.WithLabelValues(metrics.PairPodNameTaken).Inc()
		klog.FromContext(ctx).Info("A pod that is not tandem's has the pair pod's name; creating it under another", "pod", klog.KObj(old), "runner", klog.KObj(runner))
		if p.warned.First(key.UID, contract.ReasonPairPodNameTaken) {
			p.recorder(runner, v1.EventTypeWarning, contract.ReasonPairPodNameTaken, fmt.Sprintf(
				"Pod %s, which tandem did not create, has the name of this runner's pair pod; the pair pod gets a generated name", old.Name))
		}
	}
	return p.client.CoreV1().Pods(key.Namespace).Create(ctx, podworker.WithGeneratedName(want), metav1.CreateOptions{})
}

func (p *Controller) delete(ctx context.Context, pod *v1.Pod) error {
	deleted, err := podworker.DeleteNow(ctx, p.client, pod)
	if deleted {
		metrics.PairPods.WithLabelValues(metrics.PairPodDeleted).Inc()
	}
	return err
}

// Sweep deletes pair pods whose runner is bound or gone (a restart or a
// failover lost the handler's word), and checks those a waiting runner may
// still want. The reconciler calls it on the leader.
func (p *Controller) Sweep() {
	if p == nil || !p.Leads() {
		return
	}
	for _, runner := range p.indexer.ListIndexFuncValues(Index) {
		objs, err := p.indexer.ByIndex(Index, runner)
		if err != nil {
			continue
		}
		for _, o := range objs {
			if pod, ok := o.(*v1.Pod); ok && contract.IsPairPod(pod) {
				p.Keys.Add(podworker.RunnerKey{Namespace: pod.Namespace, Name: pod.Annotations[contract.PairOfAnnotation], UID: metav1.GetControllerOf(pod).UID})
			}
		}
	}
}

// For builds the pair pod of runner: requests of the runner and its
// reservation (workflow pod and step headroom), placed like the runner.
func For(runner *v1.Pod, runnerRequest, workflow contract.Amount, ports []contract.HostPort, image string) *v1.Pod {
	total := runnerRequest.Add(workflow)
	total.Pods = 0
	requests := total.ToList()
	pod := podworker.HoldingPod(runner, "pair", image, requests, ports)
	pod.Name = contract.PairPodName(runner.Name)
	pod.Labels = map[string]string{contract.PairPodLabel: "true"}
	pod.Annotations = map[string]string{contract.PairOfAnnotation: runner.Name, contract.PairSizeAnnotation: contract.AmountFromList(requests).String()}
	pod.Spec.NodeSelector = runner.Spec.NodeSelector
	if runner.Spec.Affinity != nil && runner.Spec.Affinity.NodeAffinity != nil {
		pod.Spec.Affinity = &v1.Affinity{NodeAffinity: runner.Spec.Affinity.NodeAffinity.DeepCopy()}
	}
	return pod
}
