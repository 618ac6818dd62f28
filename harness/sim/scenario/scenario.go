// Package scenario describes a simulator run: nodes, ARC scale sets and the
// job stream (a list, or a seeded generator), read from YAML files such as
// test/scenarios/seed.yaml. Durations are simulated time.
package scenario

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tandem-scheduler/tandem/harness/sim/arc"
)

// Scenario is one simulator input.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// TimeScale is simulated seconds per real second (default 1); the
	// --time-scale flag overrides it.
	TimeScale float64 `json:"timeScale,omitempty"`
	// Scoring is NodeResourcesFit's scoring strategy for every scheduler
	// under test: LeastAllocated (kube-scheduler's default) or MostAllocated.
	Scoring string `json:"scoring,omitempty"`
	// StorageTopology is what the runners' work volumes are pinned to once
	// provisioned: hostname (node-local disks, local-path; the default) or
	// zone (zonal disks: EBS gp3, GKE standard-rwo; nodes need a
	// topology.kubernetes.io/zone label).
	StorageTopology string `json:"storageTopology,omitempty"`
	// NoWorkflowPodGrace is tandem's noWorkflowPodGrace in simulated time
	// (default the plugin's, 2m): how long a runner whose job started waits
	// for its workflow pod before its reservation of a job without a
	// container is released.
	NoWorkflowPodGrace metav1.Duration `json:"noWorkflowPodGrace,omitempty"`
	Nodes              []NodePool      `json:"nodes"`
	ScaleSets          []ScaleSet      `json:"scaleSets"`
	Jobs               Jobs            `json:"jobs"`
	// Chaos is what `make chaos` injects; other tools ignore it.
	Chaos *Chaos `json:"chaos,omitempty"`
	// Autoscale runs the real Karpenter (KWOK provider) in every run: the
	// cluster grows from Nodes as pending pods need it and shrinks again.
	Autoscale *Autoscale `json:"autoscale,omitempty"`
}

// NodePool is Count identical nodes named <name>-<i>.
type NodePool struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	// Capacity is also allocatable: cpu, memory, ephemeral-storage, pods
	// (default 110) and extended resources.
	Capacity v1.ResourceList   `json:"capacity"`
	Labels   map[string]string `json:"labels,omitempty"`
	Taints   []v1.Taint        `json:"taints,omitempty"`
}

// ScaleSet is a gha-runner-scale-set release: the chart values the emulator uses.
type ScaleSet struct {
	Name       string       `json:"name"`
	MinRunners int          `json:"minRunners,omitempty"`
	MaxRunners int          `json:"maxRunners"`
	HookMode   arc.HookMode `json:"hookMode"`
	// Runner is the runner container's resources.
	Runner            v1.ResourceRequirements `json:"runner"`
	Labels            map[string]string       `json:"labels,omitempty"`
	Annotations       map[string]string       `json:"annotations,omitempty"`
	NodeSelector      map[string]string       `json:"nodeSelector,omitempty"`
	Tolerations       []v1.Toleration         `json:"tolerations,omitempty"`
	PriorityClassName string                  `json:"priorityClassName,omitempty"`
	// HookTemplate is the hook template file (a PodTemplateSpec, YAML).
	HookTemplate string `json:"hookTemplate,omitempty"`
	// PrepareJobTimeout sets ACTIONS_RUNNER_PREPARE_JOB_TIMEOUT_SECONDS.
	PrepareJobTimeout metav1.Duration `json:"prepareJobTimeout,omitempty"`
	// RequireJobContainer is ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER (default true).
	RequireJobContainer *bool `json:"requireJobContainer,omitempty"`
	// WorkSize is the work volume's size (default 1Gi).
	WorkSize resource.Quantity `json:"workSize,omitempty"`
	// RunnerStartup is from the runner pod Running to the runner taking
	// jobs (default 5s).
	RunnerStartup metav1.Duration `json:"runnerStartup,omitempty"`
	// HookDelay is from job start to the workflow pod's creation (default 5s).
	HookDelay metav1.Duration `json:"hookDelay,omitempty"`
}

// Jobs is the job stream: an explicit list, generated jobs, or both.
type Jobs struct {
	List     []Job      `json:"list,omitempty"`
	Generate *Generator `json:"generate,omitempty"`
}

// Job is one workflow job.
type Job struct {
	// At is the arrival (queued) time.
	At       metav1.Duration `json:"at"`
	Duration metav1.Duration `json:"duration"`
	// ScaleSet runs the job (default: the first scale set).
	ScaleSet string `json:"scaleSet,omitempty"`
	// Container: the job has a `container:` (default true).
	Container *bool         `json:"container,omitempty"`
	Image     string        `json:"image,omitempty"`
	Services  []arc.Service `json:"services,omitempty"`
	// Steps are its container steps, in order, within its duration.
	Steps []Step `json:"steps,omitempty"`
}

