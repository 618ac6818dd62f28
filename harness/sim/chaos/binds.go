package chaos

import (
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// bindWatcher records, as an observer of the run's pod watch, when a
// scheduler bound a pod: an update that sets spec.nodeName of a pod of
// schedulerName, or the first sight of a probe pod already bound (probes are
// created unbound; a watch that relists after an apiserver restart shows a
// probe created and bound meanwhile as one Add). Times are the harness's real clock at the event, to the
// millisecond (the API's own timestamps, e.g. the PodScheduled condition,
// have one-second resolution).
type bindWatcher struct {
	schedulerName string

	mu    sync.Mutex
	binds map[string]time.Time
}

func newBindWatcher(schedulerName string) *bindWatcher {
	return &bindWatcher{schedulerName: schedulerName, binds: map[string]time.Time{}}
}

func (w *bindWatcher) start(factory informers.SharedInformerFactory) error {
	_, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*v1.Pod); ok {
				w.added(pod, time.Now())
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

func (w *bindWatcher) updated(old, pod *v1.Pod, now time.Time) {
	if old.Spec.NodeName != "" || pod.Spec.NodeName == "" || pod.Spec.SchedulerName != w.schedulerName {
		return
	}
	w.record(pod, now)
}

// added records a probe first seen bound; it was bound at now at the latest.
func (w *bindWatcher) added(pod *v1.Pod, now time.Time) {
	if pod.Labels[ProbeLabel] != "true" || pod.Spec.NodeName == "" || pod.Spec.SchedulerName != w.schedulerName {
		return
	}
	w.record(pod, now)
}

func (w *bindWatcher) record(pod *v1.Pod, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := pod.Namespace + "/" + pod.Name + "/" + string(pod.UID)
	if _, ok := w.binds[key]; !ok {
		w.binds[key] = now
	}
}

// boundAt returns when the pod (namespace/name/uid) was seen bound.
func (w *bindWatcher) boundAt(key string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.binds[key]
	return t, ok
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
