package scenario

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Autoscale is the Karpenter NodePool of a scenario (pkg/karpenter): the
// KWOK instance types it may launch, their boot time, when empty or
// underused nodes go, and a cap. Durations are simulated time, like the
// rest of the scenario; the run gives Karpenter the real-time equivalents
// (whole seconds). Karpenter's own loops (its disruption controller polls
// every 10 s and validates a consolidation for 15 s more) run in real
// time: a scale-down takes at least ~25 s real, i.e. 25 x timeScale
// simulated seconds.
type Autoscale struct {
	// InstanceCPUs are the instance sizes allowed (default 4, 8, 16);
	// KWOK's allocatable is the size less 100m cpu.
	InstanceCPUs []int `json:"instanceCPUs,omitempty"`
	// InstanceFamily is c (2 GiB of memory per cpu, default), m (4 GiB)
	// or s (8 GiB).
	InstanceFamily string `json:"instanceFamily,omitempty"`
	// RegistrationDelay is from a NodeClaim's launch to its Node object
	// (the instance's boot); default 60s.
	RegistrationDelay metav1.Duration `json:"registrationDelay,omitempty"`
	// ConsolidationPolicy is WhenEmpty (default) or WhenEmptyOrUnderutilized.
	ConsolidationPolicy string `json:"consolidationPolicy,omitempty"`
	// ConsolidateAfter is how long a node must be empty (or underused)
	// before Karpenter removes it; default 60s.
	ConsolidateAfter metav1.Duration `json:"consolidateAfter,omitempty"`
	// CPULimit caps the cpu of all launched nodes; 0 means no limit.
	CPULimit int `json:"cpuLimit,omitempty"`
	// ScaleDownTimeout bounds the wait, after the last job, for Karpenter to
	// remove every node it launched; default 15m.
	ScaleDownTimeout metav1.Duration `json:"scaleDownTimeout,omitempty"`
}

// The defaults of Autoscale.
var (
	DefaultInstanceCPUs      = []int{4, 8, 16}
	DefaultRegistrationDelay = time.Minute
	DefaultConsolidateAfter  = time.Minute
	DefaultScaleDownTimeout  = 15 * time.Minute
)

func (a *Autoscale) validate() []error {
	var errs []error
	for _, n := range a.InstanceCPUs {
		if n <= 0 {
			errs = append(errs, fmt.Errorf("autoscale: instanceCPUs %v: want positive sizes", a.InstanceCPUs))
			break
		}
	}
	errs = append(errs, oneOf("autoscale: instanceFamily", a.InstanceFamily, "c", "m", "s")...)
	errs = append(errs, oneOf("autoscale: consolidationPolicy", a.ConsolidationPolicy, "WhenEmpty", "WhenEmptyOrUnderutilized")...)
	if a.RegistrationDelay.Duration < 0 || a.ConsolidateAfter.Duration < 0 || a.ScaleDownTimeout.Duration < 0 || a.CPULimit < 0 {
		errs = append(errs, errors.New("autoscale: registrationDelay, consolidateAfter, scaleDownTimeout and cpuLimit must not be negative"))
	}
	return errs
}

// CPUs is the instance sizes, defaulted.
func (a *Autoscale) CPUs() []int {
	if len(a.InstanceCPUs) == 0 {
		return DefaultInstanceCPUs
	}
	return a.InstanceCPUs
}

// MemoryPerCPU is the bytes of memory per cpu of the instance family
// (KWOK's: c 2 GiB, m 4 GiB, s 8 GiB).
func (a *Autoscale) MemoryPerCPU() int64 {
	switch a.InstanceFamily {
	case "m":
		return 4 << 30
	case "s":
		return 8 << 30
	}
	return 2 << 30
}

// Policy is the consolidation policy, defaulted.
func (a *Autoscale) Policy() string {
	if a.ConsolidationPolicy == "" {
		return "WhenEmpty"
	}
	return a.ConsolidationPolicy
}

// Registration is the registration delay, defaulted.
func (a *Autoscale) Registration() time.Duration {
	return orDefault(a.RegistrationDelay, DefaultRegistrationDelay)
}

// Consolidation is consolidateAfter, defaulted.
func (a *Autoscale) Consolidation() time.Duration {
	return orDefault(a.ConsolidateAfter, DefaultConsolidateAfter)
}

// ScaleDownWait is scaleDownTimeout, defaulted.
func (a *Autoscale) ScaleDownWait() time.Duration {
	return orDefault(a.ScaleDownTimeout, DefaultScaleDownTimeout)
}
