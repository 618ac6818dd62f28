package kubectltandem

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/tandem-scheduler/tandem/contract"
)

// The names tandem uses on pods, the record's form and its checks are the
// wire contract's: the contract module the scheduler imports too (this
// module cannot import the scheduler's: it would pull in kube-scheduler and
// its replace directives, and `go install ...@latest` refuses a module with
// those).

// invalid says why the record on pod holds nothing, "" when it holds room.
// These are the plugin's own checks, made when it rebuilds a reservation
// from its runner pod (trusted, then contract.Recorded.Validate): a runner
// of a tandem profile, the record taken for this very pod on the node it is
// bound to, a size that asks for something, step headroom within it and host
// ports it can read.
func (r *Rules) invalid(pod *v1.Pod, rec contract.Recorded) string {
	switch {
	case !r.isRunner(pod):
		return fmt.Sprintf("the pod does not match the runner selector %s", r.RunnerSelector)
	case !r.isTandem(pod):
		return fmt.Sprintf("the pod's scheduler %q is not tandem (--scheduler-name)", pod.Spec.SchedulerName)
	}
	if _, err := rec.Validate(pod); err != nil {
		return err.Error()
	}
	return ""
}
