package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/tandem-scheduler/tandem/contract"
)

// placeholderCache is what the webhook knows of the placeholders in the
// runner namespaces: an informer per namespace (one for every namespace if
// none is named), of the pods labelled as placeholders only, indexed by
// node. A review that finds its runner's placeholder there (the common
// case: a placeholder exists from its runner's binding, and the pinned
// workflow pod comes after the runner started and took a job) lists
// nothing; one from a namespace the webhook does not watch costs no API
// call at all. Where the cache shows none, the review lists the node's
// placeholders from the apiserver as before: a placeholder created within
// the informer's lag (tandem re-creates a lost one) must not be missed.
type placeholderCache struct {
	// informers by namespace; "" is every namespace.
	informers map[string]cache.SharedIndexInformer
}

// byNode indexes placeholders by spec.nodeName.
const byNode = "node"

// cacheSyncTimeout bounds Start's wait for the informers' first list.
const cacheSyncTimeout = time.Minute

func newPlaceholderCache(client kubernetes.Interface, namespaces []string) *placeholderCache {
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	c := &placeholderCache{informers: map[string]cache.SharedIndexInformer{}}
	for _, ns := range namespaces {
		factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = contract.PlaceholderLabel + "=true" }))
		informer := factory.Core().V1().Pods().Informer()
		// What Review reads, less the rest (managed fields, the spec but
		// its node).
		_ = informer.SetTransform(func(obj any) (any, error) {
			p, ok := obj.(*v1.Pod)
			if !ok {
				return obj, nil
			}
			return &v1.Pod{
				TypeMeta: p.TypeMeta,
				ObjectMeta: metav1.ObjectMeta{
					Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion,
					Labels: p.Labels, Annotations: p.Annotations, OwnerReferences: p.OwnerReferences,
					DeletionTimestamp: p.DeletionTimestamp, CreationTimestamp: p.CreationTimestamp,
				},
				Spec: v1.PodSpec{NodeName: p.Spec.NodeName},
			}, nil
		})
		if err := informer.AddIndexers(cache.Indexers{byNode: func(obj any) ([]string, error) {
			p, ok := obj.(*v1.Pod)
			if !ok || p.Spec.NodeName == "" {
				return nil, nil
			}
			return []string{p.Spec.NodeName}, nil
		}}); err != nil {
			panic(fmt.Sprintf("indexing placeholders by node: %v", err)) // only before the informer starts
		}
		c.informers[ns] = informer
	}
	return c
}

// start runs the informers until ctx ends and waits for their first list.
func (c *placeholderCache) start(ctx context.Context) error {
	var synced []cache.InformerSynced
	for _, informer := range c.informers {
		go informer.Run(ctx.Done())
		synced = append(synced, informer.HasSynced)
	}
	ctx, cancel := context.WithTimeout(ctx, cacheSyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("the placeholders' informers did not sync within %v", cacheSyncTimeout)
	}
	return nil
}

// on returns the pods labelled as placeholders on node in namespace (the
// cache's objects, not to be changed; none before the informer's first
// list), and whether the webhook watches namespace at all.
func (c *placeholderCache) on(namespace, node string) (pods []*v1.Pod, watched bool) {
	informer, ok := c.informers[namespace]
	if !ok {
		if informer, ok = c.informers[metav1.NamespaceAll]; !ok {
			return nil, false
		}
	}
	objs, err := informer.GetIndexer().ByIndex(byNode, node)
	if err != nil {
		return nil, true // the index exists from newPlaceholderCache on
	}
	pods = make([]*v1.Pod, 0, len(objs))
	for _, obj := range objs {
		if p, ok := obj.(*v1.Pod); ok && p.Namespace == namespace {
			pods = append(pods, p)
		}
	}
	// The index keeps a set: in name order, as the apiserver lists them.
	slices.SortFunc(pods, func(a, b *v1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods, true
}
