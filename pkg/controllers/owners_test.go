package controllers

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// ephemeralRunner is ARC's EphemeralRunner name in namespace arc.
func ephemeralRunner(name string, uid types.UID) *unstructured.Unstructured {
	er := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "actions.github.com/v1alpha1", "kind": contract.EphemeralRunnerKind}}
	er.SetNamespace("arc")
	er.SetName(name)
	er.SetUID(uid)
	return er
}

// ownedBy gives pod a controller reference.
func ownedBy(pod *v1.Pod, apiVersion, kind, name string, uid types.UID) *v1.Pod {
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}}
	return pod
}

// listing makes f's EphemeralRunners those given, listed.
func listing(t *testing.T, f *Feeder, ers ...*unstructured.Unstructured) {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, er := range ers {
		if err := indexer.Add(er); err != nil {
			t.Fatal(err)
		}
	}
	f.setEphemeralRunners(cache.NewGenericLister(indexer, contract.EphemeralRunnerResource.GroupResource()))
	f.arc.Store(arcListed)
}

// Issue 20: where ARC's EphemeralRunners are served, a pod is a runner only
// if the EphemeralRunner of its name, with the UID its controller reference
// names, exists: labels and owner references are anyone's to write.
func TestOwnership(t *testing.T) {
	const arcV1 = "actions.github.com/v1alpha1"
	tests := map[string]struct {
		arc  int32
		pod  *v1.Pod
		want Ownership
	}{
		"not looked up yet": {arc: arcUnknown, pod: runnerPod("r1").Obj(), want: OwnershipUnknown},
		"no ARC":            {arc: arcAbsent, pod: runnerPod("r1").Obj(), want: OwnershipNoARC},
		"controlled":        {arc: arcListed, pod: ownedBy(runnerPod("r1").Obj(), arcV1, "EphemeralRunner", "r1", "er-r1"), want: OwnershipControlled},
		"no owner":          {arc: arcListed, pod: runnerPod("r1").Obj(), want: OwnershipNone},
		"owned by a Job":    {arc: arcListed, pod: ownedBy(runnerPod("r1").Obj(), "batch/v1", "Job", "r1", "er-r1"), want: OwnershipNone},
		"another group":     {arc: arcListed, pod: ownedBy(runnerPod("r1").Obj(), "evil.io/v1", "EphemeralRunner", "r1", "er-r1"), want: OwnershipNone},
		"another name":      {arc: arcListed, pod: ownedBy(runnerPod("x").Obj(), arcV1, "EphemeralRunner", "r1", "er-r1"), want: OwnershipNone},
		"not listed":        {arc: arcListed, pod: ownedBy(runnerPod("r2").Obj(), arcV1, "EphemeralRunner", "r2", "er-r2"), want: OwnershipAwaited},
		"another UID":       {arc: arcListed, pod: ownedBy(runnerPod("r1").Obj(), arcV1, "EphemeralRunner", "r1", "forged"), want: OwnershipAwaited},
		"another namespace": {arc: arcListed, pod: ownedBy(runnerPod("r1").Namespace("other").Obj(), arcV1, "EphemeralRunner", "r1", "er-r1"), want: OwnershipAwaited},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := NewFeeder(nil)
			listing(t, f, ephemeralRunner("r1", "er-r1"))
			f.arc.Store(tc.arc)
			if got := f.ownership(tc.pod); got != tc.want {
				t.Errorf("Ownership = %v, want %v", got, tc.want)
			}
			if got, want := f.ownership(tc.pod).MayHoldRoom(), tc.want != OwnershipNone && tc.want != OwnershipAwaited; got != want {
				t.Errorf("MayHoldRoom = %v, want %v", got, want)
			}
		})
	}
}

// Issue 20: a reservation rebuilt from a record before ARC's
// EphemeralRunners were listed is released once they are, if no
// EphemeralRunner controls its pod; an ARC runner's stays. The runners that
// waited to know are activated.
func TestListingReleasesWhatIsNotARunner(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	c := &fakeCluster{}
	f := NewFeeder(nil)
	profile := &Profile{Name: "test", Runners: labels.Everything(), Recorder: events.NewFakeRecorder(10)}
	if err := f.join(context.Background(), c, profile, nil, Config{}); err != nil {
		t.Fatal(err)
	}
	arcRunner := ownedBy(runnerPod("r1").Node("n1").Obj(), "actions.github.com/v1alpha1", "EphemeralRunner", "r1", "er-r1")
	forged := runnerPod("r2").Node("n1").Obj()
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range []*v1.Pod{arcRunner, forged} {
		if err := pods.Add(p); err != nil {
			t.Fatal(err)
		}
		f.store.Rebuild(&reservations.Reservation{Runner: types.NamespacedName{Namespace: "arc", Name: p.Name}, RunnerUID: p.UID, Node: "n1", Size: contract.Amount{MilliCPU: 2500}})
	}
	f.UsePods(corelisters.NewPodLister(pods))
	f.arc.Store(arcUnknown)
	if !f.trusted(forged) {
		t.Fatal("a runner's record is not trusted before the EphemeralRunners are listed: reservations would be lost at every restart")
	}
	waiting := ownedBy(runnerPod("r3").Obj(), "actions.github.com/v1alpha1", "EphemeralRunner", "r3", "er-r3")
	f.Waiting().Add(waiting)

	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, er := range []*unstructured.Unstructured{ephemeralRunner("r1", "er-r1"), ephemeralRunner("r3", "er-r3")} {
		if err := indexer.Add(er); err != nil {
			t.Fatal(err)
		}
	}
	f.setEphemeralRunners(cache.NewGenericLister(indexer, contract.EphemeralRunnerResource.GroupResource()))
	f.arcKnown(logger, arcListed)

	if _, ok := f.store.Get(types.NamespacedName{Namespace: "arc", Name: "r2"}); ok {
		t.Error("the reservation of a pod no EphemeralRunner controls is still held once they are listed")
	}
	if _, ok := f.store.Get(types.NamespacedName{Namespace: "arc", Name: "r1"}); !ok {
		t.Error("the ARC runner's reservation was released")
	}
	if f.trusted(forged) {
		t.Error("a pod no EphemeralRunner controls is trusted once they are listed")
	}
	if len(c.activated) != 1 || c.activated[0] != "arc/r3" {
		t.Errorf("activated %v, want the runner that waited, arc/r3", c.activated)
	}
}
