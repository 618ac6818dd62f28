package workflowreservation

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// allNamespaces keys the scheduler's cluster-wide ConfigMap informer in
// shared.configMaps.
const allNamespaces = ""

// hookTemplates returns the lister that hook templates are read through
// and whether its informers have synced. Without hookTemplateNamespaces it
// is the scheduler's cluster-wide ConfigMap informer; with them, one
// informer per namespace, started here and shared by the profiles. Each
// informer gets the handler that retries runners waiting for a template
// once.
func (pl *WorkflowReservation) hookTemplates(ctx context.Context, namespaces []string) (corelisters.ConfigMapLister, func() bool, error) {
	logger := klog.FromContext(ctx)
	if len(namespaces) == 0 {
		inf := pl.handle.SharedInformerFactory().Core().V1().ConfigMaps()
		if err := pl.sh.watchConfigMaps(logger, pl, allNamespaces, inf.Informer()); err != nil {
			return nil, nil, err
		}
		// The scheduler starts and syncs its own factory before it schedules.
		return inf.Lister(), func() bool { return true }, nil
	}
	listers := map[string]corelisters.ConfigMapNamespaceLister{}
	var synced []cache.InformerSynced
	for _, ns := range namespaces {
		inf, started := pl.sh.configMapInformer(ns, func() cache.SharedIndexInformer {
			factory := informers.NewSharedInformerFactoryWithOptions(pl.handle.ClientSet(), 0, informers.WithNamespace(ns))
			inf := factory.Core().V1().ConfigMaps().Informer()
			factory.Start(ctx.Done())
			return inf
		})
		if !started {
			if err := pl.sh.watchConfigMaps(logger, pl, ns, inf); err != nil {
				return nil, nil, err
			}
		}
		listers[ns] = corelisters.NewConfigMapLister(inf.GetIndexer()).ConfigMaps(ns)
		synced = append(synced, inf.HasSynced)
	}
	logger.V(2).Info("Watching hook template ConfigMaps in some namespaces only", "namespaces", namespaces)
	return namespacedConfigMaps{listers: listers, names: slices.Sorted(maps.Keys(listers))}, func() bool {
		for _, s := range synced {
			if !s() {
				return false
			}
		}
		return true
	}, nil
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

// namespacedConfigMaps lists the ConfigMaps of some namespaces; in any
// other a Get says that its ConfigMaps are not watched.
type namespacedConfigMaps struct {
	listers map[string]corelisters.ConfigMapNamespaceLister
	names   []string
}

var _ corelisters.ConfigMapLister = namespacedConfigMaps{}

func (n namespacedConfigMaps) List(selector labels.Selector) ([]*v1.ConfigMap, error) {
	var out []*v1.ConfigMap
	for _, ns := range n.names {
		list, err := n.listers[ns].List(selector)
		if err != nil {
			return nil, err
		}
		out = append(out, list...)
	}
	return out, nil
}

func (n namespacedConfigMaps) ConfigMaps(namespace string) corelisters.ConfigMapNamespaceLister {
	if l, ok := n.listers[namespace]; ok {
		return l
	}
	return unwatchedNamespace{namespace: namespace, watched: n.names}
}

// unwatchedNamespace is a namespace not in hookTemplateNamespaces.
type unwatchedNamespace struct {
	namespace string
	watched   []string
}

func (u unwatchedNamespace) List(labels.Selector) ([]*v1.ConfigMap, error) { return nil, u.err() }
func (u unwatchedNamespace) Get(string) (*v1.ConfigMap, error)             { return nil, u.err() }

func (u unwatchedNamespace) err() error {
	return fmt.Errorf("ConfigMaps of namespace %s are not watched: hookTemplateNamespaces lists %s; add it there to size its runners from their hook template",
		u.namespace, strings.Join(u.watched, ", "))
}
