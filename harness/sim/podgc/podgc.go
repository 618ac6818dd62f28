// Package podgc plays the part of kube-controller-manager's pod garbage
// collector (pkg/controller/podgc) that matters when a node goes away: pods
// bound to a node that no longer exists are marked Failed with a
// DisruptionTarget condition (reason DeletionByPodGC) and force-deleted.
// Like the real controller it runs every CheckPeriod and deletes a node's
// pods only once the node has been missing for the Quarantine, confirmed by
// a live GET; both are simulated time, scaled like everything else.
package podgc

import (
	"context"
	"encoding/json"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
)

// The real controller's timings (gcCheckPeriod, quarantineTime).
const (
	CheckPeriod = 20 * time.Second
	Quarantine  = 40 * time.Second
)

// ReasonDeletionByPodGC is the reason of the DisruptionTarget condition
// PodGC sets on an orphaned pod before it deletes it.
const ReasonDeletionByPodGC = "DeletionByPodGC"

// Clock is the simulated time.
type Clock interface {
	Now() time.Duration
	Real(sim time.Duration) time.Duration
}

// Collector deletes the pods of missing nodes.
type Collector struct {
	client kubernetes.Interface
	clock  Clock
	pods   corelisters.PodLister
	nodes  corelisters.NodeLister
	// missing holds when each unknown node was first seen missing.
	missing map[string]time.Duration
}

// New returns a collector; Start runs it.
func New(client kubernetes.Interface, clock Clock) *Collector {
	return &Collector{client: client, clock: clock, missing: map[string]time.Duration{}}
}

// Start takes factory's pod and node listers and runs the collector until
// ctx ends; the caller starts the factory.
func (c *Collector) Start(ctx context.Context, factory informers.SharedInformerFactory) error {
	c.pods = factory.Core().V1().Pods().Lister()
	c.nodes = factory.Core().V1().Nodes().Lister()
	podsSynced := factory.Core().V1().Pods().Informer().HasSynced
	nodesSynced := factory.Core().V1().Nodes().Informer().HasSynced
	go func() {
		ticker := time.NewTicker(c.clock.Real(CheckPeriod))
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			if podsSynced() && nodesSynced() {
				c.gc(ctx)
			}
		}
	}()
	return nil
}

// gc is one pass of gcOrphaned.
func (c *Collector) gc(ctx context.Context) {
	logger := klog.FromContext(ctx)
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	existing := map[string]bool{}
	for _, n := range nodes {
		existing[n.Name] = true
	}
	now := c.clock.Now()
	deleted := map[string]bool{}
	for _, pod := range pods {
		node := pod.Spec.NodeName
		if node == "" || existing[node] {
			continue
		}
		since, ok := c.missing[node]
		if !ok {
			c.missing[node] = now
			continue
		}
		if now-since < Quarantine {
			continue
		}
		if _, checked := deleted[node]; !checked {
			_, err := c.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			deleted[node] = apierrors.IsNotFound(err)
		}
		if !deleted[node] {
			continue
		}
		logger.V(2).Info("Found orphaned Pod assigned to the Node, deleting", "pod", klog.KObj(pod), "node", node)
		if err := c.markFailedAndDelete(ctx, pod); err != nil {
			logger.Error(err, "Failed to delete orphaned pod", "pod", klog.KObj(pod))
		}
	}
	for node := range c.missing {
		if existing[node] {
			delete(c.missing, node)
		}
	}
}

// markFailedAndDelete is markFailedAndDeletePodWithCondition: phase Failed
// and the DisruptionTarget condition (unless the pod already finished), then
// a deletion with grace period 0.
func (c *Collector) markFailedAndDelete(ctx context.Context, pod *v1.Pod) error {
	if pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
		status := pod.Status.DeepCopy()
		status.Phase = v1.PodFailed
		cond := v1.PodCondition{
			Type: v1.DisruptionTarget, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now(),
			Reason: ReasonDeletionByPodGC, Message: "PodGC: node no longer exists",
		}
		replaced := false
		for i := range status.Conditions {
			if status.Conditions[i].Type == v1.DisruptionTarget {
				status.Conditions[i], replaced = cond, true
			}
		}
		if !replaced {
			status.Conditions = append(status.Conditions, cond)
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": pod.UID}, "status": status})
		if err != nil {
			return err
		}
		_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	zero := int64(0)
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
