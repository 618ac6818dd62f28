// Package fwk is the scheduler framework's plugin API as tandem uses it,
// wherever the Kubernetes minor it is built against keeps it: tandem's code
// imports this package in place of k8s.io/kube-scheduler/framework, so one
// source tree builds for every supported minor (hack/build-versions.sh).
//
// From 1.35 on, every name here is an alias of k8s.io/kube-scheduler/framework.
// In 1.34 the plugin interfaces (Plugin, Handle, the extension points, their
// results) still live in k8s.io/kubernetes/pkg/scheduler/framework, and
// Handle has no ProfileName; the build tag tandem_k8s_1_34 (set by
// hack/lib/version.sh for 1.34) selects that side. The shared types (Status,
// CycleState, NodeInfo, events) are in k8s.io/kube-scheduler/framework in
// every supported minor. docs/versions.md lists the differences.
package fwk
