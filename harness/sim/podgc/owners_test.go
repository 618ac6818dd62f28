package podgc

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"
)

func ownedBy(name, kind, ownerName, ownerUID string) *v1.Pod {
	p := st.MakePod().Namespace("ns").Name(name).UID(name).Node("n1").Obj()
	apiVersion := "v1"
	if kind == "Job" {
		apiVersion = "batch/v1"
	}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: ownerName, UID: types.UID(ownerUID), Controller: ptr.To(true)}}
	return p
}

// Pods controlled by a pod go with it; a dependent whose owner is gone when
// it shows up goes at once; an owner recreated under the same name (another
// UID) does not keep the old one's dependents; pods of other owners stay.
func TestOwners(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	runner := st.MakePod().Namespace("ns").Name("r1").UID("r1").Node("n1").Obj()
	hold := ownedBy("r1-hold", "Pod", "r1", "r1")
	stale := ownedBy("r2-hold", "Pod", "r2", "r2-old") // r2 now has another UID
	r2 := st.MakePod().Namespace("ns").Name("r2").UID("r2-new").Node("n1").Obj()
	step := ownedBy("step", "Job", "job", "job")
	client := fake.NewClientset(runner, hold, stale, r2, step)
	// The first look at r2's owner finds the apiserver away: tried again.
	var failed atomic.Bool
	client.PrependReactor("get", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.GetAction).GetName() == "r2" && failed.CompareAndSwap(false, true) {
			return true, nil, apierrors.NewServiceUnavailable("restarting")
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	if err := NewOwners(client).Start(ctx, factory); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	gone := func(name string) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := client.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			t.Fatalf("pod %s was not collected: %v", name, err)
		}
	}
	gone("r2-hold")
	if !failed.Load() {
		t.Errorf("the first look at r2 did not fail: the retry was not tested")
	}
	if _, err := client.CoreV1().Pods("ns").Get(ctx, "r1-hold", metav1.GetOptions{}); err != nil {
		t.Fatalf("r1-hold while r1 exists: %v, want it kept", err)
	}
	if err := client.CoreV1().Pods("ns").Delete(ctx, "r1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone("r1-hold")
	for _, name := range []string{"step", "r2"} {
		if _, err := client.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("pod %s: %v, want it kept", name, err)
		}
	}
}
