package fwk

import (
	upstream "k8s.io/kube-scheduler/framework"
)

// The types of k8s.io/kube-scheduler/framework that tandem uses, the same in
// every supported minor.
//
//nolint:revive // each alias is the upstream type of its name, documented there
type (
	ClusterEvent         = upstream.ClusterEvent
	ClusterEventWithHint = upstream.ClusterEventWithHint
	Code                 = upstream.Code
	CycleState           = upstream.CycleState
	NodeInfo             = upstream.NodeInfo
	PodInfo              = upstream.PodInfo
	QueueingHint         = upstream.QueueingHint
	QueueingHintFn       = upstream.QueueingHintFn
	StateData            = upstream.StateData
	Status               = upstream.Status
)

// Status codes.
const (
	Success                      = upstream.Success
	Error                        = upstream.Error
	Unschedulable                = upstream.Unschedulable
	UnschedulableAndUnresolvable = upstream.UnschedulableAndUnresolvable
	Wait                         = upstream.Wait
	Skip                         = upstream.Skip
)

// Queueing hints.
const (
	Queue     = upstream.Queue
	QueueSkip = upstream.QueueSkip
)

// Cluster events: resources and actions.
const (
	DeviceClass           = upstream.DeviceClass
	Node                  = upstream.Node
	Pod                   = upstream.Pod
	ResourceClaim         = upstream.ResourceClaim
	ResourceSlice         = upstream.ResourceSlice
	Add                   = upstream.Add
	Delete                = upstream.Delete
	Update                = upstream.Update
	UpdateNodeAllocatable = upstream.UpdateNodeAllocatable
)

// NewStatus makes a Status of code with reasons.
func NewStatus(code Code, reasons ...string) *Status {
	return upstream.NewStatus(code, reasons...)
}

// AsStatus wraps err in a Status of code Error.
func AsStatus(err error) *Status {
	return upstream.AsStatus(err)
}
