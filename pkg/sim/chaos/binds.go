package chaos

import (
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// bindWatcher records, as an observer of the run's pod watch, when each pod
// was first seen and when a scheduler bound it: an update that sets
// spec.nodeName of a pod of schedulerName. Times are the harness's real
// clock at the event, to the millisecond (the API's own timestamps, e.g. the
// PodScheduled condition, have one-second resolution).
type bindWatcher struct {
	schedulerName string

	mu        sync.Mutex
	firstSeen map[types.UID]time.Time
	binds     []bind
}

// bind is a pod bound by a scheduler.
type bind struct {
	Pod string
	// At is when the bind was seen; Seen when the pod itself first was.
	At, Seen time.Time
}

func newBindWatcher(schedulerName string) *bindWatcher {
	return &bindWatcher{schedulerName: schedulerName, firstSeen: map[types.UID]time.Time{}}
}

func (w *bindWatcher) start(factory informers.SharedInformerFactory) error {
	_, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*v1.Pod); ok {
				w.seen(pod, time.Now())
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*v1.Pod)
			pod, ok2 := newObj.(*v1.Pod)
			if ok1 && ok2 {
				w.updated(old, pod, time.Now())
			}
		},
	})
	return err
}

func (w *bindWatcher) seen(pod *v1.Pod, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.firstSeen[pod.UID]; !ok {
		w.firstSeen[pod.UID] = now
	}
}

func (w *bindWatcher) updated(old, pod *v1.Pod, now time.Time) {
	w.seen(pod, now)
	if old.Spec.NodeName != "" || pod.Spec.NodeName == "" || pod.Spec.SchedulerName != w.schedulerName {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.binds = append(w.binds, bind{Pod: pod.Namespace + "/" + pod.Name, At: now, Seen: w.firstSeen[pod.UID]})
}

// recovery returns how long after t the first pod first seen after t was
// bound, and that pod.
func (w *bindWatcher) recovery(t time.Time) (time.Duration, string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return firstBindAfter(w.binds, t)
}

// firstBindAfter returns, of the binds of pods first seen after t, the
// earliest one's delay after t. Such a pod cannot have been bound by a
// scheduler that was gone at t (a killed leader never saw it), so the delay
// measures how long scheduling was out: from the loss of the scheduler to
// the first pod a new one placed.
func firstBindAfter(binds []bind, t time.Time) (time.Duration, string, bool) {
	var first *bind
	for i := range binds {
		b := &binds[i]
		if b.Seen.After(t) && b.At.After(t) && (first == nil || b.At.Before(first.At)) {
			first = b
		}
	}
	if first == nil {
		return 0, "", false
	}
	return first.At.Sub(t), first.Pod, true
}

// Stats are percentiles of durations, in seconds.
type Stats struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	Max   float64 `json:"max"`
}

// statsOf returns the median (the lower of the two middle values for an
// even count) and the maximum of d.
func statsOf(d []time.Duration) Stats {
	if len(d) == 0 {
		return Stats{}
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	sec := func(x time.Duration) float64 { return float64(x.Round(10*time.Millisecond)) / float64(time.Second) }
	return Stats{Count: len(s), P50: sec(s[(len(s)-1)/2]), Max: sec(s[len(s)-1])}
}
