// Package sim runs a scenario (harness/sim/scenario) against a real control
// plane: Nodes, the kubelet, storage and ARC emulators of harness/sim, one
// scheduler under test in-process, and the invariant checker, and returns
// the run's report. cmd/tandem-sim and the integration tests use it.
package sim

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tandem-scheduler/tandem/harness/inprocess"
	"github.com/tandem-scheduler/tandem/harness/sim/arc"
	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	configv1 "github.com/tandem-scheduler/tandem/pkg/apis/config/v1"
)

// Kind is a scheduler under test.
type Kind string

const (
	// Default is kube-scheduler's default profile, built from the same
	// libraries: the baseline.
	Default Kind = "default"
	// Tandem is the default profile plus WorkflowReservation.
	Tandem Kind = "tandem"
	// AntiAffinity is the default profile with runners spread one per node by
	// a required pod anti-affinity: the usual workaround.
	AntiAffinity Kind = "anti-affinity"
	// TandemPods is Tandem with reservationMode: Pods: a held reservation
	// is also a placeholder pod on the runner's node, which the kubelet,
	// other schedulers and cluster autoscalers count.
	TandemPods Kind = "tandem-pods"
)

// Kinds lists the schedulers under test.
var Kinds = []Kind{Default, Tandem, AntiAffinity, TandemPods}

// Scheduler is a scheduler under test with, optionally, the scoring
// strategy it runs instead of the scenario's: "tandem/MostAllocated".
type Scheduler struct {
	Kind Kind
	// Scoring is LeastAllocated or MostAllocated; "" keeps the scenario's.
	Scoring string
}

// Schedulers lists each kind with the scenario's scoring.
func Schedulers(kinds ...Kind) []Scheduler {
	out := make([]Scheduler, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, Scheduler{Kind: k})
	}
	return out
}

// ParseScheduler reads "kind" or "kind/Strategy" (tandem-sim --schedulers).
func ParseScheduler(s string) (Scheduler, error) {
	kind, scoring, _ := strings.Cut(strings.TrimSpace(s), "/")
	out := Scheduler{Kind: Kind(kind), Scoring: scoring}
	if !out.Kind.Valid() {
		return Scheduler{}, fmt.Errorf("unknown scheduler %q (want one of %v, optionally with /LeastAllocated or /MostAllocated)", kind, Kinds)
	}
	switch scoring {
	case "", "LeastAllocated", "MostAllocated":
	default:
		return Scheduler{}, fmt.Errorf("scheduler %q: unknown scoring strategy %q (want LeastAllocated or MostAllocated)", s, scoring)
	}
	return out, nil
}

// String is the scheduler as ParseScheduler reads it, and as the report
// names its run.
func (s Scheduler) String() string {
	if s.Scoring == "" {
		return string(s.Kind)
	}
	return string(s.Kind) + "/" + s.Scoring
}

// IsTandem reports whether k runs the WorkflowReservation plugin (in either
// reservation mode).
func (k Kind) IsTandem() bool { return k == Tandem || k == TandemPods }

// SchedulerName is the profile's schedulerName: what ARC users set (or
// leave at the default) in their runner and hook templates.
func (k Kind) SchedulerName() string {
	if k.IsTandem() {
		return "tandem-scheduler"
	}
	return v1.DefaultSchedulerName
}

// SchedulerConfig is the KubeSchedulerConfiguration of the scheduler under
// test. scoring is the scoring strategy (NodeResourcesFit's, or for tandem
// WorkflowReservation's reservation-aware one). Backoff is capped at 1s
// (the minimum) for every scheduler: with time scaled N times, kube-scheduler's
// real-time backoff (1-10s) would otherwise stretch into minutes of simulated
// time. tandemArgs are WorkflowReservation args added to a tandem
// profile's (Harness.TandemArgs).
//
// grace is tandem's noWorkflowPodGrace (TandemArgs); TandemPods is the
// profile with reservationMode: Pods (inprocess.Profile.ReservationMode).
// volumeBinding, when set, replaces the in-tree VolumeBinding
// (storage.VolumeBindingName; the scheduler must be started with
// storage.Registry).
func SchedulerConfig(k Kind, scoring string, grace time.Duration, volumeBinding string, tandemArgs ...string) string {
	p := inprocess.Profile{SchedulerName: k.SchedulerName(), Tandem: k.IsTandem(), Scoring: scoring, BackoffSeconds: 1, VolumeBinding: volumeBinding}
	if k.IsTandem() {
		p.Args = append(TandemArgs(grace), tandemArgs...)
	}
	if k == TandemPods {
		// The shipped Pods profile: the placeholder is handed over at
		// Permit.
		p.ReservationMode = config.ReservationModePods
	}
	return inprocess.Config(p)
}

// TandemArgs are the WorkflowReservation args of a run beyond the shipped
// ones: noWorkflowPodGrace, in real time (see NoWorkflowPodGrace).
func TandemArgs(grace time.Duration) []string {
	return []string{fmt.Sprintf("noWorkflowPodGrace: %s", grace)}
}

// NoWorkflowPodGrace is tandem's noWorkflowPodGrace for a run at scale
// (simulated seconds per real second), in real time, as the plugin's timer
// runs: the scenario's, in simulated time, or else the plugin's default
// (2m), so that a job without a container waits as long in simulated time
// as in a cluster.
func NoWorkflowPodGrace(sc *scenario.Scenario, scale float64) time.Duration {
	grace := sc.NoWorkflowPodGrace.Duration
	if grace == 0 {
		grace = configv1.DefaultNoWorkflowPodGrace
	}
	if scale > 0 {
		grace = time.Duration(float64(grace) / scale).Round(time.Millisecond)
	}
	return grace
}

// configure applies what a user of the scheduler under test sets in the
// chart: the runner's schedulerName, for tandem the hook template's
// schedulerName (so workflow pods that go through a scheduler go through
// tandem), for the workaround the runners' anti-affinity.
func configure(k Kind, set *arc.ScaleSet) error {
	set.SchedulerName = k.SchedulerName()
	switch k {
	case Tandem, TandemPods:
		tmpl, err := withSchedulerName(set.HookTemplate, k.SchedulerName())
		if err != nil {
			return fmt.Errorf("scale set %s: %w", set.Name, err)
		}
		set.HookTemplate = tmpl
	case AntiAffinity:
		set.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{arc.LabelEphemeralRunner: "True"}},
				TopologyKey:   v1.LabelHostname,
			}},
		}}
	}
	return nil
}

// withSchedulerName sets spec.schedulerName in a hook template unless it
// names one already.
func withSchedulerName(tmpl, name string) (string, error) {
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(tmpl), &m); err != nil {
		return "", fmt.Errorf("hook template: %w", err)
	}
	spec, _ := m["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	if _, ok := spec["schedulerName"]; ok {
		return tmpl, nil
	}
	spec["schedulerName"] = name
	m["spec"] = spec
	out, err := yaml.Marshal(m)
	return string(out), err
}

// Valid reports whether k is a known scheduler under test.
func (k Kind) Valid() bool {
	for _, known := range Kinds {
		if k == known {
			return true
		}
	}
	return false
}