// Step is a container step (`uses: docker://...`, a container action): it
// starts At after the job's steps start and runs for Duration in a pod of
// its own.
type Step struct {
	At       metav1.Duration `json:"at"`
	Duration metav1.Duration `json:"duration"`
	Image    string          `json:"image,omitempty"`
}

// validateSteps checks that steps run one after another within a job of
// duration d that has a container.
func validateSteps(steps []Step, d time.Duration, container bool) error {
	if len(steps) > 0 && !container {
		return errors.New("container steps need a job container")
	}
	var end time.Duration
	for i, st := range steps {
		if st.Duration.Duration <= 0 || st.At.Duration < end {
			return fmt.Errorf("step %d: want a positive duration, starting after the step before ends", i)
		}
		end = st.At.Duration + st.Duration.Duration
	}
	if end > d {
		return fmt.Errorf("steps end at %s, after the job's %s", end, d)
	}
	return nil
}

// Load reads and validates a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse decodes (strictly) and validates a scenario.
func Parse(data []byte) (*Scenario, error) {
	var s Scenario
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	return &s, nil
}

func (s *Scenario) validate() error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, errors.New("name is required"))
	}
	if s.NoWorkflowPodGrace.Duration < 0 {
		errs = append(errs, errors.New("noWorkflowPodGrace must not be negative"))
	}
	if s.TimeScale < 0 {
		errs = append(errs, errors.New("timeScale must not be negative"))
	}
	errs = append(errs, oneOf("scoring", s.Scoring, "LeastAllocated", "MostAllocated")...)
	errs = append(errs, oneOf("storageTopology", s.StorageTopology, "hostname", "zone")...)
	if len(s.Nodes) == 0 && s.Autoscale == nil {
		errs = append(errs, errors.New("no nodes (and no autoscale)"))
	}
	if s.Autoscale != nil {
		errs = append(errs, s.Autoscale.validate()...)
	}
	for _, p := range s.Nodes {
		if p.Name == "" || p.Count <= 0 {
			errs = append(errs, fmt.Errorf("node pool %q: name and a positive count are required", p.Name))
		}
	}
	if len(s.ScaleSets) == 0 {
		errs = append(errs, errors.New("no scale sets"))
	}
	names := map[string]bool{}
	for _, set := range s.ScaleSets {
		names[set.Name] = true
		if set.Name == "" || set.MaxRunners <= 0 || set.MinRunners < 0 || set.MinRunners > set.MaxRunners {
			errs = append(errs, fmt.Errorf("scale set %q: want a name and 0 <= minRunners <= maxRunners, maxRunners > 0", set.Name))
		}
		if !set.HookMode.Valid() {
			errs = append(errs, fmt.Errorf("scale set %q: hookMode %q: want one of %v", set.Name, set.HookMode, arc.HookModes))
		}
	}
	for i, j := range s.Jobs.List {
		if j.ScaleSet != "" && !names[j.ScaleSet] {
			errs = append(errs, fmt.Errorf("job %d: unknown scale set %q", i, j.ScaleSet))
		}
		if j.Duration.Duration <= 0 {
			errs = append(errs, fmt.Errorf("job %d: duration must be positive", i))
		}
		if err := validateSteps(j.Steps, j.Duration.Duration, j.Container == nil || *j.Container); err != nil {
			errs = append(errs, fmt.Errorf("job %d: %w", i, err))
		}
	}
	if g := s.Jobs.Generate; g != nil {
		errs = append(errs, g.validate(names)...)
	}
	if len(s.Jobs.List) == 0 && s.Jobs.Generate == nil {
		errs = append(errs, errors.New("no jobs"))
	}
	if s.Chaos != nil {
		errs = append(errs, s.Chaos.validate()...)
	}
	return errors.Join(errs...)
}

// oneOf returns an error (as a list) unless value is empty or one of
// allowed: `field "value": want A or B`.
func oneOf(field, value string, allowed ...string) []error {
	if value == "" || slices.Contains(allowed, value) {
		return nil
	}
	return []error{fmt.Errorf("%s %q: want %s", field, value, strings.Join(allowed, " or "))}
}

// Set returns the named scale set.
func (s *Scenario) Set(name string) *ScaleSet {
	for i := range s.ScaleSets {
		if s.ScaleSets[i].Name == name {
			return &s.ScaleSets[i]
		}
	}
	return nil
}

// TotalNodes counts the nodes of all pools.
func (s *Scenario) TotalNodes() int {
	n := 0
	for _, p := range s.Nodes {
		n += p.Count
	}
	return n
}

func orDefault(d metav1.Duration, def time.Duration) time.Duration {
	if d.Duration > 0 {
		return d.Duration
	}
	return def
}

// Startup is the set's runner startup delay.
func (s *ScaleSet) Startup() time.Duration { return orDefault(s.RunnerStartup, 5*time.Second) }

// Delay is the set's delay from job start to the workflow pod.
func (s *ScaleSet) Delay() time.Duration { return orDefault(s.HookDelay, 5*time.Second) }
