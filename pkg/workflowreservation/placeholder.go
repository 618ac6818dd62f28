package workflowreservation

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/contract"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
	"github.com/tandem-scheduler/tandem/pkg/workflowreservation/metrics"
)

// Placeholder pods (reservationMode: Pods). A held reservation is also a pod
// on the runner's node, "<runner>-hold", bound there with nodeName and
// requesting what the reservation holds: the kubelet admits other pods
// against it, other schedulers and cluster autoscalers count it. It is owned
// by the runner pod (garbage collection removes it with the runner) and
// yields to the workflow pod the moment that pod is created: tandem-webhook
// deletes it, with the runner's UID checked and grace 0, before the workflow
// pod is stored, so the kubelet of the node, which watches its pods in
// resourceVersion order, sees the room freed before the pod that takes it.

// Annotations that keep cluster autoscalers from removing a node for the
// room a placeholder holds.
const (
	safeToEvictAnnotation  = "cluster-autoscaler.kubernetes.io/safe-to-evict"
	doNotDisruptAnnotation = "karpenter.sh/do-not-disrupt"
)

// createdPod is a placeholder a create returned, and when.
type createdPod struct {
	pod *v1.Pod
	at  time.Time
}

// createdTrust is how long a created placeholder the informer does not show
// counts as there: the informer shows a create within moments.
const createdTrust = 30 * time.Second

// placeholderIndex indexes placeholders by "<namespace>/<runner>".
const placeholderIndex = "tandem.dev/placeholder-of"

// lostRecheck is how long a placeholder deleted by someone else waits
// before it is recreated: tandem-webhook deletes it just before the
// workflow pod is stored, and the informer may show the delete first.
const lostRecheck = 2 * time.Second

func indexPlaceholder(obj any) ([]string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok || !contract.IsPlaceholder(pod) {
		return nil, nil
	}
	return []string{pod.Namespace + "/" + pod.Annotations[contract.PlaceholderOfAnnotation]}, nil
}

// placeholders keeps each bound runner's placeholder in step with its
// reservation: one while the reservation waits for its workflow pod, none
// once the workflow pod exists or the runner is gone. A worker on the
// leader creates and deletes them; want says what a runner should have.
type placeholders struct {
	client   clientset.Interface
	indexer  cache.Indexer
	recorder func(pod *v1.Pod, eventType, reason, note string)
	want     func(key pairKey) (runner, placeholder *v1.Pod)
	leaderQueue
	// recheck is lostRecheck (shorter in tests).
	recheck time.Duration
	// enabled is set once a profile holds reservations with pods.
	enabled atomic.Bool

	mu sync.Mutex
	// deleting holds the placeholders this worker deleted (by UID): the
	// delete events of the others are losses.
	deleting map[types.UID]bool
	// lost holds, by runner UID, when its placeholder was seen deleted by
	// someone else.
	lost map[types.UID]time.Time
	// warned holds, by runner UID and reason, the runners told once that
	// a placeholder cannot be created or was lost.
	warned map[warnKey]bool
	// creating holds, by runner UID, a create in flight: closed when it
	// returns. created holds the placeholder a create returned until the
	// informer shows it deleted: the informer may not show it yet.
	creating map[types.UID]chan struct{}
	created  map[types.UID]createdPod
	// yielding holds the runners whose workflow pod is at Permit: no
	// placeholder is created for them until its Unreserve.
	yielding map[types.UID]bool
}

func newPlaceholders(client clientset.Interface, indexer cache.Indexer, leader *leadership.Leadership,
	recorder func(*v1.Pod, string, string, string), want func(pairKey) (*v1.Pod, *v1.Pod)) *placeholders {
	return &placeholders{
		client: client, indexer: indexer, recorder: recorder, want: want,
		leaderQueue: newLeaderQueue("tandem-placeholders", "placeholder", leader),
		recheck:     lostRecheck,
		deleting:    map[types.UID]bool{},
		lost:        map[types.UID]time.Time{},
		warned:      map[warnKey]bool{},
		creating:    map[types.UID]chan struct{}{},
		created:     map[types.UID]createdPod{},
		yielding:    map[types.UID]bool{},
	}
}

