// Package placeholder is the placeholder worker of reservationMode Pods: a
// bound runner's reservation is also a pod on its node, created, replaced
// and deleted here, yielding to the workflow pod.
package placeholder

import (
	"context"
	"fmt"
	"slices"
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
	"k8s.io/utils/clock"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/controllers/podworker"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
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
	SafeToEvictAnnotation  = "cluster-autoscaler.kubernetes.io/safe-to-evict"
	DoNotDisruptAnnotation = "karpenter.sh/do-not-disrupt"
)

// createdPod is a placeholder a create returned, and when.
type createdPod struct {
	pod *v1.Pod
	at  time.Time
}

// createdTrust is how long a created placeholder the informer does not show
// counts as there: the informer shows a create within moments.
const createdTrust = 30 * time.Second

// Index indexes placeholders by "<namespace>/<runner>".
const Index = "tandem.dev/placeholder-of"

// lostRecheck is how long a placeholder deleted by someone else waits
// before it is recreated: tandem-webhook deletes it just before the
// workflow pod is stored, and the informer may show the delete first.
const lostRecheck = 2 * time.Second

// maxLostBackoff caps the wait before a placeholder lost again and again is
// recreated: each loss in a row doubles it from lostRecheck. A placeholder
// the kubelet rejects (another scheduler or a DaemonSet took the room) is
// otherwise a create, a get, a delete and an admission every 2 s for as long
// as its runner lives.
const maxLostBackoff = 5 * time.Minute

// IndexFunc indexes a placeholder by the runner whose reservation it
// holds.
func IndexFunc(obj any) ([]string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok || !contract.IsPlaceholder(pod) {
		return nil, nil
	}
	return []string{pod.Namespace + "/" + pod.Annotations[contract.PlaceholderOfAnnotation]}, nil
}

// Controller keeps each bound runner's placeholder in step with its
// reservation: one while the reservation waits for its workflow pod, none
// once the workflow pod exists or the runner is gone. A worker on the
// leader creates and deletes them; want says what a runner should have.
type Controller struct {
	client   clientset.Interface
	indexer  cache.Indexer
	recorder func(pod *v1.Pod, eventType, reason, note string)
	want     func(key podworker.RunnerKey) (runner, placeholder *v1.Pod)
	// HandOver is the client of Yield's reads and delete (client unless
	// set): a workflow pod at Permit waits for them, so they must not queue
	// behind the worker's creates in client's rate limit.
	HandOver clientset.Interface
	podworker.Queue
	// Recheck is lostRecheck (shorter in tests).
	Recheck time.Duration
	// Clock tells the time of losses and creates (a fake one in tests).
	Clock clock.Clock
	// enabled is set once a profile holds reservations with pods.
	enabled atomic.Bool

	mu sync.Mutex
	// deleting holds the placeholders this worker deleted (by UID), with
	// their runner's UID: the delete events of the others are losses.
	deleting map[types.UID]types.UID
	// lost holds, by runner UID, when its placeholder was seen deleted by
	// someone else; losses how many were lost in a row, none of them seen
	// running (the backoff before the next).
	lost   map[types.UID]time.Time
	losses map[types.UID]int
	// warned holds, by runner UID and reason, the runners told once that
	// a placeholder cannot be created or was lost.
	warned podworker.Warned
	// creating holds, by runner UID, a create in flight: closed when it
	// returns. created holds the placeholder a create returned until the
	// informer shows it deleted: the informer may not show it yet.
	creating map[types.UID]chan struct{}
	created  map[types.UID]createdPod
	// yielding holds the runners whose workflow pod is at Permit: no
	// placeholder is created for them until its Unreserve.
	yielding map[types.UID]bool
}

// Client is the client of the worker's creates and deletes.
func (p *Controller) Client() clientset.Interface { return p.client }

// New returns the placeholders of bound runners, created and
// deleted through client on the leader only; want says what a runner's
// placeholder should be (nil: none), recorder reports on a runner.
func New(client clientset.Interface, indexer cache.Indexer, leader *leadership.Leadership,
	recorder func(*v1.Pod, string, string, string), want func(podworker.RunnerKey) (*v1.Pod, *v1.Pod)) *Controller {
	return &Controller{
		client: client, HandOver: client, indexer: indexer, recorder: recorder, want: want,
		Queue:    podworker.NewQueue("tandem-placeholders", "placeholder", leader),
		Recheck:  lostRecheck,
		Clock:    clock.RealClock{},
		deleting: map[types.UID]types.UID{},
		lost:     map[types.UID]time.Time{},
		losses:   map[types.UID]int{},
		creating: map[types.UID]chan struct{}{},
		created:  map[types.UID]createdPod{},
		yielding: map[types.UID]bool{},
	}
}

