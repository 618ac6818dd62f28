// Package report turns simulator runs into the numbers a person compares:
// jobs by outcome, start latency, utilisation, makespan and throughput next
// to an ideal packing bound, as a table, a JSON file and an SVG picture.
package report

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeports"

	"github.com/tandem-scheduler/tandem/harness/sim/arc"
	"github.com/tandem-scheduler/tandem/harness/sim/invariant"
)

// Report is the JSON document (_output/demo/report.json).
type Report struct {
	Scenario  string  `json:"scenario"`
	Seed      int64   `json:"seed"`
	TimeScale float64 `json:"timeScale"`
	Nodes     int     `json:"nodes"`
	// Ideal is the bound no scheduler can beat on this job stream.
	Ideal Ideal `json:"idealPackingBound"`
	Runs  []Run `json:"runs"`
}

// Ideal is a lower bound on the makespan (so an upper bound on jobs per
// hour): every job starts on arrival, and the cluster's cpu and memory are
// one fluid pool filled by runner + workflow pod for the job's duration.
type Ideal struct {
	MakespanSeconds float64 `json:"makespanSeconds"`
	JobsPerHour     float64 `json:"jobsPerHour"`
}

// Run is one scheduler's run of the job stream.
type Run struct {
	Scheduler           string   `json:"scheduler"`
	Jobs                Jobs     `json:"jobs"`
	InvariantViolations int      `json:"invariantViolations"`
	Violations          []string `json:"violations,omitempty"`
	ReservationsLeft    int      `json:"reservationsLeft"`
	// StartLatency is from queued to workflow pod Running, for started jobs.
	StartLatency Latency `json:"startLatencySeconds"`
	// MeanNodeCPUUtilization is admitted cpu requests over allocatable,
	// averaged over nodes and over the makespan.
	MeanNodeCPUUtilization float64 `json:"meanNodeCPUUtilization"`
	MakespanSeconds        float64 `json:"makespanSeconds"`
	JobsPerHour            float64 `json:"jobsPerHour"`
	// JobsPerHourOfIdeal is JobsPerHour over the ideal packing bound's;
	// JobsPerHourVsAntiAffinity over the anti-affinity workaround's, when
	// the report has a run of it (SetRatios).
	JobsPerHourOfIdeal        float64   `json:"jobsPerHourOfIdeal"`
	JobsPerHourVsAntiAffinity float64   `json:"jobsPerHourVsAntiAffinity,omitempty"`
	WallSeconds               float64   `json:"wallSeconds"`
	Failures                  []Failure `json:"failures,omitempty"`
	// ReservedUnusedCPUSeconds is room held for nothing, in simulated
	// cpu-seconds summed over nodes: what the recorded reservations held
	// while no pod of their runner used it (the invariant checker's held
	// room: before the workflow pod, and step headroom without a step pod).
	// StepHeadroomUnusedCPUSeconds is the part held as step headroom only.
	// Zero for a scheduler that reserves nothing.
	ReservedUnusedCPUSeconds     float64 `json:"reservedUnusedCpuSeconds"`
	StepHeadroomUnusedCPUSeconds float64 `json:"stepHeadroomUnusedCpuSeconds"`
	// Autoscale is set for a run with an autoscaler (scenario autoscale).
	Autoscale *Autoscale `json:"autoscale,omitempty"`
	// RealNodes is set for a run on real kubelets (sim.Options.RealNodes).
	RealNodes *RealNodes `json:"realNodes,omitempty"`
	// Timeline is per-node used and reserved cpu, for the picture.
	Timeline []NodeTimeline `json:"-"`
	// start is the first arrival, makespan is measured from it.
	start time.Duration
}

// RealNodes is what the real kubelets of a run did, as their pods' status
// says.
type RealNodes struct {
	// PodsRejected counts the pods the kubelets failed with a reason
	// (rejected at admission: OutOfcpu, OutOfmemory, ...; or evicted), by
	// reason.
	PodsRejected map[string]int `json:"podsRejected"`
	// Placeholders counts the placeholders (reservationMode Pods) of the
	// run, PlaceholdersRan those whose container a kubelet reported running
	// (a placeholder handed over to its workflow pod before the kubelet
	// started it never ran).
	Placeholders    int `json:"placeholders"`
	PlaceholdersRan int `json:"placeholdersRan"`
}

// Rejected is the number of pods the kubelets rejected.
func (r *RealNodes) Rejected() int {
	n := 0
	for _, c := range r.PodsRejected {
		n += c
	}
	return n
}

// Jobs counts outcomes.
type Jobs struct {
	Submitted      int            `json:"submitted"`
	Succeeded      int            `json:"succeeded"`
	Failed         int            `json:"failed"`
	FailedByReason map[string]int `json:"failedByReason"`
	// FailedByCause groups the reasons (Cause); FailedInSteps counts the
	// failures that came in a container step, whatever their cause.
	FailedByCause map[string]int `json:"failedByCause"`
	FailedInSteps int            `json:"failedInSteps"`
}