// enable turns the worker on if mode holds reservations with pods.
func (p *placeholders) enable(mode string) {
	if p != nil && mode == config.ReservationModePods {
		p.enabled.Store(true)
	}
}

// check has the worker look at the placeholder of the runner incarnation:
// in a scheduler with a Pods profile, or where placeholders exist (a
// scheduler switched back to Memory deletes those it finds).
func (p *placeholders) check(namespace, runner string, uid types.UID) {
	if p == nil || uid == "" || !p.leader.IsLeader() {
		return
	}
	if !p.enabled.Load() {
		if objs, err := p.indexer.ByIndex(placeholderIndex, namespace+"/"+runner); err != nil || len(objs) == 0 {
			return
		}
	}
	p.queue.Add(pairKey{namespace: namespace, name: runner, uid: uid})
}

// observed has the worker look at a placeholder the informer shows.
func (p *placeholders) observed(pod *v1.Pod) {
	if p == nil || !contract.IsPlaceholder(pod) {
		return
	}
	p.check(pod.Namespace, pod.Annotations[contract.PlaceholderOfAnnotation], metav1.GetControllerOf(pod).UID)
}

// noteGoing notes a placeholder seen being deleted by someone else as a
// possible loss: it is recreated only after lostRecheck, by when the
// workflow pod it yields to (if that is why) is shown.
func (p *placeholders) noteGoing(pod *v1.Pod) {
	owner := metav1.GetControllerOf(pod).UID
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.lost[owner]; !ok && !p.deleting[pod.UID] && p.leader.IsLeader() {
		p.lost[owner] = time.Now()
	}
}

// gone notes a placeholder deleted: by this worker, or lost (evicted,
// preempted by another scheduler, rejected by the kubelet, deleted by
// tandem-webhook for its workflow pod).
func (p *placeholders) gone(pod *v1.Pod) {
	if p == nil || !contract.IsPlaceholder(pod) {
		return
	}
	owner := metav1.GetControllerOf(pod).UID
	p.mu.Lock()
	if c := p.created[owner]; c.pod != nil && c.pod.UID == pod.UID {
		delete(p.created, owner)
	}
	if p.deleting[pod.UID] {
		delete(p.deleting, pod.UID)
	} else if _, ok := p.lost[owner]; !ok && p.leader.IsLeader() {
		p.lost[owner] = time.Now()
	}
	p.mu.Unlock()
	p.observed(pod)
}

// of returns the placeholder of the runner incarnation the informer shows,
// if any.
func (p *placeholders) of(runner types.NamespacedName, uid types.UID) *v1.Pod {
	if p == nil {
		return nil
	}
	objs, err := p.indexer.ByIndex(placeholderIndex, runner.Namespace+"/"+runner.Name)
	if err != nil {
		return nil
	}
	for _, o := range objs {
		if pod, ok := o.(*v1.Pod); ok && contract.IsPlaceholder(pod) && metav1.GetControllerOf(pod).UID == uid {
			return pod
		}
	}
	return nil
}

// startYield stops creates for the runner incarnation: its workflow pod is
// at Permit. Permit calls it before it returns, so that an Unreserve
// (unyield) always comes after it.
func (p *placeholders) startYield(uid types.UID) {
	p.mu.Lock()
	p.yielding[uid] = true
	p.mu.Unlock()
}

