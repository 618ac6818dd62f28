package controllers

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// ActivateWaiting requeues the pods turned away within RecentRejection, now
// or when their backoff ends.
func (f *Feeder) ActivateWaiting(logger klog.Logger) {
	since := f.waiting.Now().Add(-RecentRejection)
	pods, wait := f.waiting.FreedRoom(func(_ *v1.Pod, rejected time.Time) bool { return rejected.After(since) })
	f.activate(logger, pods)
	f.activateDue(logger, wait)
}

// activateAllWaiting requeues every pod turned away, now or when its
// backoff ends.
func (f *Feeder) activateAllWaiting(logger klog.Logger) {
	pods, wait := f.waiting.FreedRoom(func(*v1.Pod, time.Time) bool { return true })
	f.activate(logger, pods)
	f.activateDue(logger, wait)
}

// activateDue activates, after wait (none if 0), the pods then due.
func (f *Feeder) activateDue(logger klog.Logger, wait time.Duration) {
	if wait <= 0 {
		return
	}
	f.waiting.Clock.AfterFunc(wait, func() {
		// Not on the clock's goroutine: a fake clock runs this holding
		// its lock, which due's reading of the time takes.
		go func() {
			pods, wait := f.waiting.Due()
			f.activate(logger, pods)
			f.activateDue(logger, wait)
		}()
	})
}

func (f *Feeder) activate(logger klog.Logger, pods map[string]*v1.Pod) {
	if len(pods) == 0 {
		return
	}
	logger.V(4).Info("Reserved room freed, activating waiting pods", "count", len(pods))
	f.cluster.Activate(logger, pods)
}
