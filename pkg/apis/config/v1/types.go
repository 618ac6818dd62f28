package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WorkflowReservationArgs holds arguments used to configure the
// WorkflowReservation plugin.
type WorkflowReservationArgs struct {
	metav1.TypeMeta `json:",inline"`

	// RunnerSelector selects the pods that are ARC runner pods.
	// Defaults to matchLabels {actions-ephemeral-runner: "True"}.
	// +optional
	RunnerSelector *metav1.LabelSelector `json:"runnerSelector,omitempty"`
	// RunnerPodLabel is the label key on workflow pods whose value is the
	// name of the runner pod that created them.
	// Defaults to "runner-pod".
	// +optional
	RunnerPodLabel *string `json:"runnerPodLabel,omitempty"`
	// DefaultWorkflowRequests is the size of a workflow pod, used when
	// neither the runner pod's annotation nor its container hook template
	// specifies one.
	// +optional
	DefaultWorkflowRequests corev1.ResourceList `json:"defaultWorkflowRequests,omitempty"`
	// DefaultStepRequests is extra headroom reserved for container-step
	// pods.
	// +optional
	DefaultStepRequests corev1.ResourceList `json:"defaultStepRequests,omitempty"`
	// MaxWorkflowRequests is the most one runner's reservation may hold,
	// workflow pod and step headroom together, per resource listed (e.g.
	// cpu: "8", memory: 32Gi). The runner's annotation and its hook
	// template are its author's to write: a runner whose size is beyond the
	// maximum is sized by defaultWorkflowRequests and defaultStepRequests
	// instead (which must be within it), or, without them, waits, with an
	// InvalidWorkflowSize warning either way. Empty (the default): a
	// runner may hold what any one node has room for.
	// +optional
	MaxWorkflowRequests corev1.ResourceList `json:"maxWorkflowRequests,omitempty"`
	// ScoringStrategy ranks nodes by how full they are, counting room
	// reserved for workflow pods as used. Defaults to LeastAllocated on cpu
	// and memory, weight 1 each, like NodeResourcesFit.
	// +optional
	ScoringStrategy *ScoringStrategy `json:"scoringStrategy,omitempty"`
	// ReconcileInterval is how often the leader compares its reservations
	// with the cluster (runners gone or moved, claims and releases missed,
	// runners bound without a record) and repairs what drifted. The
	// reconciler also runs when a replica starts leading. Defaults to 1m.
	// +optional
	ReconcileInterval *metav1.Duration `json:"reconcileInterval,omitempty"`
	// StepRequestsFromHookTemplate sizes the headroom for container-step
	// pods from the runner's hook template, as the hooks build step pods:
	// the $job container's resources plus the template's sidecars. An
	// explicit size (annotation tandem.dev/step-requests or
	// defaultStepRequests) wins. Defaults to false.
	// +optional
	StepRequestsFromHookTemplate *bool `json:"stepRequestsFromHookTemplate,omitempty"`
	// DefaultHostPorts are the host ports ("6379", "5432/TCP", "53/UDP")
	// the workflow pods of runners that declare none (annotation
	// tandem.dev/host-ports) will use: the hook turns every service port
	// mapping into a hostPort. They are held with the reservation.
	// +optional
	DefaultHostPorts []string `json:"defaultHostPorts,omitempty"`
	// NoWorkflowPodGrace is how long after its runner's job started (the
	// EphemeralRunner's status names a job) a reservation waits for its
	// workflow pod. A job without a container creates none; after the grace
	// the room is released. Defaults to 2m.
	// +optional
	NoWorkflowPodGrace *metav1.Duration `json:"noWorkflowPodGrace,omitempty"`
	// PairPods: while a runner waits because no node has room for it and
	// its workflow pod together, tandem keeps a pending pod of the pair's
	// size (the runner's requests plus the reservation, its node selector,
	// node affinity, tolerations and priority class, owned by the runner)
	// that it never binds. Cluster autoscalers simulate pending pods with
	// the in-tree plugins and drop those that fit an existing node: the
	// runner alone would, the pair pod does not, so they add a node where
	// the pair fits. The pod goes as soon as the runner is bound or gone.
	// Defaults to true.
	// +optional
	PairPods *bool `json:"pairPods,omitempty"`
	// ReservationMode is where a held reservation lives. "Memory": in
	// tandem's accounting and the runner's record, which only tandem sees.
	// "Pods": also as a placeholder pod on the runner's node (requests = the
	// reservation, the runner's priority, owned by the runner), which the
	// kubelet, other schedulers and cluster autoscalers count; it yields to
	// the workflow pod the moment that pod is created (pinned workflow pods
	// need tandem-webhook, see docs/autoscaling.md). Defaults to Memory.
	// +optional
	ReservationMode *string `json:"reservationMode,omitempty"`
	// PlaceholderImage is the image of the only container of placeholder
	// and pair pods: a pause image your nodes can pull (a placeholder
	// runs; a pair pod is never bound). Defaults to "pause:3.10".
	// +optional
	PlaceholderImage *string `json:"placeholderImage,omitempty"`
	// ReservationEvents turns on a Normal event for every reservation
	// taken (WorkflowCapacityReserved, on the runner), claimed
	// (WorkflowReservationClaimed, on the workflow pod), released as planned
	// (WorkflowReservationReleased: the runner ended or was deleted
	// unclaimed, or its job ran no container) and a pair pod created
	// (PairPodCreated). The rare releases (the node deleted) and every
	// Warning are always sent. Each is an API write, an Event with a
	// TTL lease in etcd, for every job: the pod's own Binding already
	// records the reservation on the runner (annotation
	// tandem.dev/reservation: node, requests, where the size came from),
	// which kubectl describe shows, and kubectl tandem explain tells the
	// rest. Warnings (a broken size source, a reservation not recorded, a
	// placeholder lost, ...) are sent whatever this says. Defaults to false.
	// +optional
	ReservationEvents *bool `json:"reservationEvents,omitempty"`
	// RunnerNamespaces are the namespaces of your runner scale sets: a pod
	// is a runner only there (and only if it matches runnerSelector). A pod
	// elsewhere that matches the selector is scheduled as an ordinary pod
	// and holds no room, whoever made it. Empty (the default): every
	// namespace, so anyone who may create pods anywhere may have tandem
	// hold room for a pod that looks like a runner (docs/security.md). The
	// chart sets it from its runnerNamespaces value.
	// +optional
	// +listType=set
	RunnerNamespaces []string `json:"runnerNamespaces,omitempty"`
	// HookTemplateNamespaces are the namespaces whose ConfigMaps tandem
	// watches for runners' container hook templates (the ConfigMap a
	// runner mounts at ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE): the
	// namespaces of your runner scale sets. Empty (the default): every
	// namespace, which keeps every ConfigMap of the cluster in the
	// scheduler's memory. A runner in another namespace whose template is
	// a ConfigMap is sized by the next source, with an InvalidWorkflowSize
	// warning that says so.
	// +optional
	// +listType=set
	HookTemplateNamespaces []string `json:"hookTemplateNamespaces,omitempty"`
	// PodInitialBackoffSeconds and PodMaxBackoffSeconds must be the
	// scheduler's own (the KubeSchedulerConfiguration fields of the same
	// names), which a plugin cannot read. When the plugin frees reserved
	// room it activates the pods it turned away, which moves them past the
	// queue's backoff; it waits out that backoff itself, counted from the
	// pod's last rejection by this plugin. Default 1 and 10, the
	// scheduler's defaults.
	// +optional
	PodInitialBackoffSeconds *int64 `json:"podInitialBackoffSeconds,omitempty"`
	// +optional
	PodMaxBackoffSeconds *int64 `json:"podMaxBackoffSeconds,omitempty"`
}

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
	// Type is LeastAllocated (default) or MostAllocated.
	Type ScoringStrategyType `json:"type,omitempty"`
	// Resources weighs each resource in the score. Default: cpu and memory,
	// weight 1 each.
	// +optional
	Resources []ResourceSpec `json:"resources,omitempty"`
}

// ResourceSpec is a resource and its weight in the score.
type ResourceSpec struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight,omitempty"`
}
