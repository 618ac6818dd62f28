// Package config contains the internal (unversioned) types for the
// arguments of the tandem scheduler plugins. The types are registered in the
// kubescheduler.config.k8s.io API group, next to the in-tree plugin args.
//
// +k8s:deepcopy-gen=package
// +groupName=kubescheduler.config.k8s.io
package config
