package workflowreservation

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/utils/clock"

	"github.com/tandem-scheduler/tandem/pkg/controllers"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// shared is what the WorkflowReservation instances of one scheduler, one per
// profile that enables the plugin, have in common: one cluster, so one set of
// reservations, whichever profile took them.
type shared struct {
	store   *reservations.Store
	leader  *leadership.Leadership
	waiting controllers.WaitingPods

	mu sync.RWMutex
	// profiles are the instances by profile (schedulerName).
	profiles map[string]*WorkflowReservation
	// feeder is the instance whose informer handlers keep the store in step
	// with the cluster: the first one created.
	feeder *WorkflowReservation
	// nominated holds the runners nominated to a node and not bound yet:
	// while there are any, PreFilter cannot skip other pods, whose Filter
	// must protect the pair room of a nominated runner (AddPod).
	nominated map[types.UID]bool
	// released holds the runners whose reservation went with their node: a
	// later update of the runner pod, still bound there, must not rebuild it.
	released map[types.UID]bool
	// ephemeralRunners lists ARC's EphemeralRunners once they are watched.
	ephemeralRunners cache.GenericLister
	// pairs keeps the pair pods of waiting runners (nil without informers).
	pairPods *controllers.PairPods
	// holds keeps the placeholders of bound runners (nil without
	// informers).
	placeholders *controllers.Placeholders
	// warned holds, per pod, the reasons of the Warning events PreFilter
	// already sent it that every retry would repeat.
	warned map[types.UID]map[string]bool
	// configMapInformers are the informers of hookTemplateNamespaces, by
	// namespace; configMapWatched the ConfigMap informers with the
	// handler (allNamespaces: the scheduler's).
	configMapInformers map[string]cache.SharedIndexInformer
	configMapWatched   map[string]bool
}

func newShared(l *leadership.Leadership) *shared {
	if l == nil {
		l = leadership.Leading()
	}
	return &shared{
		store:     reservations.NewStore(),
		leader:    l,
		profiles:  map[string]*WorkflowReservation{},
		nominated: map[types.UID]bool{},
		released:  map[types.UID]bool{},
		warned:    map[types.UID]map[string]bool{},
		waiting:   controllers.WaitingPods{Clock: clock.RealClock{}},
	}
}

// NewFactory returns the plugin factory of one scheduler: the instances it
// creates (one per profile) share their reservations, and speak (events,
// metrics of held reservations) only while l leads; nil leads always.
func NewFactory(l *leadership.Leadership) frameworkruntime.PluginFactory {
	sh := newShared(l)
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return newPlugin(ctx, obj, h, sh)
	}
}

// add registers pl as the instance of its profile. Every profile's instance
// must read workflow pods by the same label: they share the reservations.
func (sh *shared) add(pl *WorkflowReservation) (first bool, err error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.feeder != nil && sh.feeder.runnerPodLabel != pl.runnerPodLabel {
		return false, fmt.Errorf("runnerPodLabel %q of profile %s differs from %q of profile %s: every profile with %s must use the same", pl.runnerPodLabel, pl.profile, sh.feeder.runnerPodLabel, sh.feeder.profile, Name)
	}
	sh.profiles[pl.profile] = pl
	if sh.feeder == nil {
		sh.feeder = pl
		return true, nil
	}
	return false, nil
}

// profileOf returns the instance of the tandem profile that schedules pod,
// or nil if no tandem profile does.
func (sh *shared) profileOf(pod *v1.Pod) *WorkflowReservation {
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.profiles[pod.Spec.SchedulerName]
}

// recorder returns the event recorder for pod: its profile's, else the
// feeder's. It returns nil on a replica that does not lead: only the leader
// speaks for the cluster.
func (sh *shared) recorder(pod *v1.Pod) events.EventRecorder {
	if !sh.leader.IsLeader() {
		return nil
	}
	if pl := sh.profileOf(pod); pl != nil {
		return pl.handle.EventRecorder()
	}
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.feeder.handle.EventRecorder()
}

// feederProfile returns the profile of the instance that feeds the store.
func (sh *shared) feederProfile() string {
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.feeder.profile
}

// setNominated notes whether the runner is nominated to a node and unbound.
func (sh *shared) setNominated(uid types.UID, nominated bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if nominated {
		sh.nominated[uid] = true
	} else {
		delete(sh.nominated, uid)
	}
}

// anyNominated reports whether some runner is nominated and not bound.
func (sh *shared) anyNominated() bool {
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return len(sh.nominated) > 0
}

// release marks the runners whose reservation went with their node.
func (sh *shared) release(uids ...types.UID) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, uid := range uids {
		sh.released[uid] = true
	}
}

// wasReleased reports whether the runner's reservation went with its node.
func (sh *shared) wasReleased(uid types.UID) bool {
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.released[uid]
}

func (sh *shared) setEphemeralRunners(l cache.GenericLister) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.ephemeralRunners = l
}

func (sh *shared) ephemeralRunnerLister() cache.GenericLister {
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.ephemeralRunners
}

// forget drops what is kept about a pod that is gone.
func (sh *shared) forget(uid types.UID) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	delete(sh.released, uid)
	delete(sh.nominated, uid)
	delete(sh.warned, uid)
}

// firstWarning reports whether the pod has not been sent a Warning with
// reason yet, and notes that it has now.
func (sh *shared) firstWarning(uid types.UID, reason string) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.warned[uid][reason] {
		return false
	}
	if sh.warned[uid] == nil {
		sh.warned[uid] = map[string]bool{}
	}
	sh.warned[uid][reason] = true
	return true
}
