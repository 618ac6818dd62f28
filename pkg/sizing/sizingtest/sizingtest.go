// Package sizingtest has what tests of runners sized from a hook template
// share: a template, a runner pod that points at it, and a ConfigMap lister.
package sizingtest

import (
	v1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tandem-scheduler/tandem/contract"
)

// HookTemplate is a hook template with an init container, $job, a service
// ($redis) and a sidecar, each with requests.
const HookTemplate = `
metadata:
  labels:
    team: ci
spec:
  initContainers:
  - name: fetch
    image: busybox
    resources:
      requests: {cpu: "3", memory: 128Mi}
  containers:
  - name: $job
    resources:
      requests: {cpu: "1", memory: 2Gi}
  - name: $redis
    resources:
      requests: {cpu: 500m, memory: 512Mi}
  - name: sidecar
    image: envoy
    resources:
      requests: {cpu: 250m, memory: 256Mi}
`

// WithHookTemplate mounts ConfigMap cm at /home/runner/pod-templates and
// points the runner container's env at file.
func WithHookTemplate(pod *v1.Pod, cm, file string) *v1.Pod {
	pod.Spec.Containers = []v1.Container{{
		Name:         "runner",
		Env:          []v1.EnvVar{{Name: contract.HookTemplateEnv, Value: file}},
		VolumeMounts: []v1.VolumeMount{{Name: "hook-template", MountPath: "/home/runner/pod-templates", ReadOnly: true}},
	}}
	pod.Spec.Volumes = []v1.Volume{{Name: "hook-template", VolumeSource: v1.VolumeSource{
		ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm}},
	}}}
	return pod
}

// ConfigMapLister lists cms.
func ConfigMapLister(cms ...*v1.ConfigMap) corelisters.ConfigMapLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, cm := range cms {
		_ = idx.Add(cm)
	}
	return corelisters.NewConfigMapLister(idx)
}
