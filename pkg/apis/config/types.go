package config

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WorkflowReservationArgs holds arguments used to configure the
// WorkflowReservation plugin.
type WorkflowReservationArgs struct {
	metav1.TypeMeta

	// RunnerSelector selects the pods that are ARC runner pods.
	RunnerSelector *metav1.LabelSelector
	// RunnerNamespaces are the only namespaces whose pods may be runners;
	// empty: every namespace.
	RunnerNamespaces []string
	// RunnerPodLabel is the label key on workflow pods whose value is the
	// name of the runner pod that created them.
	RunnerPodLabel string
	// DefaultWorkflowRequests is the size of a workflow pod, used when
	// neither the runner pod's annotation nor its container hook template
	// specifies one. May be empty.
	DefaultWorkflowRequests v1.ResourceList
	// DefaultStepRequests is extra headroom reserved for container-step
	// pods. May be empty.
	DefaultStepRequests v1.ResourceList
	// MaxWorkflowRequests is the most one runner's reservation (workflow
	// pod and step headroom) may hold, per resource listed. May be empty.
	MaxWorkflowRequests v1.ResourceList
	// ScoringStrategy ranks nodes by how full they are with reserved room
	// counted as used. nil only before defaulting.
	ScoringStrategy *ScoringStrategy
	// ReconcileInterval is how often the leader compares its reservations
	// with the cluster and repairs drift. Zero only before defaulting.
	ReconcileInterval metav1.Duration
	// StepRequestsFromHookTemplate sizes the step headroom from the
	// runner's hook template ($job and sidecars) when no explicit step size
	// is given.
	StepRequestsFromHookTemplate bool
	// DefaultHostPorts are host ports ("6379", "53/UDP") every runner's
	// workflow pod is held to use, unless the runner declares its own.
	DefaultHostPorts []string
	// NoWorkflowPodGrace is how long after its runner's job started a
	// reservation waits for its workflow pod before it is released (a job
	// without a container creates none). Zero only before defaulting.
	NoWorkflowPodGrace metav1.Duration
	// PairPods keeps, while a runner waits because no node has room for it
	// and its workflow pod together, a pending pod of the pair's size that
	// cluster autoscalers see.
	PairPods bool
	// ReservationMode is where a held reservation lives: Memory (the
	// plugin's accounting and the runner's record only) or Pods (also a
	// placeholder pod on the runner's node that the kubelet, other
	// schedulers and autoscalers see). Empty only before defaulting.
	ReservationMode string
	// PlaceholderImage is the image of placeholder and pair pods' only
	// container. Empty only before defaulting.
	PlaceholderImage string
	// ReservationEvents turns on the routine Normal events of every runner
	// and workflow pod: WorkflowCapacityReserved, WorkflowReservationClaimed,
	// WorkflowReservationReleased as planned (the runner ended unclaimed, a
	// job ran no container), PairPodCreated. The rare releases (node
	// deleted) and Warnings are always sent.
	ReservationEvents bool
	// HookTemplateNamespaces are the namespaces whose ConfigMaps are
	// watched for runners' container hook templates; empty: every
	// namespace.
	HookTemplateNamespaces []string
	// PodInitialBackoffSeconds and PodMaxBackoffSeconds are the scheduler's
	// pod backoff, which the plugin's activations wait out. Zero (args
	// built in code): the scheduler's defaults, 1 and 10.
	PodInitialBackoffSeconds int64
	PodMaxBackoffSeconds     int64
}

// Where held reservations live (ReservationMode).
const (
	// ReservationModeMemory keeps reservations in the plugin's accounting
	// (and the runner's record): only tandem sees them.
	ReservationModeMemory = "Memory"
	// ReservationModePods also holds each reservation with a placeholder
	// pod on the runner's node.
	ReservationModePods = "Pods"
)

// ScoringStrategyType names a way to rank nodes by their allocation.
type ScoringStrategyType string

const (
	// LeastAllocated prefers the emptiest node: spreads runners.
	LeastAllocated ScoringStrategyType = "LeastAllocated"
	// MostAllocated prefers the fullest node that fits: bin-packs runners.
	MostAllocated ScoringStrategyType = "MostAllocated"
)

// ScoringStrategy configures the reservation-aware score.
type ScoringStrategy struct {
	// Type is LeastAllocated or MostAllocated.
	Type ScoringStrategyType
	// Resources weighs each resource in the score.
	Resources []ResourceSpec
}

// ResourceSpec is a resource and its weight in the score.
type ResourceSpec struct {
	Name   string
	Weight int64
}
