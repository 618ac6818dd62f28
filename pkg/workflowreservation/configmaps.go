package workflowreservation

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
// shared.configMapWatched.
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
func (pl *WorkflowReservation) hookTemplates(ctx context.Context, namespaces []string) (corelisters.ConfigMapLister, error) {
	logger := klog.FromContext(ctx)
	if len(namespaces) == 0 {
		inf := pl.handle.SharedInformerFactory().Core().V1().ConfigMaps()
		if err := pl.sh.watchConfigMaps(logger, pl, allNamespaces, inf.Informer()); err != nil {
			return nil, err
		}
		return inf.Lister(), nil
	}
	listers, synced := map[string]corelisters.ConfigMapNamespaceLister{}, map[string]cache.InformerSynced{}
	for _, ns := range namespaces {
		inf, existed := pl.sh.configMapInformer(ns, func() cache.SharedIndexInformer {
			factory := informers.NewSharedInformerFactoryWithOptions(pl.handle.ClientSet(), 0, informers.WithNamespace(ns))
			return factory.Core().V1().ConfigMaps().Informer()
		})
		if !existed {
			if err := pl.sh.watchConfigMaps(logger, pl, ns, inf); err != nil {
				return nil, err
			}
			go inf.RunWithContext(ctx)
			go pl.activateWhenListed(ctx, logger, ns, inf.HasSynced)
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
func (pl *WorkflowReservation) activateWhenListed(ctx context.Context, logger klog.Logger, namespace string, synced cache.InformerSynced) {
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		return
	}
	pods := pl.sh.waiting.Matching(func(pod *v1.Pod, _ time.Time) bool {
		ref, err := sizing.FindHookTemplate(pod)
		return err == nil && ref != nil && pod.Namespace == namespace
	})
	if len(pods) > 0 {
		logger.V(2).Info("Hook template namespace listed, activating its waiting runners", "namespace", namespace, "count", len(pods))
		pl.handle.Activate(logger, pods)
	}
}

// configMapInformer returns the informer of namespace's ConfigMaps, made by
// create the first time; existed says it was made before.
func (sh *shared) configMapInformer(namespace string, create func() cache.SharedIndexInformer) (inf cache.SharedIndexInformer, existed bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if inf, ok := sh.configMapInformers[namespace]; ok {
		return inf, true
	}
	if sh.configMapInformers == nil {
		sh.configMapInformers = map[string]cache.SharedIndexInformer{}
	}
	inf = create()
	sh.configMapInformers[namespace] = inf
	return inf, false
}

// watchConfigMaps registers pl's ConfigMap handler on inf, once per key.
func (sh *shared) watchConfigMaps(logger klog.Logger, pl *WorkflowReservation, key string, inf cache.SharedIndexInformer) error {
	sh.mu.Lock()
	if sh.configMapWatched == nil {
		sh.configMapWatched = map[string]bool{}
	}
	watched := sh.configMapWatched[key]
	sh.configMapWatched[key] = true
	sh.mu.Unlock()
	if watched {
		return nil
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { pl.onConfigMap(logger, obj) },
		UpdateFunc: func(_, obj any) { pl.onConfigMap(logger, obj) },
	}); err != nil {
		sh.mu.Lock()
		delete(sh.configMapWatched, key)
		sh.mu.Unlock()
		return fmt.Errorf("registering configmap handler: %w", err)
	}
	return nil
}
