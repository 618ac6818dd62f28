package scenario

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Autoscale is the autoscaler of a scenario: the real Karpenter
// (harness/karpenter, a NodePool) or the real Cluster Autoscaler
// (harness/clusterautoscaler, one node group per instance size), both with their
// KWOK cloud providers: the instance types they may launch, their boot time,
// when empty or underused nodes go, and a cap. Durations are simulated time,
// like the rest of the scenario; the run gives the autoscaler the real-time
// equivalents. Karpenter's own loops (its disruption controller polls every
// 10 s and validates a consolidation for 15 s more) run in real time: a
// scale-down takes at least ~25 s real, i.e. 25 x timeScale simulated
// seconds. Cluster Autoscaler's loop runs every scan interval (simulated,
// compressed like the rest).
type Autoscale struct {
	// Autoscaler is Karpenter (default) or ClusterAutoscaler.
	Autoscaler string `json:"autoscaler,omitempty"`
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
	// before Karpenter removes it, and Cluster Autoscaler's
	// --scale-down-unneeded-time; default 60s.
	ConsolidateAfter metav1.Duration `json:"consolidateAfter,omitempty"`
	// CPULimit caps the cpu of all launched nodes; 0 means no limit.
	CPULimit int `json:"cpuLimit,omitempty"`
	// ScaleDownTimeout bounds the wait, after the last job, for the
	// autoscaler to remove every node it launched; default 15m.
	ScaleDownTimeout metav1.Duration `json:"scaleDownTimeout,omitempty"`
	// ClusterAutoscaler holds the flags of a run with Cluster Autoscaler
	// that have no Karpenter counterpart above.
	ClusterAutoscaler *ClusterAutoscalerFlags `json:"clusterAutoscaler,omitempty"`
}

// The autoscalers a scenario can run.
const (
	Karpenter         = "Karpenter"
	ClusterAutoscaler = "ClusterAutoscaler"
)

// ClusterAutoscalerFlags are Cluster Autoscaler's flags in a scenario;
// durations are simulated. docs/autoscaling.md says why each is set.
type ClusterAutoscalerFlags struct {
	// Expander is --expander; default least-waste.
	Expander string `json:"expander,omitempty"`
	// ScanInterval is --scan-interval; default 10s.
	ScanInterval metav1.Duration `json:"scanInterval,omitempty"`
	// ScaleDownDelayAfterAdd is --scale-down-delay-after-add; default 10m,
	// Cluster Autoscaler's.
	ScaleDownDelayAfterAdd metav1.Duration `json:"scaleDownDelayAfterAdd,omitempty"`
	// ScaleDownUtilizationThreshold is --scale-down-utilization-threshold;
	// default 0.5.
	ScaleDownUtilizationThreshold float64 `json:"scaleDownUtilizationThreshold,omitempty"`
	// SchedulerNames restricts scale-up to pending pods of these schedulers
	// (--allowed-scheduler-names); empty: every scheduler's.
	SchedulerNames []string `json:"schedulerNames,omitempty"`
	// ExtraFlags are passed as they are (for instance
	// --skip-nodes-with-custom-controller-pods=false); durations in them
	// are not scaled.
	ExtraFlags []string `json:"extraFlags,omitempty"`
}

// The defaults of ClusterAutoscalerFlags (Cluster Autoscaler's own).
var (
	DefaultScanInterval           = 10 * time.Second
	DefaultScaleDownDelayAfterAdd = 10 * time.Minute
	DefaultExpander               = "least-waste"
)

// Kind is the autoscaler, defaulted.
func (a *Autoscale) Kind() string {
	if a.Autoscaler == "" {
		return Karpenter
	}
	return a.Autoscaler
}

// CAFlags is ClusterAutoscaler, defaulted.
func (a *Autoscale) CAFlags() ClusterAutoscalerFlags {
	var f ClusterAutoscalerFlags
	if a.ClusterAutoscaler != nil {
		f = *a.ClusterAutoscaler
	}
	if f.Expander == "" {
		f.Expander = DefaultExpander
	}
	f.ScanInterval.Duration = orDefault(f.ScanInterval, DefaultScanInterval)
	f.ScaleDownDelayAfterAdd.Duration = orDefault(f.ScaleDownDelayAfterAdd, DefaultScaleDownDelayAfterAdd)
	return f
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
	errs = append(errs, oneOf("autoscale: autoscaler", a.Autoscaler, Karpenter, ClusterAutoscaler)...)
	if f := a.ClusterAutoscaler; f != nil {
		if f.ScanInterval.Duration < 0 || f.ScaleDownDelayAfterAdd.Duration < 0 || f.ScaleDownUtilizationThreshold < 0 || f.ScaleDownUtilizationThreshold > 1 {
			errs = append(errs, errors.New("autoscale: clusterAutoscaler: scanInterval and scaleDownDelayAfterAdd must not be negative, scaleDownUtilizationThreshold within [0, 1]"))
		}
	}
	errs = append(errs, oneOf("autoscale: instanceFamily", a.InstanceFamily, "c", "m", "s")...)
	errs = append(errs, oneOf("autoscale: consolidationPolicy", a.ConsolidationPolicy, "WhenEmpty", "WhenEmptyOrUnderutilized")...)
	if a.CPULimit > 0 {
		for _, n := range a.CPUs() {
			if n > a.CPULimit {
				errs = append(errs, fmt.Errorf("autoscale: instance size %d cpu is above cpuLimit %d: no such node could ever be launched", n, a.CPULimit))
			}
		}
	}
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
