//go:build !tandem_k8s_1_34

package fwk

import (
	upstream "k8s.io/kube-scheduler/framework"
)

// The plugin interfaces and what they take and return, in
// k8s.io/kube-scheduler/framework from 1.35 on.
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
	SharedLister        = upstream.SharedLister
	NodePluginScores    = upstream.NodePluginScores
	NominatingInfo      = upstream.NominatingInfo
	PodSignature        = upstream.PodSignature
	SignFragment        = upstream.SignFragment
	SignPlugin          = upstream.SignPlugin
	WaitingPod          = upstream.WaitingPod
)

// Signature fragments of kube-scheduler's own signers (opportunistic
// batching, KEP-5598: from 1.35 on).
const (
	HostPortsSignerName = upstream.HostPortsSignerName
	ResourcesSignerName = upstream.ResourcesSignerName
)

// MaxNodeScore is the highest score a Score plugin returns.
const MaxNodeScore = upstream.MaxNodeScore

// ProfileName is the name of the scheduling profile h serves.
func ProfileName(h Handle) string {
	return h.ProfileName()
}
