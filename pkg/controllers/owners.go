package controllers

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
)

// A runner is what ARC made. Where ARC's EphemeralRunner resource is
// served, a pod that matches a profile's runner selector is a runner only
// if the EphemeralRunner of its name and namespace controls it: the pod's
// controller reference names it, with the UID the API gives it. Labels and
// owner references are anyone's to write who may create pods; an
// EphemeralRunner is only for whoever may create those, ARC's controller.
// Without the resource (ARC not installed, or a cluster that runs runners
// without it) the selector and runnerNamespaces alone decide, and the log
// says so once.

// Ownership is how a pod that matches a runner selector stands with ARC's
// EphemeralRunners.
type Ownership int

const (
	// OwnershipUnknown means it is not known yet whether ARC's
	// EphemeralRunners are served, or what they are (not looked up, or
	// not listed).
	OwnershipUnknown Ownership = iota
	// OwnershipNoARC means EphemeralRunners are not served; the labels decide.
	OwnershipNoARC
	// OwnershipControlled means the EphemeralRunner of the pod's name, with the
	// UID its controller reference names, exists.
	OwnershipControlled
	// OwnershipAwaited means the pod's controller reference names an
	// EphemeralRunner of its name that is not listed (yet), or not with
	// that UID: ARC creates the EphemeralRunner before its pod, and the
	// watch may not have delivered it.
	OwnershipAwaited
	// OwnershipNone means no EphemeralRunner controls the pod.
	OwnershipNone
)

// What is known of ARC's API (Feeder.arc).
const (
	arcUnknown int32 = iota
	arcAbsent
	arcListed
)

// MayHoldRoom reports whether a pod of this ownership may hold a
// reservation it has: everything but a pod that no EphemeralRunner
// controls, once that is known. Until the EphemeralRunners are listed the
// reservations recorded on runners are rebuilt, and the reconciler
// releases those of pods that turn out to be none of ARC's.
func (o Ownership) MayHoldRoom() bool {
	return o == OwnershipUnknown || o == OwnershipNoARC || o == OwnershipControlled
}

// ownership returns how pod stands with ARC's EphemeralRunners.
func (f *Feeder) ownership(pod *v1.Pod) Ownership {
	switch f.arc.Load() {
	case arcAbsent:
		return OwnershipNoARC
	case arcUnknown:
		return OwnershipUnknown
	}
	uid, ok := contract.ControllingEphemeralRunner(pod)
	if !ok {
		return OwnershipNone
	}
	obj, err := f.ephemeralRunnerLister().ByNamespace(pod.Namespace).Get(pod.Name)
	if err != nil {
		return OwnershipAwaited
	}
	if m, err := meta.Accessor(obj); err != nil || m.GetUID() != uid {
		return OwnershipAwaited
	}
	return OwnershipControlled
}

// arcKnown records what is known of ARC's API and requeues the runners
// that waited to know it.
func (f *Feeder) arcKnown(logger klog.Logger, state int32) {
	if f.arc.Swap(state) == state {
		return
	}
	if state == arcAbsent {
		logger.Info("ARC's EphemeralRunner resource is not served (CRD not installed?): a pod is a runner by runnerSelector and runnerNamespaces alone, and reservations of jobs without a container are held until their runner ends. Looking again every reconcile interval", "resource", contract.EphemeralRunnerResource.String())
	}
	if state == arcListed {
		f.releaseNotOwned(logger)
	}
	f.activate(logger, f.waiting.Matching(func(pod *v1.Pod, _ time.Time) bool { return true }))
}

// releaseNotOwned releases the reservations rebuilt, before ARC's
// EphemeralRunners were listed, from records on pods that no
// EphemeralRunner controls; the reconciler would, but only at its next pass.
func (f *Feeder) releaseNotOwned(logger klog.Logger) {
	if f.pods == nil {
		return
	}
	freed := false
	for _, r := range f.store.List() {
		pod, err := f.pods.Pods(r.Runner.Namespace).Get(r.Runner.Name)
		if err != nil || pod.UID != r.RunnerUID || pod.DeletionTimestamp != nil || f.ownership(pod).MayHoldRoom() {
			continue // the reconciler's, if anything
		}
		if _, ok := f.store.Release(r.Runner, r.RunnerUID); ok {
			freed = true
			f.repaired(logger, pod, metrics.RepairNotARunner, fmt.Sprintf("Released %s on node %s: no EphemeralRunner of ARC controls the pod, so it is not a runner", r.Size, r.Node))
		}
	}
	if freed {
		f.recordMetrics()
	}
}

// activateOwned requeues the waiting runner that an EphemeralRunner just
// listed controls.
func (f *Feeder) activateOwned(logger klog.Logger, namespace, name string) {
	f.activate(logger, f.waiting.Matching(func(pod *v1.Pod, _ time.Time) bool {
		return pod.Namespace == namespace && pod.Name == name
	}))
}