// yield removes the runner incarnation's placeholder for its workflow pod,
// which is at Permit (startYield): a create in flight is waited for, and
// one the informer does not show yet is found through what the create
// returned, or asked of the apiserver.
func (p *placeholders) yield(ctx context.Context, runner types.NamespacedName, uid types.UID) (*v1.Pod, error) {
	p.mu.Lock()
	done := p.creating[uid]
	p.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	hold := p.of(runner, uid)
	p.mu.Lock()
	if c := p.created[uid]; hold == nil && c.pod != nil {
		hold = c.pod
	}
	p.mu.Unlock()
	if hold == nil {
		// One the informer does not show and this replica did not create
		// (the previous leader's, just before it went): ask the apiserver.
		live, err := p.client.CoreV1().Pods(runner.Namespace).Get(ctx, contract.PlaceholderName(runner.Name), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil
		case err != nil:
			return nil, err
		case !contract.IsPlaceholder(live) || metav1.GetControllerOf(live).UID != uid:
			return nil, nil
		}
		hold = live
	}
	return hold, p.delete(ctx, hold)
}

// unyield lets the runner have a placeholder again: its workflow pod's
// scheduling cycle failed after Permit.
func (p *placeholders) unyield(runner types.NamespacedName, uid types.UID) {
	if p == nil {
		return
	}
	p.mu.Lock()
	delete(p.yielding, uid)
	p.mu.Unlock()
	p.check(runner.Namespace, runner.Name, uid)
}

// warnKey is a runner incarnation and an event reason.
type warnKey struct {
	uid    types.UID
	reason string
}

func (p *placeholders) firstWarning(uid types.UID, reason string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := warnKey{uid, reason}
	if p.warned[k] {
		return false
	}
	p.warned[k] = true
	return true
}

// run works the queue while this replica leads.
func (p *placeholders) run(ctx context.Context) { p.work(ctx, p.sync) }

