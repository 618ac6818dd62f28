package controllers

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/pkg/sizing"
)

// allNamespaces keys the scheduler's cluster-wide ConfigMap informer in
// Feeder.configMapWatched.
const allNamespaces = ""

// hookTemplates returns the lister that hook templates are read through.
// Without hookTemplateNamespaces it is the scheduler's cluster-wide
// ConfigMap informer, which the scheduler syncs before it schedules; with
// them, one informer per namespace, started here and shared by the
// profiles. Nothing waits for those: a runner whose template is in a
// namespace not listed yet waits (notListedError), other pods are not held
// up by a namespace tandem cannot list. Each informer gets, once, the
// handler that retries runners waiting for a template, and a goroutine that
// retries those waiting for the listing (activateWhenListed).
func (f *Feeder) hookTemplates(ctx context.Context, namespaces []string) (corelisters.ConfigMapLister, error) {
	logger := klog.FromContext(ctx)
	if len(namespaces) == 0 {
		inf := f.cluster.SharedInformerFactory().Core().V1().ConfigMaps()
		if err := f.watchConfigMaps(logger, allNamespaces, inf.Informer()); err != nil {
			return nil, err
		}
		return inf.Lister(), nil
	}
	listers, synced := map[string]corelisters.ConfigMapNamespaceLister{}, map[string]cache.InformerSynced{}
	for _, ns := range namespaces {
		inf, existed := f.configMapInformer(ns, func() cache.SharedIndexInformer {
			factory := informers.NewSharedInformerFactoryWithOptions(f.cluster.ClientSet(), 0, informers.WithNamespace(ns))
			return factory.Core().V1().ConfigMaps().Informer()
		})
		if !existed {
			if err := f.watchConfigMaps(logger, ns, inf); err != nil {
				return nil, err
			}
			go inf.RunWithContext(ctx)
			go f.activateWhenListed(ctx, logger, ns, inf.HasSynced)
		}
		listers[ns] = corelisters.NewConfigMapLister(inf.GetIndexer()).ConfigMaps(ns)
		synced[ns] = inf.HasSynced
	}
	out := sizing.NewNamespacedConfigMaps(listers, synced)
	logger.V(2).Info("Watching hook template ConfigMaps in some namespaces only", "namespaces", out.Namespaces())
	return out, nil
}

// activateWhenListed waits until namespace's ConfigMaps are listed, then
// activates the runners waiting there for a hook template: those that were
// waiting when the listing ended get no ConfigMap event if the listing
// came before them or their template does not exist (another source may
// size them). A runner that starts waiting later sees the listing in
// PreFilter.
func (f *Feeder) activateWhenListed(ctx context.Context, logger klog.Logger, namespace string, synced cache.InformerSynced) {
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		return
	}
	pods := f.waiting.Matching(func(pod *v1.Pod, _ time.Time) bool {
		ref, err := sizing.FindHookTemplate(pod)
		return err == nil && ref != nil && pod.Namespace == namespace
	})
	if len(pods) > 0 {
		logger.V(2).Info("Hook template namespace listed, activating its waiting runners", "namespace", namespace, "count", len(pods))
		f.cluster.Activate(logger, pods)
	}
}

// configMapInformer returns the informer of namespace's ConfigMaps, made by
// create the first time; existed says it was made before.
func (f *Feeder) configMapInformer(namespace string, create func() cache.SharedIndexInformer) (inf cache.SharedIndexInformer, existed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inf, ok := f.configMapInformers[namespace]; ok {
		return inf, true
	}
	if f.configMapInformers == nil {
		f.configMapInformers = map[string]cache.SharedIndexInformer{}
	}
	inf = create()
	f.configMapInformers[namespace] = inf
	return inf, false
}

// watchConfigMaps registers the ConfigMap handler on inf, once per key.
func (f *Feeder) watchConfigMaps(logger klog.Logger, key string, inf cache.SharedIndexInformer) error {
	f.mu.Lock()
	if f.configMapWatched == nil {
		f.configMapWatched = map[string]bool{}
	}
	watched := f.configMapWatched[key]
	f.configMapWatched[key] = true
	f.mu.Unlock()
	if watched {
		return nil
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f.onConfigMap(logger, obj) },
		UpdateFunc: func(_, obj any) { f.onConfigMap(logger, obj) },
	}); err != nil {
		f.mu.Lock()
		delete(f.configMapWatched, key)
		f.mu.Unlock()
		return fmt.Errorf("registering configmap handler: %w", err)
	}
	return nil
}