// Enable turns the worker on if mode holds reservations with pods.
func (p *Controller) Enable(mode string) {
	if p != nil && mode == config.ReservationModePods {
		p.enabled.Store(true)
	}
}

// Check has the worker look at the placeholder of the runner incarnation:
// in a scheduler with a Pods profile, or where placeholders exist (a
// scheduler switched back to Memory deletes those it finds).
func (p *Controller) Check(namespace, runner string, uid types.UID) {
	if p == nil || uid == "" || !p.Leads() {
		return
	}
	if !p.enabled.Load() {
		if objs, err := p.indexer.ByIndex(Index, namespace+"/"+runner); err != nil || len(objs) == 0 {
			return
		}
	}
	p.Keys.Add(podworker.RunnerKey{Namespace: namespace, Name: runner, UID: uid})
}

// Observed has the worker look at a placeholder the informer shows. One
// seen running ends its runner's backoff.
func (p *Controller) Observed(pod *v1.Pod) {
	if p == nil || !contract.IsPlaceholder(pod) {
		return
	}
	if pod.Status.Phase == v1.PodRunning {
		p.mu.Lock()
		delete(p.losses, metav1.GetControllerOf(pod).UID)
		p.mu.Unlock()
	}
	p.Check(pod.Namespace, pod.Annotations[contract.PlaceholderOfAnnotation], metav1.GetControllerOf(pod).UID)
}

// noteGoing notes a placeholder seen being deleted by someone else as a
// possible loss: it is recreated only after lostRecheck, by when the
// workflow pod it yields to (if that is why) is shown.
func (p *Controller) noteGoing(pod *v1.Pod) {
	owner := metav1.GetControllerOf(pod).UID
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.lost[owner]; !ok && p.deleting[pod.UID] == "" && p.Leads() {
		p.lost[owner] = p.Clock.Now()
	}
}

// Gone notes a placeholder deleted: by this worker, or lost (evicted,
// preempted by another scheduler, rejected by the kubelet, deleted by
// tandem-webhook for its workflow pod).
func (p *Controller) Gone(pod *v1.Pod) {
	if p == nil || !contract.IsPlaceholder(pod) {
		return
	}
	owner := metav1.GetControllerOf(pod).UID
	p.mu.Lock()
	if c := p.created[owner]; c.pod != nil && c.pod.UID == pod.UID {
		delete(p.created, owner)
	}
	if p.deleting[pod.UID] != "" {
		delete(p.deleting, pod.UID)
	} else if _, ok := p.lost[owner]; !ok && p.Leads() {
		p.lost[owner] = p.Clock.Now()
	}
	p.mu.Unlock()
	p.Observed(pod)
}

// Of returns the placeholder of the runner incarnation the informer shows,
// if any.
func (p *Controller) Of(runner types.NamespacedName, uid types.UID) *v1.Pod {
	if all := p.allOf(runner, uid); len(all) > 0 {
		return all[0]
	}
	return nil
}

// OnNode returns a placeholder of the runner incarnation the informer shows
// on node and not being deleted, if any.
func (p *Controller) OnNode(runner types.NamespacedName, uid types.UID, node string) *v1.Pod {
	for _, pod := range p.allOf(runner, uid) {
		if pod.DeletionTimestamp == nil && pod.Spec.NodeName == node {
			return pod
		}
	}
	return nil
}

// allOf returns the placeholders of the runner incarnation the informer
// shows: one, unless the worker made a second under another name while the
// first was not shown yet.
func (p *Controller) allOf(runner types.NamespacedName, uid types.UID) []*v1.Pod {
	if p == nil {
		return nil
	}
	objs, err := p.indexer.ByIndex(Index, runner.Namespace+"/"+runner.Name)
	if err != nil {
		return nil
	}
	var out []*v1.Pod
	for _, o := range objs {
		if pod, ok := o.(*v1.Pod); ok && contract.IsPlaceholder(pod) && metav1.GetControllerOf(pod).UID == uid {
			out = append(out, pod)
		}
	}
	return out
}

