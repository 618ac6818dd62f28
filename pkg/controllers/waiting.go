package controllers

import (
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// RecentRejection is how long after this plugin turned a pod away a release
// of room activates it (when its backoff ends, which may be later): the
// window in which the pod may have been retried on the scheduler's own
// event for the release and rejected again because the plugin's handler had
// not caught up yet.
const RecentRejection = 5 * time.Second

// WaitingPods remembers the pods this plugin turned away. When an informer
// event frees reserved room (a runner or workflow pod gone, a claim smaller
// than its reservation), those turned away just now are activated: the
// scheduler may have handled its own event for that change before the
// plugin's store caught up, and would otherwise leave them waiting for the
// next periodic flush. Pods turned away earlier are the QueueingHints' to
// requeue. Releases no cluster event announces (the reconciler's, a job
// without a container) activate every waiting pod.
//
// Handle.Activate moves a pod past its backoff. A pod turned away again
// after each activation would otherwise be retried on every release, a
// scheduling cycle per waiting pod for every job start and end in a busy
// cluster; so a pod still in its backoff is activated when the backoff
// ends, as the queue would have moved it. The backoff is the scheduler's
// as the args give it (a plugin cannot read the scheduler's own), counted
// over this plugin's rejections only.
//
// A release can also land during the cycle that turns a pod away, after its
// Filter saw the room held and before PostFilter remembers the pod; the
// scheduler's event for the change was spent on that very cycle. freed
// counts the releases, so that PostFilter can tell (TurnedAway).
type WaitingPods struct {
	mu   sync.Mutex
	pods map[types.UID]waitingPod
	// freed is only added to under mu; PreFilter reads it without.
	freed atomic.Uint64
	// Clock is the real one (the plugin's shared state) unless a test
	// sets it.
	Clock clock.WithDelayedExecution
	// timerAt is when the activation of the pods put off is scheduled
	// (zero: none).
	timerAt time.Time
	// initialBackoff and maxBackoff are the scheduler's pod backoff
	// (SetBackoff; zero: none).
	initialBackoff, maxBackoff time.Duration
}

type waitingPod struct {
	pod *v1.Pod
	// rejected is when the pod was last turned away, rejections how many
	// times since it began to wait.
	rejected   time.Time
	rejections int
	// due: an activation at the end of the backoff is scheduled.
	due bool
}

// SetBackoff sets the scheduler's pod backoff from the plugin's args
// (seconds, as the args' defaulting set them).
func (w *WaitingPods) SetBackoff(initialSeconds, maxSeconds int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.initialBackoff, w.maxBackoff = time.Duration(initialSeconds)*time.Second, time.Duration(maxSeconds)*time.Second
}

// backoffLocked is how long after its last rejection p may be activated:
// a pod turned away n times is activated no sooner than initial·2^(n-1), at
// most max, after the last time, as the scheduler backs it off.
func (w *WaitingPods) backoffLocked(p waitingPod) time.Duration {
	initial, maxBackoff := w.initialBackoff, w.maxBackoff
	d := initial
	for i := 1; i < p.rejections && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// Now is the time on the waiting pods' clock.
func (w *WaitingPods) Now() time.Time {
	return w.Clock.Now()
}

// scheduleLocked returns wait if the caller is to call due then: no call
// as early is scheduled already.
func (w *WaitingPods) scheduleLocked(now time.Time, wait time.Duration) time.Duration {
	if wait <= 0 {
		return 0
	}
	if at := now.Add(wait); w.timerAt.IsZero() || at.Before(w.timerAt) {
		w.timerAt = at
		return wait
	}
	return 0
}

// put adds pod to pods, made on first use (most releases activate none).
func put(pods map[string]*v1.Pod, pod *v1.Pod) map[string]*v1.Pod {
	if pods == nil {
		pods = map[string]*v1.Pod{}
	}
	pods[pod.Namespace+"/"+pod.Name] = pod
	return pods
}

// Add remembers pod as turned away now.
func (w *WaitingPods) Add(pod *v1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.addLocked(pod)
}

func (w *WaitingPods) addLocked(pod *v1.Pod) {
	if w.pods == nil {
		w.pods = map[types.UID]waitingPod{}
	}
	p := w.pods[pod.UID]
	w.pods[pod.UID] = waitingPod{pod: pod, rejected: w.Now(), rejections: p.rejections + 1}
}

// Releases returns the count of releases so far, for TurnedAway.
func (w *WaitingPods) Releases() uint64 {
	return w.freed.Load()
}

// TurnedAway remembers a pod this plugin's Filter turned away in a cycle
// that began when Releases() was seen, and reports whether room was freed
// since: then the pod must be activated now, because the release's
// activation ran before the pod was remembered.
func (w *WaitingPods) TurnedAway(pod *v1.Pod, seen uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.addLocked(pod)
	return w.freed.Load() != seen
}

// Remove forgets the pod uid.
func (w *WaitingPods) Remove(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pods, uid)
}

// Matching returns the waiting pods for which match is true, keyed for
// Handle.Activate.
func (w *WaitingPods) Matching(match func(*v1.Pod, time.Time) bool) map[string]*v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	pods := map[string]*v1.Pod{}
	for _, p := range w.pods {
		if match(p.pod, p.rejected) {
			pods[p.pod.Namespace+"/"+p.pod.Name] = p.pod
		}
	}
	return pods
}

// FreedRoom counts a release of room and returns the waiting pods for which
// match is true and whose backoff is over, and, if the others' activation
// is the caller's to schedule, the time until the earliest of their
// backoffs ends (then call due). Counting and matching under one lock make
// every pod turned away either matched here or told by turnedAway.
func (w *WaitingPods) FreedRoom(match func(*v1.Pod, time.Time) bool) (map[string]*v1.Pod, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.freed.Add(1)
	now := w.Now()
	var pods map[string]*v1.Pod
	var wait time.Duration
	for uid, p := range w.pods {
		if !match(p.pod, p.rejected) {
			continue
		}
		if d := p.rejected.Add(w.backoffLocked(p)).Sub(now); d > 0 {
			if !p.due {
				p.due = true
				w.pods[uid] = p
				if wait == 0 || d < wait {
					wait = d
				}
			}
			continue
		}
		if p.due {
			p.due = false // or the timer would activate it again
			w.pods[uid] = p
		}
		pods = put(pods, p.pod)
	}
	return pods, w.scheduleLocked(now, wait)
}

// Due returns the pods whose activation was put off until their backoff
// ended and whose backoff is over, and, as freedRoom does, when to call it
// again for those still in it. A pod turned away again in the meantime is
// no longer due: that cycle saw the freed room.
func (w *WaitingPods) Due() (map[string]*v1.Pod, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.Now()
	if !now.Before(w.timerAt) {
		w.timerAt = time.Time{}
	}
	var pods map[string]*v1.Pod
	var wait time.Duration
	for uid, p := range w.pods {
		if !p.due {
			continue
		}
		if d := p.rejected.Add(w.backoffLocked(p)).Sub(now); d > 0 {
			if wait == 0 || d < wait {
				wait = d
			}
			continue
		}
		p.due = false
		w.pods[uid] = p
		pods = put(pods, p.pod)
	}
	return pods, w.scheduleLocked(now, wait)
}
