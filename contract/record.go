package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// ReservationAnnotation is written on a runner pod by the Binding that binds
// it. It is the durable record of the reservation: after a restart or a
// leader change tandem rebuilds its reservations from the runner pods that
// carry it, and `kubectl describe pod` shows it.
const ReservationAnnotation = "tandem.dev/reservation"

// Recorded is a reservation as recorded on its runner pod (the
// annotation's JSON form).
type Recorded struct {
	// Node holds the room.
	Node string `json:"node"`
	// Requests is the room held: the workflow pod's request, step headroom
	// included, and one pod.
	Requests v1.ResourceList `json:"requests"`
	// Source says where the size came from.
	Source Source `json:"source"`
	// StepRequests is the part of Requests held for container-step pods
	// (one pod included); after the workflow pod's claim only it stays held.
	StepRequests v1.ResourceList `json:"stepRequests,omitempty"`
	// HostPorts are the host ports held for the workflow pod ("6379/TCP").
	HostPorts []string `json:"hostPorts,omitempty"`
	// StaleJob is the job the runner's EphemeralRunner showed when the
	// reservation was taken, an earlier runner's: it does not start the
	// grace of a job without a container.
	StaleJob string `json:"staleJob,omitempty"`
	// RunnerUID is the runner pod the reservation was taken for. A record
	// copied onto another pod, or written by hand before the pod existed,
	// does not match the pod's UID and holds nothing.
	RunnerUID types.UID `json:"runnerUID"`
	// StaleWorkflowPods are the workflow pods of an earlier runner of the
	// same name that existed when the reservation was taken: they never
	// claim it.
	StaleWorkflowPods []types.UID `json:"staleWorkflowPods,omitempty"`
}

// RecordedReservation reads the reservation recorded on a runner pod; ok is
// false when the pod carries none. It does not check that the record may
// hold room: see Validate.
func RecordedReservation(pod *v1.Pod) (r Recorded, ok bool, err error) {
	value, ok := pod.Annotations[ReservationAnnotation]
	if !ok {
		return Recorded{}, false, nil
	}
	if err := json.Unmarshal([]byte(value), &r); err != nil {
		return Recorded{}, true, fmt.Errorf("annotation %s: %w", ReservationAnnotation, err)
	}
	return r, true, nil
}

// Encode returns the annotation's value for r.
func (r Recorded) Encode() (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Validate says why r, read from pod, holds no room: it was recorded for
// another pod (a copied or hand-written record), the pod is not bound to the
// node it names, its size asks for nothing or for less than nothing, its step
// headroom is not within its size, or a host port cannot be read. It returns
// the host ports read. Whether the pod is a runner tandem schedules is the
// reader's to check.
//
// Sizes are compared in the units the scheduler accounts in (millicores for
// cpu, whole units for everything else), as the plugin holds them.
func (r Recorded) Validate(pod *v1.Pod) ([]HostPort, error) {
	switch {
	case r.RunnerUID != pod.UID:
		return nil, fmt.Errorf("recorded for pod UID %q, not this pod (%s)", r.RunnerUID, pod.UID)
	case pod.Spec.NodeName == "":
		return nil, errors.New("the pod is not bound")
	case r.Node != pod.Spec.NodeName:
		return nil, fmt.Errorf("names node %q but the pod is bound to %q", r.Node, pod.Spec.NodeName)
	case !asksForSomething(r.Requests) || anyNegative(r.Requests) || !inRange(r.Requests) || !inRange(r.StepRequests):
		return nil, fmt.Errorf("holds no valid requests (%s)", FormatResources(r.Requests))
	case anyNegative(r.StepRequests) || !within(r.StepRequests, r.Requests):
		return nil, fmt.Errorf("stepRequests %s are not within requests %s", FormatResources(r.StepRequests), FormatResources(r.Requests))
	}
	if len(r.HostPorts) > MaxHostPorts {
		return nil, fmt.Errorf("holds %d host ports, more than %d", len(r.HostPorts), MaxHostPorts)
	}
	if len(r.StaleWorkflowPods) > MaxStaleWorkflowPods {
		return nil, fmt.Errorf("names %d earlier workflow pods, more than %d", len(r.StaleWorkflowPods), MaxStaleWorkflowPods)
	}
	var ports []HostPort
	for _, s := range r.HostPorts {
		hp, err := ParseHostPort(s)
		if err != nil {
			return nil, err
		}
		ports = append(ports, hp)
	}
	return ports, nil
}

// Scaled is q in the units the scheduler accounts resource name in:
// millicores for cpu, whole units (rounded up) for everything else.
func Scaled(name v1.ResourceName, q resource.Quantity) int64 {
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// MaxSize is the most of a resource, in the scheduler's units (millicores
// for cpu, whole units for everything else), that a size may ask for: 2^50,
// over a million times any node's allocatable (a pebibyte of memory, 2^40
// cores), and far enough below int64 that the sums tandem and the scheduler
// make of sizes and requests cannot wrap around.
const MaxSize = 1 << 50

// CheckSize returns an error if q of resource name is not a size a
// reservation can hold: negative, zero (it asks for nothing), or more than
// MaxSize in the scheduler's units, where sums of it could wrap around
// (cpu=18446744073709551 became -616m, which cancelled other runners'
// holds).
func CheckSize(name v1.ResourceName, q resource.Quantity) error {
	most := resource.NewQuantity(MaxSize, resource.DecimalSI)
	if name == v1.ResourceCPU {
		most = resource.NewMilliQuantity(MaxSize, resource.DecimalSI)
	}
	switch {
	case q.Sign() < 0:
		return fmt.Errorf("negative quantity %s for %s", q.String(), name)
	case q.Sign() == 0:
		return fmt.Errorf("zero quantity for %s: a size names only what the pod asks for", name)
	case q.Cmp(*most) > 0:
		return fmt.Errorf("%s=%s asks for more %s than tandem accepts (at most %s)", name, q.String(), name, most.String())
	}
	return nil
}

// inRange reports whether every positive quantity of rl is at most
// MaxSize in the scheduler's units.
func inRange(rl v1.ResourceList) bool {
	for name, q := range rl {
		if q.Sign() > 0 && CheckSize(name, q) != nil {
			return false
		}
	}
	return true
}

func asksForSomething(rl v1.ResourceList) bool {
	for name, q := range rl {
		if Scaled(name, q) != 0 {
			return true
		}
	}
	return false
}

func anyNegative(rl v1.ResourceList) bool {
	for name, q := range rl {
		if Scaled(name, q) < 0 {
			return true
		}
	}
	return false
}

// within reports whether part holds no more of any resource than whole (a
// resource missing from whole is zero of it).
func within(part, whole v1.ResourceList) bool {
	for name, q := range part {
		if Scaled(name, q) > Scaled(name, whole[name]) {
			return false
		}
	}
	return true
}

// FormatResources renders rl as users write sizes, "cpu=1,memory=2Gi",
// sorted by name; "nothing" when it is empty.
func FormatResources(rl v1.ResourceList) string {
	names := make([]string, 0, len(rl))
	for n := range rl {
		names = append(names, string(n))
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		q := rl[v1.ResourceName(n)]
		parts = append(parts, fmt.Sprintf("%s=%s", n, q.String()))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ",")
}