// StartYield stops creates for the runner incarnation: its workflow pod is
// at Permit. Permit calls it before it returns, so that an Unreserve
// (unyield) always comes after it.
func (p *Controller) StartYield(uid types.UID) {
	p.mu.Lock()
	p.yielding[uid] = true
	p.mu.Unlock()
}

// Yield removes the runner incarnation's placeholder for its workflow pod,
// which is at Permit (startYield): a create in flight is waited for, and
// one the informer does not show yet is found through what the create
// returned, or asked of the apiserver.
func (p *Controller) Yield(ctx context.Context, runner types.NamespacedName, uid types.UID) (*v1.Pod, error) {
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
	holds := slices.DeleteFunc(p.allOf(runner, uid), func(h *v1.Pod) bool { return h.DeletionTimestamp != nil })
	p.mu.Lock()
	if c := p.created[uid]; c.pod != nil && !slices.ContainsFunc(holds, func(h *v1.Pod) bool { return h.UID == c.pod.UID }) {
		holds = append(holds, c.pod)
	}
	p.mu.Unlock()
	if len(holds) == 0 {
		// One the informer does not show and this replica did not create
		// (the previous leader's, just before it went): ask the apiserver.
		live, err := List(ctx, p.HandOver, runner, uid)
		if err != nil || len(live) == 0 {
			return nil, err
		}
		holds = live
	}
	for _, hold := range holds {
		if err := p.delete(ctx, p.HandOver, hold); err != nil {
			return nil, err
		}
	}
	return holds[0], nil
}

// List asks the apiserver for the placeholders of the runner
// incarnation uid: its pods labelled as placeholders that name runner and
// are controlled by it, whatever their names, and not being deleted.
func List(ctx context.Context, client clientset.Interface, runner types.NamespacedName, uid types.UID) ([]*v1.Pod, error) {
	list, err := client.CoreV1().Pods(runner.Namespace).List(ctx, metav1.ListOptions{LabelSelector: contract.PlaceholderLabel + "=true"})
	if err != nil {
		return nil, err
	}
	var out []*v1.Pod
	for i := range list.Items {
		pod := &list.Items[i]
		if contract.IsPlaceholder(pod) && pod.Annotations[contract.PlaceholderOfAnnotation] == runner.Name && metav1.GetControllerOf(pod).UID == uid && pod.DeletionTimestamp == nil {
			out = append(out, pod)
		}
	}
	return out, nil
}

// Unyield lets the runner have a placeholder again: its workflow pod's
// scheduling cycle failed after Permit.
func (p *Controller) Unyield(runner types.NamespacedName, uid types.UID) {
	if p == nil {
		return
	}
	p.mu.Lock()
	delete(p.yielding, uid)
	p.mu.Unlock()
	p.Check(runner.Namespace, runner.Name, uid)
}

// Run works the queue while this replica leads.
func (p *Controller) Run(ctx context.Context) { p.Work(ctx, p.sync) }

