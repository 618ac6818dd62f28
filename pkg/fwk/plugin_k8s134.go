//go:build tandem_k8s_1_34

package fwk

import (
	upstream "k8s.io/kubernetes/pkg/scheduler/framework"
)

// The plugin interfaces and what they take and return, still in
// k8s.io/kubernetes/pkg/scheduler/framework in 1.34. Their methods take the
// same types as from 1.35 on (k8s.io/kube-scheduler/framework's CycleState,
// NodeInfo, Status).
//
//nolint:revive // each alias is the upstream type of its name, documented there
type (
	APICacher           = upstream.APICacher
	BindPlugin          = upstream.BindPlugin
	EnqueueExtensions   = upstream.EnqueueExtensions
	FilterPlugin        = upstream.FilterPlugin
	Handle              = upstream.Handle
	NodeToStatusReader  = upstream.NodeToStatusReader
	PermitPlugin        = upstream.PermitPlugin
	Plugin              = upstream.Plugin
	PostBindPlugin      = upstream.PostBindPlugin
	PostFilterPlugin    = upstream.PostFilterPlugin
	PostFilterResult    = upstream.PostFilterResult
	PreFilterExtensions = upstream.PreFilterExtensions
	PreFilterPlugin     = upstream.PreFilterPlugin
	PreFilterResult     = upstream.PreFilterResult
	PreScorePlugin      = upstream.PreScorePlugin
	ReservePlugin       = upstream.ReservePlugin
	ScoreExtensions     = upstream.ScoreExtensions
	ScorePlugin         = upstream.ScorePlugin
	SharedDRAManager    = upstream.SharedDRAManager
	WaitingPod          = upstream.WaitingPod
)

// MaxNodeScore is the highest score a Score plugin returns.
const MaxNodeScore = upstream.MaxNodeScore

// ProfileName is the name of the scheduling profile h serves. 1.34's Handle
// does not offer it; the framework behind it (frameworkImpl) does.
func ProfileName(h Handle) string {
	if p, ok := h.(interface{ ProfileName() string }); ok {
		return p.ProfileName()
	}
	return ""
}
