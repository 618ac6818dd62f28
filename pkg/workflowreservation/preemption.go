package workflowreservation

import (
	"context"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// Preemption and nominated pods. A reservation has its runner's priority:
// it goes when its runner goes. When DefaultPreemption tries victims on a
// node it removes them from a copy of the cycle state (RemovePod) and adds
// back those it can spare (AddPod); a runner removed takes its reservation
// with it, a workflow pod removed takes what remains of its reservation, so
// that evicting either frees exactly what the eviction would free. When the
// framework filters a pod against a node with nominated pods of at least its
// priority, it adds them (AddPod): a nominated runner brings its workflow
// pod's room, which the pod being filtered cannot take.

// adjustments are the changes AddPod and RemovePod made to one copy of a
// cycle state.
type adjustments struct {
	// removed are the runners removed here: their reservations do not
	// count. workflowRemoved are the runners whose claiming workflow pod
	// was removed: evicting it uses the reservation up, so it holds
	// nothing either. The two are undone separately, pod by pod.
	removed         []types.UID
	workflowRemoved []types.UID
	// added is, per node, the workflow room of nominated runners.
	added map[string]contract.Amount
}

func (a adjustments) clone() adjustments {
	c := adjustments{removed: slices.Clone(a.removed), workflowRemoved: slices.Clone(a.workflowRemoved)}
	if len(a.added) > 0 {
		c.added = make(map[string]contract.Amount, len(a.added))
		for n, v := range a.added {
			c.added[n] = v
		}
	}
	return c
}

// empty reports whether AddPod and RemovePod changed nothing.
func (a *adjustments) empty() bool {
	return len(a.removed) == 0 && len(a.workflowRemoved) == 0 && len(a.added) == 0
}

// isRemoved reports whether the reservation of the runner counts nothing
// here: the runner or its claiming workflow pod was removed.
func (a *adjustments) isRemoved(uid types.UID) bool {
	return (len(a.removed) > 0 && slices.Contains(a.removed, uid)) ||
		(len(a.workflowRemoved) > 0 && slices.Contains(a.workflowRemoved, uid))
}

func addUID(list []types.UID, uid types.UID) []types.UID {
	if slices.Contains(list, uid) {
		return list
	}
	return append(list, uid)
}

func dropUID(list []types.UID, uid types.UID) []types.UID {
	return slices.DeleteFunc(list, func(u types.UID) bool { return u == uid })
}

func (a *adjustments) add(node string, room contract.Amount) {
	if a.added == nil {
		a.added = map[string]contract.Amount{}
	}
	a.added[node] = a.added[node].Add(room)
}

// addedOn returns sum plus the room nominated runners hold on node.
func (a *adjustments) addedOn(node string, sum contract.Amount) contract.Amount {
	if extra, ok := a.added[node]; ok {
		return sum.Add(extra)
	}
	return sum
}

// PreFilterExtensions returns the plugin: reservations change with the pods
// the framework adds or removes during preemption and for nominated pods.
func (pl *WorkflowReservation) PreFilterExtensions() fwk.PreFilterExtensions { return pl }

// AddPod adds podInfoToAdd to the node in this cycle: a runner spared by
// preemption gets its reservation back; a nominated runner that is not bound
// yet brings the room of its workflow pod.
func (pl *WorkflowReservation) AddPod(ctx context.Context, cs fwk.CycleState, podToSchedule *v1.Pod, podInfoToAdd fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := getCycleState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	p := podInfoToAdd.GetPod()
	if p.UID == podToSchedule.UID {
		return nil
	}
	if r, ok := pl.store.Get(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}); ok && r.RunnerUID == p.UID {
		s.adjust.removed = dropUID(s.adjust.removed, p.UID)
		return nil
	}
	if r, ok := pl.reservationOfVictim(p, nodeInfo); ok {
		s.adjust.workflowRemoved = dropUID(s.adjust.workflowRemoved, r.RunnerUID)
		return nil
	}
	if room := pl.pods.NominatedRoom(p); !room.IsZero() {
		s.adjust.add(nodeInfo.Node().Name, room)
		klog.FromContext(ctx).V(5).Info("Nominated runner's workflow room counted", "pod", klog.KObj(podToSchedule), "runner", klog.KObj(p), "node", nodeInfo.Node().Name, "size", room.String())
	}
	return nil
}

// RemovePod removes podInfoToRemove from the node in this cycle: a runner
// takes its reservation, a workflow pod what remains of its runner's.
func (pl *WorkflowReservation) RemovePod(ctx context.Context, cs fwk.CycleState, podToSchedule *v1.Pod, podInfoToRemove fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := getCycleState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	p := podInfoToRemove.GetPod()
	if r, ok := pl.store.Get(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}); ok && r.RunnerUID == p.UID && r.Node == nodeInfo.Node().Name {
		s.adjust.removed = addUID(s.adjust.removed, r.RunnerUID)
		klog.FromContext(ctx).V(5).Info("Victim runner's reservation removed", "pod", klog.KObj(podToSchedule), "runner", klog.KObj(p), "node", r.Node)
		return nil
	}
	if r, ok := pl.reservationOfVictim(p, nodeInfo); ok {
		s.adjust.workflowRemoved = addUID(s.adjust.workflowRemoved, r.RunnerUID)
	}
	return nil
}

// reservationOfVictim returns the reservation that workflow pod p, on
// nodeInfo's node, claimed (or would claim, if the informer handler has not
// caught up yet).
func (pl *WorkflowReservation) reservationOfVictim(p *v1.Pod, nodeInfo fwk.NodeInfo) (reservations.Reservation, bool) {
	runner, ok := pl.pods.RunnerOf(p)
	if !ok {
		return reservations.Reservation{}, false
	}
	r, ok := pl.store.Get(runner)
	if !ok || r.Node != nodeInfo.Node().Name || !r.Owns(p) {
		return reservations.Reservation{}, false
	}
	return r, r.ClaimedBy() == p.UID || r.ClaimedBy() == ""
}