// sync makes the runner's placeholders what want says: one of the wanted
// size on the runner's node, or none.
func (p *Controller) sync(ctx context.Context, key podworker.RunnerKey) error {
	logger := klog.FromContext(ctx)
	p.mu.Lock()
	inFlight := p.creating[key.UID] != nil
	p.mu.Unlock()
	if inFlight {
		// Bind creates it (CreateForBind): look again once it returned.
		p.Keys.AddAfter(key, createdRecheck)
		return nil
	}
	// A loss noted while prune runs (the informer's delete handler) is
	// not this pass's to forget: prune may have counted the pod just lost
	// as one this worker created and the informer does not show yet.
	p.mu.Lock()
	_, lostBefore := p.lost[key.UID]
	p.mu.Unlock()
	runner, want := p.want(key)
	have, going, err := p.prune(ctx, key, runner, want)
	if err != nil {
		return err
	}
	p.mu.Lock()
	lostAt, lost := p.lost[key.UID]
	if (want == nil || have) && lostBefore {
		delete(p.lost, key.UID)
	}
	if runner == nil { // the runner is gone
		delete(p.yielding, key.UID)
		delete(p.lost, key.UID)
		delete(p.losses, key.UID)
		delete(p.created, key.UID)
		for uid, owner := range p.deleting {
			if owner == key.UID {
				delete(p.deleting, uid) // its delete event will not come, or does not matter
			}
		}
		p.warned.Forget(key.UID, contract.ReasonPlaceholderLost, contract.ReasonPlaceholderFailed, contract.ReasonPlaceholderNameTaken)
	}
	p.mu.Unlock()
	if going && !have {
		return nil // its delete event brings the key back
	}
	if want == nil || have {
		return nil
	}
	if lost {
		p.mu.Lock()
		backoff := lostBackoff(p.Recheck, p.losses[key.UID])
		p.mu.Unlock()
		if wait := backoff - p.Clock.Since(lostAt); wait > 0 {
			p.Keys.AddAfter(key, wait) // the workflow pod may be on its way
			return nil
		}
		p.mu.Lock()
		delete(p.lost, key.UID)
		p.losses[key.UID]++
		p.mu.Unlock()
		metrics.PlaceholderPods.WithLabelValues(metrics.PlaceholderLost).Inc()
		logger.Info("Placeholder was removed by someone else; recreating it", "runner", klog.KObj(runner), "pod", klog.KRef(want.Namespace, want.Name), "node", want.Spec.NodeName)
		if p.warned.First(key.UID, contract.ReasonPlaceholderLost) {
			p.recorder(runner, v1.EventTypeWarning, contract.ReasonPlaceholderLost, fmt.Sprintf(
				"Placeholder %s holding the workflow pod's room on node %s was removed by someone else (evicted, preempted or rejected by the kubelet); recreating it. Until it runs, other schedulers and the kubelet may take the room",
				want.Name, want.Spec.NodeName))
		}
	}
	return p.create(ctx, key, runner, want)
}

// prune deletes the runner incarnation's placeholders other than want (all
// of them if want is nil). have says one like want exists, shown by the
// informer or created by this worker and not shown yet; going that one is
// being deleted.
func (p *Controller) prune(ctx context.Context, key podworker.RunnerKey, runner, want *v1.Pod) (have, going bool, err error) {
	logger := klog.FromContext(ctx)
	pods, err := podworker.KeyedPods(p.indexer, Index, contract.IsPlaceholder, key, runner)
	if err != nil {
		return false, false, err
	}
	p.mu.Lock()
	createdUID := p.created[key.UID].pod
	p.mu.Unlock()
	var uid types.UID
	if createdUID != nil {
		uid = createdUID.UID
	}
	podworker.OwnFirst(pods, uid, contract.PlaceholderName(key.Name))
	for _, pod := range pods {
		owner := metav1.GetControllerOf(pod).UID
		if pod.DeletionTimestamp != nil {
			// Being deleted (a delete with grace 0 is an update setting
			// deletionTimestamp, then the delete): by this worker, or by
			// someone else, e.g. tandem-webhook for a pinned workflow pod
			// that the informer does not show yet. Its delete event says
			// which; until then, no second one (one a finalizer holds
			// would be deleted again and again).
			if owner == key.UID {
				going = true
				p.noteGoing(pod)
			}
			continue
		}
		if want != nil && owner == key.UID && !have && pod.Spec.NodeName == want.Spec.NodeName &&
			pod.Annotations[contract.PlaceholderSizeAnnotation] == want.Annotations[contract.PlaceholderSizeAnnotation] && podworker.HoldsAsMuch(pod, want) {
			have = true // one: a second (created under another name) goes
			continue
		}
		if err := p.delete(ctx, p.client, pod); err != nil {
			return false, false, err
		}
		logger.V(2).Info("Deleted placeholder", "pod", klog.KObj(pod), "runner", klog.KRef(key.Namespace, key.Name), "wanted", want != nil)
	}
	if !have && !going {
		// One this worker created that the informer does not show yet.
		p.mu.Lock()
		c := p.created[key.UID]
		p.mu.Unlock()
		switch {
		case c.pod == nil || p.Clock.Since(c.at) > createdTrust:
			// None, or so old that the informer missed its delete.
		case want != nil && c.pod.Spec.NodeName == want.Spec.NodeName && c.pod.Annotations[contract.PlaceholderSizeAnnotation] == want.Annotations[contract.PlaceholderSizeAnnotation]:
			have = true
		default:
			if err := p.delete(ctx, p.client, c.pod); err != nil {
				return false, false, err
			}
		}
	}
	return have, going, nil
}

// createdRecheck is how soon the worker looks again at a runner whose
// placeholder Bind is creating.
const createdRecheck = 100 * time.Millisecond

