package kubectltandem

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The names tandem uses on pods, as pkg/workflowreservation defines them.
// This module cannot import the plugin (it would pull in kube-scheduler and
// its replace directives, and `go install ...@latest` refuses a module with
// those), so they are repeated here; test/integration checks that they
// still agree.
const (
	// ReservationAnnotation is the reservation recorded on a runner pod by
	// the Binding that bound it.
	ReservationAnnotation = "tandem.dev/reservation"
	// WorkflowRequestsAnnotation on a runner pod states its workflow pod's
	// size.
	WorkflowRequestsAnnotation = "tandem.dev/workflow-requests"
	// StepRequestsAnnotation on a runner pod adds headroom for
	// container-step pods ("template": sized from the hook template).
	StepRequestsAnnotation = "tandem.dev/step-requests"
	// HostPortsAnnotation on a runner pod names the host ports its workflow
	// pod will use.
	HostPortsAnnotation = "tandem.dev/host-ports"
	// PairPodLabel marks a pair pod: a pending pod of a waiting runner's
	// pair size, for cluster autoscalers, that tandem never binds.
	PairPodLabel = "tandem.dev/pair-pod"
	// PairOfAnnotation on a pair pod names its runner.
	PairOfAnnotation = "tandem.dev/pair-of"
	// PlaceholderLabel marks a placeholder: the pod that holds a bound
	// runner's reservation on its node (reservationMode Pods).
	PlaceholderLabel = "tandem.dev/placeholder"
	// PlaceholderOfAnnotation on a placeholder names its runner.
	PlaceholderOfAnnotation = "tandem.dev/placeholder-of"
	// HookTemplateEnv names the runner container's variable that points at
	// its container hook template.
	HookTemplateEnv = "ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"
)

// Record is a reservation as recorded on its runner pod: the JSON form of
// the annotation, field for field workflowreservation.Recorded.
type Record struct {
	// Node holds the room.
	Node string `json:"node"`
	// Requests is the room held before the workflow pod arrives, step
	// headroom and one pod per pod included.
	Requests v1.ResourceList `json:"requests"`
	// Source says where the size came from: annotation, hook-template or
	// default.
	Source string `json:"source"`
	// StepRequests is the part of Requests held for container-step pods;
	// after the workflow pod's claim only it stays held.
	StepRequests v1.ResourceList `json:"stepRequests,omitempty"`
	// HostPorts are the host ports held for the workflow pod ("6379/TCP").
	HostPorts []string `json:"hostPorts,omitempty"`
	// RunnerUID is the runner pod the reservation was taken for.
	RunnerUID types.UID `json:"runnerUID"`
	// StaleWorkflowPods are workflow pods of an earlier runner of the same
	// name: they never claim the reservation.
	StaleWorkflowPods []types.UID `json:"staleWorkflowPods,omitempty"`
}

// RecordOf reads the reservation recorded on pod; ok is false when the pod
// carries none. It does not check that the record may hold room (see
// Rules.invalid).
func RecordOf(pod *v1.Pod) (r Record, ok bool, err error) {
	value, ok := pod.Annotations[ReservationAnnotation]
	if !ok {
		return Record{}, false, nil
	}
	if err := json.Unmarshal([]byte(value), &r); err != nil {
		return Record{}, true, fmt.Errorf("annotation %s: %w", ReservationAnnotation, err)
	}
	return r, true, nil
}

// invalid says why the record on pod holds nothing, "" when it holds room.
// These are the plugin's own checks, made when it rebuilds a reservation
// from its runner pod (pkg/workflowreservation, reservationFromPod and
// trusted): a runner of a tandem profile, the record taken for this very
// pod on the node it is bound to, a size that asks for something, step
// headroom within it and host ports it can read.
func (r *Rules) invalid(pod *v1.Pod, rec Record) string {
	switch {
	case !r.isRunner(pod):
		return fmt.Sprintf("the pod does not match the runner selector %s", r.RunnerSelector)
	case !r.isTandem(pod):
		return fmt.Sprintf("the pod's scheduler %q is not tandem (--scheduler-name)", pod.Spec.SchedulerName)
	case rec.RunnerUID != pod.UID:
		return fmt.Sprintf("recorded for pod UID %q, not this pod (%s)", rec.RunnerUID, pod.UID)
	case pod.Spec.NodeName == "":
		return "the pod is not bound"
	case rec.Node != pod.Spec.NodeName:
		return fmt.Sprintf("names node %q but the pod is bound to %q", rec.Node, pod.Spec.NodeName)
	case isZero(rec.Requests) || isNegative(rec.Requests):
		return fmt.Sprintf("holds no valid requests (%s)", format(rec.Requests))
	case isNegative(rec.StepRequests) || !isZero(atLeastZero(sub(rec.StepRequests, rec.Requests))):
		return fmt.Sprintf("stepRequests %s are not within requests %s", format(rec.StepRequests), format(rec.Requests))
	}
	for _, p := range rec.HostPorts {
		if err := checkHostPort(p); err != nil {
			return err.Error()
		}
	}
	return ""
}

// checkHostPort checks a host port as the plugin reads it
// (config.ParseHostPort): "6379", "6379/TCP", "53/UDP" or "9000/SCTP".
func checkHostPort(s string) error {
	s = strings.TrimSpace(s)
	number, protocol, hasProtocol := strings.Cut(s, "/")
	if hasProtocol {
		switch v1.Protocol(strings.ToUpper(strings.TrimSpace(protocol))) {
		case v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
		default:
			return fmt.Errorf("host port %q: protocol %q is not TCP, UDP or SCTP", s, protocol)
		}
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(number), 10, 32); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("host port %q: want a port from 1 to 65535, optionally /TCP, /UDP or /SCTP", s)
	}
	return nil
}