// sync makes the runner's placeholders what want says: one of the wanted
// size on the runner's node, or none.
func (p *placeholders) sync(ctx context.Context, key pairKey) error {
	logger := klog.FromContext(ctx)
	runner, want := p.want(key)
	pods, err := keyedPods(p.indexer, placeholderIndex, contract.IsPlaceholder, key, runner)
	if err != nil {
		return err
	}
	have, going := false, false
	for _, pod := range pods {
		owner := metav1.GetControllerOf(pod).UID
		if pod.DeletionTimestamp != nil && owner == key.uid {
			// Being deleted (a delete with grace 0 is an update setting
			// deletionTimestamp, then the delete): by this worker, or by
			// someone else, e.g. tandem-webhook for a pinned workflow pod
			// that the informer does not show yet. Its delete event says
			// which; until then, no second one.
			going = true
			p.noteGoing(pod)
			continue
		}
		if want != nil && owner == key.uid &&
			pod.Spec.NodeName == want.Spec.NodeName && pod.Annotations[contract.PlaceholderSizeAnnotation] == want.Annotations[contract.PlaceholderSizeAnnotation] {
			have = true
			continue
		}
		if err := p.delete(ctx, pod); err != nil {
			return err
		}
		logger.V(2).Info("Deleted placeholder", "pod", klog.KObj(pod), "runner", klog.KRef(key.namespace, key.name), "wanted", want != nil)
	}
	if !have && !going {
		// One this worker created that the informer does not show yet.
		p.mu.Lock()
		c := p.created[key.uid]
		p.mu.Unlock()
		switch {
		case c.pod == nil || time.Since(c.at) > createdTrust:
			// None, or so old that the informer missed its delete.
		case want != nil && c.pod.Spec.NodeName == want.Spec.NodeName && c.pod.Annotations[contract.PlaceholderSizeAnnotation] == want.Annotations[contract.PlaceholderSizeAnnotation]:
			have = true
		default:
			if err := p.delete(ctx, c.pod); err != nil {
				return err
			}
		}
	}
	p.mu.Lock()
	lostAt, lost := p.lost[key.uid]
	if want == nil || have {
		delete(p.lost, key.uid)
	}
	if runner == nil { // the runner is gone
		delete(p.yielding, key.uid)
		delete(p.lost, key.uid)
		delete(p.created, key.uid)
		delete(p.warned, warnKey{key.uid, contract.ReasonPlaceholderLost})
		delete(p.warned, warnKey{key.uid, contract.ReasonPlaceholderFailed})
	}
	p.mu.Unlock()
	if going && !have {
		return nil // its delete event brings the key back
	}
	if want == nil || have {
		return nil
	}
	if lost {
		if wait := p.recheck - time.Since(lostAt); wait > 0 {
			p.queue.AddAfter(key, wait) // the workflow pod may be on its way
			return nil
		}
		p.mu.Lock()
		delete(p.lost, key.uid)
		p.mu.Unlock()
		metrics.PlaceholderPods.WithLabelValues(metrics.PlaceholderLost).Inc()
		logger.Info("Placeholder was removed by someone else; recreating it", "runner", klog.KObj(runner), "pod", klog.KRef(want.Namespace, want.Name), "node", want.Spec.NodeName)
		if p.firstWarning(key.uid, contract.ReasonPlaceholderLost) {
			p.recorder(runner, v1.EventTypeWarning, contract.ReasonPlaceholderLost, truncate(fmt.Sprintf(
				"Placeholder %s holding the workflow pod's room on node %s was removed by someone else (evicted, preempted or rejected by the kubelet); recreating it. Until it runs, other schedulers and the kubelet may take the room",
				want.Name, want.Spec.NodeName)))
		}
	}
	p.mu.Lock()
	if p.yielding[key.uid] {
		p.mu.Unlock()
		return nil // its workflow pod is at Permit
	}
	done := make(chan struct{})
	p.creating[key.uid] = done
	p.mu.Unlock()
	created, err := p.client.CoreV1().Pods(key.namespace).Create(ctx, want, metav1.CreateOptions{})
	p.mu.Lock()
	delete(p.creating, key.uid)
	close(done)
	if err == nil {
		p.created[key.uid] = createdPod{pod: created, at: time.Now()}
	}
	p.mu.Unlock()
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			// One the informer has not shown yet (look again), or one it
			// cannot show: the scheduler's informer drops terminal pods, so
			// a placeholder the kubelet rejected or evicted still has the
			// name. That one goes, and the retry creates anew.
			if old, gerr := p.client.CoreV1().Pods(key.namespace).Get(ctx, want.Name, metav1.GetOptions{}); gerr == nil && contract.IsPlaceholder(old) &&
				(isTerminal(old) || metav1.GetControllerOf(old).UID != key.uid) {
				if derr := p.delete(ctx, old); derr != nil {
					return derr
				}
				logger.V(2).Info("Deleted a placeholder the informer does not show", "pod", klog.KObj(old), "phase", old.Status.Phase, "runner", klog.KRef(key.namespace, key.name))
			}
			return err
		}
		metrics.PlaceholderPods.WithLabelValues(metrics.PlaceholderFailed).Inc()
		if p.firstWarning(key.uid, contract.ReasonPlaceholderFailed) {
			p.recorder(runner, v1.EventTypeWarning, contract.ReasonPlaceholderFailed, truncate(fmt.Sprintf(
				"Cannot create placeholder %s on node %s: %v; the reservation holds the room for tandem only", want.Name, want.Spec.NodeName, err)))
		}
		return err
	}
	metrics.PlaceholderPods.WithLabelValues(metrics.PlaceholderCreated).Inc()
	logger.V(2).Info("Created placeholder", "pod", klog.KRef(want.Namespace, want.Name), "runner", klog.KObj(runner), "node", want.Spec.NodeName, "requests", want.Annotations[contract.PlaceholderSizeAnnotation])
	return nil
}

