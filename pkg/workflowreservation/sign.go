//go:build !tandem_k8s_1_34

package workflowreservation

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
)

// Opportunistic batching (KEP-5598, beta and on by default from 1.35):
// kube-scheduler reuses a pod's filtering and scoring for the next pod
// with the same signature, made from every Filter and Score plugin's
// fragments; one plugin that does not sign turns batching off for the whole
// profile. A runner scale set's runners are identical pods, the workload
// batching exists for.
var _ fwk.SignPlugin = &WorkflowReservation{}

// signKey names tandem's fragment of a pod's signature: what its Filter and
// Score read of the pod.
const signKey = "tandem.dev/WorkflowReservation.PreFilter()"

// podSignature is what Filter and Score read of a pod, beyond the room the
// cluster holds: two pods that sign alike are filtered and scored alike.
type podSignature struct {
	// Kind is "runner" or "other" (a pod that claims a runner's room is
	// not signed).
	Kind string `json:"kind"`
	// Request is the pod's request (Filter), NonZero what Score counts of
	// it, HostPorts the host ports it asks for.
	Request   contract.Amount     `json:"request"`
	NonZero   contract.Amount     `json:"nonZero"`
	HostPorts []contract.HostPort `json:"hostPorts,omitempty"`
	// A runner's workflow pod (step headroom included), headroom and held
	// host ports.
	Workflow contract.Amount     `json:"workflow,omitzero"`
	Step     contract.Amount     `json:"step,omitzero"`
	Ports    []contract.HostPort `json:"ports,omitempty"`
}

// SignPod signs what this plugin's Filter and Score read of the pod, from
// what PreFilter found of it in this cycle (the framework signs a pod right
// after its PreFilter), and, where this plugin runs NodeResourcesFit, what
// that plugin signs. A workflow or container-step pod, which may use one
// runner's held room, is not signed: no other pod is filtered and scored
// as it is.
func (pl *WorkflowReservation) SignPod(ctx context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	st := pl.signed.Load()
	if st == nil || st.pod != pod {
		return nil, fwk.NewStatus(fwk.Unschedulable, "not classified by PreFilter in this cycle")
	}
	sig := podSignature{Kind: "other"}
	if s := st.s; s == nil {
		sig.NonZero = nonZeroRequest(pod)
	} else {
		switch s.kind {
		case kindWorkflow, kindStep:
			return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("may use the room held for runner %s", s.runner))
		case kindRunner:
			sig.Kind, sig.Workflow, sig.Step, sig.Ports = "runner", s.workflow, s.step, s.ports
		}
		sig.Request, sig.NonZero, sig.HostPorts = s.request, s.nonZero, s.hostPorts
	}
	fragments := []fwk.SignFragment{{Key: signKey, Value: sig}}
	if !pl.ownsFit() {
		return fragments, nil
	}
	fit, ok := pl.fit.(fwk.SignPlugin)
	if !ok {
		return nil, fwk.NewStatus(fwk.Unschedulable, "NodeResourcesFit does not sign pods")
	}
	fitFragments, status := fit.SignPod(ctx, pod)
	if !status.IsSuccess() {
		return nil, status
	}
	return append(fitFragments, fragments...), nil
}
