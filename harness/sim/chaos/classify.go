package chaos

import (
	"strings"

	"github.com/tandem-scheduler/tandem/harness/sim/arc"
)

// Class sorts job failures.
type Class string

const (
	// ByFault means the job failed because of an injected fault (its runner or
	// node died, the apiserver did not answer the hook).
	ByFault Class = "fault"
	// ByCapacity means the job failed for lack of room or a scheduling decision:
	// the kubelet rejected the workflow pod (OutOf*, host ports, affinity),
	// or it stayed Pending until the prepare-job timeout. tandem promises
	// none of these: each is a lost job.
	ByCapacity Class = "capacity"
	// ByOther means any other reason, e.g. the workflow pod vanished while the
	// hook waited. Also a lost job: no injected fault explains it.
	ByOther Class = "other"
)

// faultReasons are the job failure reasons only an injected fault causes.
var faultReasons = map[string]bool{
	arc.ReasonRunnerFailed:     true,
	arc.ReasonNodeDeleted:      true,
	arc.ReasonRunnerPodDeleted: true,
	arc.ReasonHookAPIError:     true,
}

// capacityReasons are the kubelet's admission reasons other than OutOf*
// (lifecycle.PredicateAdmitHandler names the failed predicate) and the
// hook's timeout.
var capacityReasons = map[string]bool{
	arc.ReasonPrepareJobTimeout: true,
	"NodePorts":                 true,
	"NodeAffinity":              true,
	"NodeName":                  true,
	"TaintToleration":           true,
	"UnexpectedAdmissionError":  true,
}

// Classify says why a job failed, from its reason.
func Classify(reason string) Class {
	switch {
	case faultReasons[reason]:
		return ByFault
	case strings.HasPrefix(reason, "OutOf"), capacityReasons[reason]:
		return ByCapacity
	default:
		return ByOther
	}
}
