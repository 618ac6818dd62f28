package podgc

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/harness/sim/retry"
)

// Owners plays the part of kube-controller-manager's garbage collector for
// pods whose controller is a pod: tandem's placeholder and pair pods, owned
// by their runner pod. When the owner is deleted, or a dependent shows up
// whose owner is already gone (its create raced the owner's delete), the
// dependent is deleted, as the garbage collector's background propagation
// does, once a live GET confirms the owner (that UID) is gone; a GET or
// delete the apiserver does not answer is tried again. Other owner
// kinds are left alone (the storage emulator collects claims itself).
type Owners struct {
	client kubernetes.Interface
	pods   corelisters.PodLister
	// writes retries a check or deletion the apiserver did not answer.
	writes *retry.Queue
}

// NewOwners returns the collector; Start runs it.
func NewOwners(client kubernetes.Interface) *Owners {
	return &Owners{client: client, writes: retry.New(0)}
}

// Start registers the collector on factory's pod informer; the caller
// starts the factory.
func (o *Owners) Start(ctx context.Context, factory informers.SharedInformerFactory) error {
	o.pods = factory.Core().V1().Pods().Lister()
	go o.writes.Run(ctx)
	_, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*v1.Pod); ok {
				o.onPod(ctx, pod)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pod, ok := obj.(*v1.Pod); ok {
				o.onOwnerGone(ctx, pod)
			}
		},
	})
	return err
}

// podOwner returns the controller reference of pod if it is a pod.
func podOwner(pod *v1.Pod) *metav1.OwnerReference {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "Pod" || ref.APIVersion != "v1" {
		return nil
	}
	return ref
}

// onPod collects a new dependent whose owner is not there.
func (o *Owners) onPod(ctx context.Context, pod *v1.Pod) {
	ref := podOwner(pod)
	if ref == nil {
		return
	}
	if owner, err := o.pods.Pods(pod.Namespace).Get(ref.Name); err == nil && owner.UID == ref.UID {
		return
	}
	o.collect(ctx, pod, ref.UID)
}

// onOwnerGone collects the dependents of a deleted pod.
func (o *Owners) onOwnerGone(ctx context.Context, owner *v1.Pod) {
	pods, err := o.pods.Pods(owner.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pods {
		if ref := podOwner(p); ref != nil && ref.UID == owner.UID {
			o.collect(ctx, p, owner.UID)
		}
	}
}

// collect deletes dependent once its owner (uid) is confirmed gone,
// retrying while the apiserver does not answer.
func (o *Owners) collect(ctx context.Context, dependent *v1.Pod, uid types.UID) {
	ref := podOwner(dependent)
	o.writes.Do(ctx, "owner-gc/"+string(dependent.UID), func(ctx context.Context) error {
		owner, err := o.client.CoreV1().Pods(dependent.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil && owner.UID == uid {
			return nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		err = o.client.CoreV1().Pods(dependent.Namespace).Delete(ctx, dependent.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &dependent.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		if err == nil {
			klog.FromContext(ctx).V(2).Info("Garbage collector deleted a pod whose owner is gone", "pod", klog.KObj(dependent), "owner", ref.Name, "ownerUID", uid)
		}
		return err
	})
}