// CreateForBind creates want, the placeholder of runner, through client
// (the scheduler's own, whose budget its bindings share) before runner's
// Binding: the room is then held on the node for the kubelet, other
// schedulers and autoscalers from the moment the runner is bound, and the
// worker's budget is left to what the informers make it do (recreations,
// deletes, pair pods). Until the runner shows bound, its reservation
// (assumed, not bound) keeps the placeholder wanted (Feeder.WantPlaceholder);
// if the bind fails, Unreserve has the worker delete it. A create that
// fails is left to the worker, which retries once the runner shows bound.
func (p *Controller) CreateForBind(ctx context.Context, client clientset.Interface, runner, want *v1.Pod) error {
	if p == nil || want == nil {
		return nil
	}
	created, err := p.createThrough(ctx, client, runner.UID, want)
	if created == nil && err == nil {
		return nil // one is being created, or its workflow pod is at Permit
	}
	if apierrors.IsAlreadyExists(err) {
		// Its name is taken: the worker creates it under another now
		// (WantPlaceholder wants it while the binding is in flight).
		p.Keys.Add(podworker.RunnerKey{Namespace: runner.Namespace, Name: runner.Name, UID: runner.UID})
	}
	if err != nil {
		return err
	}
	metrics.PlaceholderPods.WithLabelValues(metrics.PlaceholderCreated).Inc()
	klog.FromContext(ctx).V(2).Info("Created placeholder before the runner's binding", "pod", klog.KObj(created), "runner", klog.KObj(runner),
		"node", want.Spec.NodeName, "requests", want.Annotations[contract.PlaceholderSizeAnnotation])
	return nil
}

// createThrough creates want, owned by the runner incarnation uid, through
// client, unless a create is in flight or its workflow pod is at Permit
// (nil, nil), and keeps what the create returned until the informer shows
// it.
func (p *Controller) createThrough(ctx context.Context, client clientset.Interface, uid types.UID, want *v1.Pod) (*v1.Pod, error) {
	p.mu.Lock()
	if p.yielding[uid] || p.creating[uid] != nil {
		p.mu.Unlock()
		return nil, nil
	}
	done := make(chan struct{})
	p.creating[uid] = done
	p.mu.Unlock()
	created, err := client.CoreV1().Pods(want.Namespace).Create(ctx, want, metav1.CreateOptions{})
	p.mu.Lock()
	delete(p.creating, uid)
	close(done)
	if err == nil {
		p.created[uid] = createdPod{pod: created, at: p.Clock.Now()}
	}
	p.mu.Unlock()
	return created, err
}

// create creates want, the runner's placeholder, unless its workflow pod is
// at Permit.
func (p *Controller) create(ctx context.Context, key podworker.RunnerKey, runner, want *v1.Pod) error {
	logger := klog.FromContext(ctx)
	created, err := p.createThrough(ctx, p.client, key.UID, want)
	if created == nil && err == nil {
		return nil
	}
	if apierrors.IsAlreadyExists(err) {
		created, err = p.createRenamed(ctx, key, runner, want, err)
	}
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return err // the runner's own, not shown yet: look again
		}
		metrics.PlaceholderPods.WithLabelValues(metrics.PlaceholderFailed).Inc()
		if p.warned.First(key.UID, contract.ReasonPlaceholderFailed) {
			p.recorder(runner, v1.EventTypeWarning, contract.ReasonPlaceholderFailed, fmt.Sprintf(
				"Cannot create placeholder %s on node %s: %v; the reservation holds the room for tandem only", want.Name, want.Spec.NodeName, err))
		}
		return err
	}
	metrics.PlaceholderPods.WithLabelValues(metrics.PlaceholderCreated).Inc()
	logger.V(2).Info("Created placeholder", "pod", klog.KObj(created), "runner", klog.KObj(runner), "node", want.Spec.NodeName, "requests", want.Annotations[contract.PlaceholderSizeAnnotation])
	return nil
}

