//go:build tandem_k8s_1_34

package workflowreservation

import (
	v1 "k8s.io/api/core/v1"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
)

// 1.34's scheduler framework resolves no extended resource to a DeviceClass
// (DRAExtendedResource was alpha, without the resolver 1.35 gives plugins):
// tandem counts every extended resource in the node's allocatable there.
type draRoom struct{ own bool }

type deviceMatcher struct{}

func newDeviceMatcher() *deviceMatcher { return nil }

func draEnabled(fwk.Handle) bool { return false }

func (pl *WorkflowReservation) draRoomFor(contract.Amount, bool) *draRoom { return nil }

func (d *draRoom) maps(v1.ResourceName) bool { return false }

func (d *draRoom) free(*v1.Node, v1.ResourceName) (int64, bool) { return 0, false }

func (pl *WorkflowReservation) draEvents() []fwk.ClusterEventWithHint { return nil }
