// Package v1 contains the v1 (versioned) types for the arguments of the
// tandem scheduler plugins, as they appear in the pluginConfig of a
// kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration, together with
// their defaults and conversions to the internal types in
// github.com/tandem-scheduler/tandem/pkg/apis/config.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/tandem-scheduler/tandem/pkg/apis/config
// +k8s:defaulter-gen=TypeMeta
// +groupName=kubescheduler.config.k8s.io
package v1