// Causes of job failures (Cause).
const (
	// CauseCapacity: a pod rejected by the kubelet for want of room
	// (OutOfcpu, OutOfmemory, OutOfpods, ...).
	CauseCapacity = "capacity"
	// CauseHostPort: a pod rejected by the kubelet for a host port another
	// pod on the node uses (its NodePorts admission).
	CauseHostPort = "host-port"
	// CausePendingTimeout: a workflow or step pod left Pending longer than
	// the hook waits.
	CausePendingTimeout = "pending-timeout"
	// CauseOther: anything else (runner failures, node deletions, hook
	// errors, jobs without a container on a runner requiring one).
	CauseOther = "other"
)

// Causes lists the causes in the order the table prints them.
var Causes = []string{CauseCapacity, CauseHostPort, CausePendingTimeout, CauseOther}

// Cause groups a job failure reason.
func Cause(reason string) string {
	switch {
	case strings.HasPrefix(reason, "OutOf"):
		return CauseCapacity
	case reason == nodeports.Name:
		return CauseHostPort
	case reason == arc.ReasonPrepareJobTimeout || reason == arc.ReasonStepTimeout:
		return CausePendingTimeout
	}
	return CauseOther
}

// Latency percentiles in simulated seconds.
type Latency struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	Max float64 `json:"max"`
}

// Failure is one failed job.
type Failure struct {
	Job       int     `json:"job"`
	Node      string  `json:"node"`
	AtSeconds float64 `json:"atSeconds"`
	Reason    string  `json:"reason"`
	Message   string  `json:"message"`
}

// NodeTimeline is a node's cpu over time.
type NodeTimeline struct {
	Node                string
	AllocatableMilliCPU int64
	Samples             []invariant.Sample
	// Lifetime is set for a node that came (and maybe went) during the run.
	Lifetime *Lifetime
}

// Autoscale sums up the nodes of a run with an autoscaler. Times are simulated
// seconds from the run's start.
type Autoscale struct {
	// Autoscaler is Karpenter or ClusterAutoscaler.
	Autoscaler string `json:"autoscaler"`
	// Launched counts the nodes it launched, BySize by instance cpu.
	Launched int            `json:"nodesLaunched"`
	BySize   map[string]int `json:"launchedBySize"`
	// Left counts the launched nodes still there when the run stopped
	// waiting for the scale-down; ScaledDown is Left == 0.
	Left       int  `json:"launchedLeft"`
	ScaledDown bool `json:"scaledDown"`
	// LastRemovedSeconds is when the last launched node went.
	LastRemovedSeconds float64 `json:"lastRemovedSeconds"`
	// NodeSeconds is the cost: every node's lifetime (static nodes
	// included) from the run's start to its end (the last job's end or the
	// last launched node's removal, whichever is later), summed;
	// NodeCPUSeconds weighs each by its capacity cpu.
	NodeSeconds    float64 `json:"nodeSeconds"`
	NodeCPUSeconds float64 `json:"nodeCpuSeconds"`
}

// Lifetime is when a node existed (simulated): From, and To if Gone.
type Lifetime struct {
	From, To time.Duration
	Gone     bool
	// Label names the node in the picture.
	Label string
}

// SetAutoscale records the run's autoscaling summary and the lifetimes of
// the nodes that came during it.
func (r *Run) SetAutoscale(a *Autoscale, lifetimes map[string]Lifetime) {
	a.NodeSeconds, a.NodeCPUSeconds, a.LastRemovedSeconds = round(a.NodeSeconds), round(a.NodeCPUSeconds), round(a.LastRemovedSeconds)
	r.Autoscale = a
	for i := range r.Timeline {
		if l, ok := lifetimes[r.Timeline[i].Node]; ok {
			r.Timeline[i].Lifetime = &l
		}
	}
	// The picture's lanes: the scenario's nodes, then the launched ones in
	// the order they came.
	sort.SliceStable(r.Timeline, func(i, j int) bool {
		a, b := r.Timeline[i].Lifetime, r.Timeline[j].Lifetime
		if a == nil || b == nil {
			return a == nil && b != nil
		}
		return a.From < b.From
	})
}

