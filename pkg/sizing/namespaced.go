package sizing

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// notListedError: the ConfigMaps of a namespace in hookTemplateNamespaces
// are not listed yet (the informer has not synced: starting, or denied by
// RBAC).
type notListedError struct{ namespace string }

func (e notListedError) Error() string {
	return fmt.Sprintf("the ConfigMaps of namespace %s (hookTemplateNamespaces) are not listed yet; if this lasts, check that tandem-scheduler may list and watch configmaps there", e.namespace)
}

// NamespacedConfigMaps lists the ConfigMaps of some namespaces; in any
// other a Get says that its ConfigMaps are not watched.
type NamespacedConfigMaps struct {
	listers map[string]corelisters.ConfigMapNamespaceLister
	synced  map[string]cache.InformerSynced
	names   []string
}

// NewNamespacedConfigMaps lists the ConfigMaps of the namespaces of listers;
// synced says whether each is listed yet.
func NewNamespacedConfigMaps(listers map[string]corelisters.ConfigMapNamespaceLister, synced map[string]cache.InformerSynced) NamespacedConfigMaps {
	return NamespacedConfigMaps{listers: listers, synced: synced, names: slices.Sorted(maps.Keys(listers))}
}

// Namespaces are the namespaces listed, sorted.
func (n NamespacedConfigMaps) Namespaces() []string { return n.names }

// WithSynced returns n with synced in place of how it learns whether a
// namespace is listed.
func (n NamespacedConfigMaps) WithSynced(synced map[string]cache.InformerSynced) NamespacedConfigMaps {
	n.synced = synced
	return n
}

// Listed reports whether namespace's ConfigMaps are listed: true for a
// namespace not watched at all (its Get says so).
func (n NamespacedConfigMaps) Listed(namespace string) bool {
	s, ok := n.synced[namespace]
	return !ok || s()
}

var _ corelisters.ConfigMapLister = NamespacedConfigMaps{}

// List lists the ConfigMaps of every namespace listed.
func (n NamespacedConfigMaps) List(selector labels.Selector) ([]*v1.ConfigMap, error) {
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

// ConfigMaps lists namespace's ConfigMaps; outside the namespaces listed, its
// Get and List say that the namespace is not watched.
func (n NamespacedConfigMaps) ConfigMaps(namespace string) corelisters.ConfigMapNamespaceLister {
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