// createRenamed creates want under a generated name when its own name is
// taken (exists, the create's error) by anything but the runner's own
// placeholder: a pod that is not a placeholder (someone took the name
// first: the runner is told once), or one that is being deleted or another
// runner incarnation's. A placeholder that ended is deleted instead, and
// the create retried under its name: the informer of the scheduler drops
// terminal pods, so a placeholder the kubelet rejected or evicted still has
// the name and nothing else deletes it. The runner's own, which the
// informer does not show yet, returns exists.
func (p *Controller) createRenamed(ctx context.Context, key podworker.RunnerKey, runner, want *v1.Pod, exists error) (*v1.Pod, error) {
	logger := klog.FromContext(ctx)
	old, taken := podworker.WhoHasName(ctx, p.client, want, contract.IsPlaceholder, key.UID)
	switch {
	case taken == podworker.NameOwn:
		return nil, exists
	case taken == podworker.NameSquatted:
		metrics.PlaceholderPods.WithLabelValues(metrics.PlaceholderNameTaken).Inc()
		logger.Info("A pod that is not tandem's has the placeholder's name; creating it under another", "pod", klog.KObj(old), "runner", klog.KObj(runner))
		if p.warned.First(key.UID, contract.ReasonPlaceholderNameTaken) {
			p.recorder(runner, v1.EventTypeWarning, contract.ReasonPlaceholderNameTaken, fmt.Sprintf(
				"Pod %s, which tandem did not create, has the name of this runner's placeholder; the placeholder gets a generated name", old.Name))
		}
	case contract.IsTerminal(old) && old.DeletionTimestamp == nil:
		if err := p.delete(ctx, p.client, old); err != nil {
			return nil, err
		}
		// The informer dropped it when it ended: no delete event comes to
		// clear the mark.
		p.mu.Lock()
		delete(p.deleting, old.UID)
		p.mu.Unlock()
		logger.V(2).Info("Deleted a placeholder the informer does not show", "pod", klog.KObj(old), "phase", old.Status.Phase, "runner", klog.KRef(key.Namespace, key.Name))
		return nil, exists // the retry creates it anew under its name
	}
	created, err := p.createThrough(ctx, p.client, key.UID, podworker.WithGeneratedName(want))
	if created == nil && err == nil {
		return nil, exists // its workflow pod came to Permit meanwhile
	}
	return created, err
}

// lostBackoff is the wait before a placeholder is recreated after losses
// in a row: recheck, doubled for each earlier loss, at most maxLostBackoff.
func lostBackoff(recheck time.Duration, losses int) time.Duration {
	wait := recheck
	for range losses {
		if wait >= maxLostBackoff/2 {
			return maxLostBackoff
		}
		wait *= 2
	}
	return min(wait, maxLostBackoff)
}

// delete deletes pod through client.
func (p *Controller) delete(ctx context.Context, client clientset.Interface, pod *v1.Pod) error {
	p.mu.Lock()
	p.deleting[pod.UID] = metav1.GetControllerOf(pod).UID
	p.mu.Unlock()
	deleted, err := podworker.DeleteNow(ctx, client, pod)
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

// Sweep has the worker look at every placeholder and every reservation: a
// restart or a failover lost the handlers' word. The reconciler calls it.
func (p *Controller) Sweep(rs []reservations.Reservation) {
	if p == nil || !p.Leads() {
		return
	}
	if p.enabled.Load() {
		for _, r := range rs {
			p.Check(r.Runner.Namespace, r.Runner.Name, r.RunnerUID)
		}
	}
	for _, runner := range p.indexer.ListIndexFuncValues(Index) {
		objs, err := p.indexer.ByIndex(Index, runner)
		if err != nil {
			continue
		}
		for _, o := range objs {
			if pod, ok := o.(*v1.Pod); ok {
				p.Observed(pod)
			}
		}
	}
}

// For builds the placeholder of runner on node: it requests what
// the reservation holds, with the runner's priority and tolerations. Not its
// host ports: the stock NodePorts would then keep the workflow pod off the
// node; tandem's accounting keeps holding them.
func For(runner *v1.Pod, node string, hold contract.Amount, image string) *v1.Pod {
	requests := hold.ToList()
	pod := podworker.HoldingPod(runner, "hold", image, requests, nil)
	pod.Name = contract.PlaceholderName(runner.Name)
	pod.Labels = map[string]string{contract.PlaceholderLabel: "true"}
	pod.Annotations = map[string]string{
		contract.PlaceholderOfAnnotation:   runner.Name,
		contract.PlaceholderSizeAnnotation: contract.AmountFromList(requests).String(),
		SafeToEvictAnnotation:              "false",
		DoNotDisruptAnnotation:             "true",
	}
	pod.Spec.NodeName = node
	return pod
}