// NewRun sums up a run from its job results and the checker's timelines.
func NewRun(scheduler string, results []arc.Result, samples map[string][]invariant.Sample, allocatable map[string]v1.ResourceList) Run {
	r := Run{Scheduler: scheduler, Jobs: Jobs{Submitted: len(results), FailedByReason: map[string]int{}, FailedByCause: map[string]int{}}}
	var latencies []float64
	var end time.Duration
	r.start = time.Duration(math.MaxInt64)
	for _, res := range results {
		r.start = min(r.start, res.Job.Arrival)
		end = max(end, res.Ended)
		if res.Started >= 0 {
			latencies = append(latencies, (res.Started - res.Job.Arrival).Seconds())
		}
		if res.Succeeded {
			r.Jobs.Succeeded++
			continue
		}
		r.Jobs.Failed++
		r.Jobs.FailedByReason[res.Reason]++
		r.Jobs.FailedByCause[Cause(res.Reason)]++
		if res.InStep {
			r.Jobs.FailedInSteps++
		}
		r.Failures = append(r.Failures, Failure{Job: res.Job.ID, Node: res.Node, AtSeconds: round(res.Ended.Seconds()), Reason: res.Reason, Message: res.Message})
	}
	if len(results) == 0 {
		r.start = 0
	}
	r.StartLatency = percentiles(latencies)
	span := end - r.start
	r.MakespanSeconds = round(span.Seconds())
	if span > 0 {
		r.JobsPerHour = round(float64(r.Jobs.Succeeded) / span.Hours())
	}
	nodes := make([]string, 0, len(samples))
	for n := range samples {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	var util, unused, unusedStep float64
	used := func(s invariant.Sample) int64 { return s.UsedMilliCPU }
	for _, n := range nodes {
		rl := allocatable[n]
		alloc := rl.Cpu().MilliValue()
		r.Timeline = append(r.Timeline, NodeTimeline{Node: n, AllocatableMilliCPU: alloc, Samples: samples[n]})
		if alloc > 0 && span > 0 {
			util += integrate(samples[n], used, r.start, end) / (float64(alloc) * span.Seconds())
		}
		// From the first sample on: warm runners hold room before the
		// first arrival.
		unused += integrate(samples[n], func(s invariant.Sample) int64 { return s.ReservedMilli }, 0, end)
		unusedStep += integrate(samples[n], func(s invariant.Sample) int64 { return s.ReservedStepMilli }, 0, end)
	}
	r.ReservedUnusedCPUSeconds, r.StepHeadroomUnusedCPUSeconds = round(unused/1000), round(unusedStep/1000)
	if len(nodes) > 0 {
		r.MeanNodeCPUUtilization = math.Round(1000*util/float64(len(nodes))) / 1000
	}
	return r
}

// integrate returns the millicore-seconds of field over [from, to].
func integrate(samples []invariant.Sample, field func(invariant.Sample) int64, from, to time.Duration) float64 {
	var sum float64
	for i, s := range samples {
		next := to
		if i+1 < len(samples) {
			next = samples[i+1].T
		}
		a, b := max(s.T, from), min(next, to)
		if b > a {
			sum += float64(field(s)) * (b - a).Seconds()
		}
	}
	return sum
}

func percentiles(v []float64) Latency {
	if len(v) == 0 {
		return Latency{}
	}
	sort.Float64s(v)
	at := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(v)))) - 1
		return round(v[max(0, min(i, len(v)-1))])
	}
	return Latency{P50: at(0.50), P95: at(0.95), Max: round(v[len(v)-1])}
}

func round(f float64) float64 { return math.Round(f*10) / 10 }

// ratio is a/b to three decimals.
func ratio(a, b float64) float64 { return math.Round(a/b*1000) / 1000 }

// IdealBound computes the bound for jobs, each holding pair(job) (runner +
// workflow pod requests) for its duration, on a cluster of total allocatable.
func IdealBound(jobs []arc.Job, pair func(arc.Job) v1.ResourceList, total v1.ResourceList) Ideal {
	if len(jobs) == 0 {
		return Ideal{}
	}
	start, end := time.Duration(math.MaxInt64), time.Duration(0)
	var cpuWork, memWork float64
	for _, j := range jobs {
		start = min(start, j.Arrival)
		end = max(end, j.Arrival+j.Duration)
		p := pair(j)
		cpuWork += float64(p.Cpu().MilliValue()) * j.Duration.Seconds()
		memWork += float64(p.Memory().Value()) * j.Duration.Seconds()
	}
	span := (end - start).Seconds()
	if c := total.Cpu().MilliValue(); c > 0 {
		span = max(span, cpuWork/float64(c))
	}
	if m := total.Memory().Value(); m > 0 {
		span = max(span, memWork/float64(m))
	}
	return Ideal{MakespanSeconds: round(span), JobsPerHour: round(float64(len(jobs)) / (span / 3600))}
}

// AntiAffinity is the report's name of the anti-affinity workaround's run
// (sim.AntiAffinity), optionally with its scoring ("anti-affinity/...").
const AntiAffinity = "anti-affinity"

// SetRatios sets every run's jobs per hour relative to the ideal bound and,
// if the report has a run of the anti-affinity workaround (the first one),
// to it.
func (r *Report) SetRatios() {
	var workaround float64
	for _, run := range r.Runs {
		if run.Scheduler == AntiAffinity || strings.HasPrefix(run.Scheduler, AntiAffinity+"/") {
			workaround = run.JobsPerHour
			break
		}
	}
	for i := range r.Runs {
		run := &r.Runs[i]
		if r.Ideal.JobsPerHour > 0 {
			run.JobsPerHourOfIdeal = ratio(run.JobsPerHour, r.Ideal.JobsPerHour)
		}
		if workaround > 0 {
			run.JobsPerHourVsAntiAffinity = ratio(run.JobsPerHour, workaround)
		}
	}
}

// WriteJSON writes the report, creating the directory.
func WriteJSON(path string, r *Report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