func (p *placeholders) delete(ctx context.Context, pod *v1.Pod) error {
	p.mu.Lock()
	p.deleting[pod.UID] = true
	p.mu.Unlock()
	deleted, err := deleteNow(ctx, p.client, pod)
	if deleted {
		metrics.PlaceholderPods.WithLabelValues(metrics.PlaceholderDeleted).Inc()
	}
	if err == nil {
		owner := metav1.GetControllerOf(pod).UID
		p.mu.Lock()
		if c := p.created[owner]; c.pod != nil && c.pod.UID == pod.UID {
			delete(p.created, owner)
		}
		p.mu.Unlock()
	}
	if err != nil {
		p.mu.Lock()
		delete(p.deleting, pod.UID)
		p.mu.Unlock()
	}
	return err
}

// sweep has the worker look at every placeholder and every reservation: a
// restart or a failover lost the handlers' word. The reconciler calls it.
func (p *placeholders) sweep(rs []reservations.Reservation) {
	if p == nil || !p.leader.IsLeader() {
		return
	}
	if p.enabled.Load() {
		for _, r := range rs {
			p.check(r.Runner.Namespace, r.Runner.Name, r.RunnerUID)
		}
	}
	for _, runner := range p.indexer.ListIndexFuncValues(placeholderIndex) {
		objs, err := p.indexer.ByIndex(placeholderIndex, runner)
		if err != nil {
			continue
		}
		for _, o := range objs {
			if pod, ok := o.(*v1.Pod); ok {
				p.observed(pod)
			}
		}
	}
}

// wantPlaceholder is the placeholder the runner incarnation should have, and
// the runner pod: one while its profile holds reservations with pods, the
// runner is bound and its reservation waits for a workflow pod.
func (pl *WorkflowReservation) wantPlaceholder(key pairKey) (*v1.Pod, *v1.Pod) {
	runner, err := pl.pods.Pods(key.namespace).Get(key.name)
	if err != nil || runner.UID != key.uid {
		return nil, nil
	}
	if runner.Spec.NodeName == "" || runner.DeletionTimestamp != nil || isTerminal(runner) {
		return runner, nil
	}
	owner := pl.sh.profileOf(runner)
	if owner == nil || owner.reservationMode != config.ReservationModePods {
		return runner, nil
	}
	nn := types.NamespacedName{Namespace: key.namespace, Name: key.name}
	r, ok := pl.store.Get(nn)
	if !ok || r.RunnerUID != key.uid || r.UsedUp() || r.ClaimedBy() != "" || r.Node != runner.Spec.NodeName {
		return runner, nil
	}
	for _, wf := range pl.workflowPods(nn) {
		if !r.Owns(wf) || isTerminal(wf) {
			continue
		}
		if wf.Spec.NodeName == "" {
			if p := pl.sh.profileOf(wf); p != nil && p.handover() {
				continue // it takes the placeholder's room at Permit
			}
		}
		return runner, nil // it takes the room: the placeholder yields
	}
	hold, _ := r.Holds(reservations.RunnerPods{})
	hold.Pods = 0
	if hold.IsZero() {
		return runner, nil
	}
	return runner, placeholderFor(runner, r.Node, hold, owner.placeholderImage)
}

// placeholderFor builds the placeholder of runner on node: it requests what
// the reservation holds, with the runner's priority and tolerations. Not its
// host ports: the stock NodePorts would then keep the workflow pod off the
// node; tandem's accounting keeps holding them.
func placeholderFor(runner *v1.Pod, node string, hold reservations.Amount, image string) *v1.Pod {
	requests := hold.ToList()
	pod := holdingPod(runner, "hold", image, requests, nil)
	pod.Name = contract.PlaceholderName(runner.Name)
	pod.Labels = map[string]string{contract.PlaceholderLabel: "true"}
	pod.Annotations = map[string]string{
		contract.PlaceholderOfAnnotation:   runner.Name,
		contract.PlaceholderSizeAnnotation: reservations.AmountFromList(requests).String(),
		safeToEvictAnnotation:              "false",
		doNotDisruptAnnotation:             "true",
	}
	pod.Spec.NodeName = node
	return pod
}
