package compare

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Metric names in scheduler_perf's data items.
const (
	MetricThroughput = "SchedulingThroughput"
	MetricAttempt    = "scheduler_scheduling_attempt_duration_seconds"
	MetricAlgorithm  = "scheduler_scheduling_algorithm_duration_seconds"
	MetricSLI        = "scheduler_pod_scheduling_sli_duration_seconds"
	MetricAPIRequest = "apiserver_request_duration_seconds"
	// MetricPodWrites is the apiserver's write requests to pods (and their
	// subresources: bindings, status) in the measured window, which
	// test/bench's Window writes: "Total", and "PerPod" per pod the
	// scheduler bound in it (the SLI histogram's count).
	MetricPodWrites = "apiserver_pod_writes"
	// MetricBatchAttempts is kube-scheduler's opportunistic batching
	// (scheduler_batch_attempts_total) in the measured window: Data
	// HintUsed, NoHint and HintNotUsed count its attempts by result.
	MetricBatchAttempts = "scheduler_batch_attempts_total"
	// MetricTimeToPlaceholder is, in reservationMode Pods, the time from a
	// runner seen bound to its placeholder seen, in the measured window
	// (Perc50, Perc99, Max in ms; Count; Missing: runners without one).
	MetricTimeToPlaceholder = "tandem_time_to_placeholder"
	// WindowPhase is the phase of the data items test/bench's Window writes
	// (window-*.json): the measured window alone.
	WindowPhase = "window"
)

// Sample is what one run measured in its metrics-collecting phase.
// Latencies are in milliseconds; a zero means not measured.
type Sample struct {
	// Throughput is SchedulingThroughput's average, pods/s: the mean of
	// the per-second samples in which some pod got bound.
	Throughput float64 `json:"throughput"`
	// P50 and P99 are quantiles of scheduler_scheduling_attempt_duration_seconds
	// {result=scheduled}: one scheduling cycle plus its binding.
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	// AlgorithmP50/P99: scheduler_scheduling_algorithm_duration_seconds,
	// the scheduling algorithm alone (PreFilter to Score, every attempt).
	AlgorithmP50 float64 `json:"algorithmP50"`
	AlgorithmP99 float64 `json:"algorithmP99"`
	// SLIP50/P99: scheduler_pod_scheduling_sli_duration_seconds, from a
	// pod's first entry into the queue until it is bound.
	SLIP50 float64 `json:"sliP50"`
	SLIP99 float64 `json:"sliP99"`
	// UnschedulableP99 is the attempt latency of unschedulable attempts.
	UnschedulableP99 float64 `json:"unschedulableP99,omitempty"`
	// AttemptsPerPod is scheduling attempts per pod bound by the scheduler
	// over the phase (from the progress samples).
	AttemptsPerPod float64 `json:"attemptsPerPod,omitempty"`
	// BindingP99 is the apiserver's latency of pods/binding requests.
	BindingP99 float64 `json:"bindingP99,omitempty"`
	// PodWritesPerPod is the apiserver's write requests to pods and their
	// subresources (creates, bindings, status, deletes, by anyone: the
	// workload, the scheduler, tandem's placeholders) per pod the
	// scheduler bound in the measured window.
	PodWritesPerPod float64 `json:"podWritesPerPod,omitempty"`
	// Batched is the share of the window's scheduling attempts that took
	// the node opportunistic batching hinted (KEP-5598), HintedAttempts
	// their count.
	Batched        float64 `json:"batched,omitempty"`
	HintedAttempts float64 `json:"hintedAttempts,omitempty"`
	// PlaceholderP50 and PlaceholderP99 are the time from a runner seen
	// bound to its placeholder seen (ms; reservationMode Pods; zero for one
	// seen first), of PlaceholderRunners runners bound in the window, and
	// PlaceholdersMissing the runners bound in the window without one by
	// its end.
	PlaceholderRunners  float64 `json:"placeholderRunners,omitempty"`
	PlaceholderP50      float64 `json:"placeholderP50,omitempty"`
	PlaceholderP99      float64 `json:"placeholderP99,omitempty"`
	PlaceholdersMissing float64 `json:"placeholdersMissing,omitempty"`
	// Windowed says the latencies are those of the measured window (the
	// window's data items); scheduler_perf's own cover the whole workload.
	Windowed bool `json:"windowed,omitempty"`
}

// dataItems is scheduler_perf's data items file.
type dataItems struct {
	DataItems []struct {
		Data   map[string]float64 `json:"data"`
		Unit   string             `json:"unit"`
		Labels map[string]string  `json:"labels"`
	} `json:"dataItems"`
}

// Key names a run's test case and workload: "RunnersTandem/500Nodes_2000Runners".
type Key string

func key(testCase, workload string) Key { return Key(testCase + "/" + workload) }

// ReadDir reads the data items (*.json) and progress samples (*.dat) that
// scheduler_perf and the measured window wrote into dir (its
// -data-items-dir), by test case and workload. The window's latencies
// replace scheduler_perf's.
func ReadDir(dir string) (map[Key]Sample, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	samples, windows := map[Key]Sample{}, map[Key]Sample{}
	for _, f := range files {
		into := samples
		if strings.HasPrefix(filepath.Base(f), "window-") {
			into = windows
		}
		if err := readDataItems(f, into); err != nil {
			return nil, err
		}
	}
	for k, w := range windows {
		s, ok := samples[k]
		if !ok {
			continue // the run measured nothing else
		}
		s.P50, s.P99, s.UnschedulableP99 = w.P50, w.P99, w.UnschedulableP99
		s.AlgorithmP50, s.AlgorithmP99 = w.AlgorithmP50, w.AlgorithmP99
		s.SLIP50, s.SLIP99 = w.SLIP50, w.SLIP99
		s.BindingP99, s.PodWritesPerPod, s.Windowed = w.BindingP99, w.PodWritesPerPod, true
		s.Batched, s.HintedAttempts = w.Batched, w.HintedAttempts
		s.PlaceholderP50, s.PlaceholderP99, s.PlaceholdersMissing = w.PlaceholderP50, w.PlaceholderP99, w.PlaceholdersMissing
		s.PlaceholderRunners = w.PlaceholderRunners
		samples[k] = s
	}
	dats, err := filepath.Glob(filepath.Join(dir, "*.dat"))
	if err != nil {
		return nil, err
	}
	for _, f := range dats {
		k, perPod, err := readProgress(f)
		if err != nil {
			return nil, err
		}
		if perPod > 0 {
			s := samples[k]
			s.AttemptsPerPod = perPod
			samples[k] = s
		}
	}
	return samples, nil
}

// readDataItems adds the data items of file to samples.
func readDataItems(file string, samples map[Key]Sample) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var items dataItems
	if err := json.Unmarshal(data, &items); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for _, it := range items.DataItems {
		if len(it.Data) == 0 {
			continue // a collector that measured nothing
		}
		// Name is BenchmarkPerfScheduling/<test case>/<workload>/<phase>.
		parts := strings.Split(it.Labels["Name"], "/")
		if len(parts) < 3 {
			return fmt.Errorf("%s: data item named %q: want BenchmarkPerfScheduling/<test case>/<workload>/<phase>", file, it.Labels["Name"])
		}
		k := key(parts[1], parts[2])
		s := samples[k]
		switch it.Labels["Metric"] {
		case MetricThroughput:
			s.Throughput = it.Data["Average"]
		case MetricAttempt:
			switch it.Labels["result"] {
			case "scheduled":
				s.P50, s.P99 = it.Data["Perc50"], it.Data["Perc99"]
			case "unschedulable":
				s.UnschedulableP99 = it.Data["Perc99"]
			}
		case MetricAlgorithm:
			s.AlgorithmP50, s.AlgorithmP99 = it.Data["Perc50"], it.Data["Perc99"]
		case MetricSLI:
			s.SLIP50, s.SLIP99 = it.Data["Perc50"], it.Data["Perc99"]
		case MetricAPIRequest:
			if it.Labels["subresource"] == "binding" {
				s.BindingP99 = it.Data["Perc99"]
			}
		case MetricPodWrites:
			s.PodWritesPerPod = it.Data["PerPod"]
		case MetricTimeToPlaceholder:
			s.PlaceholderP50, s.PlaceholderP99, s.PlaceholdersMissing = it.Data["Perc50"], it.Data["Perc99"], it.Data["Missing"]
			s.PlaceholderRunners = it.Data["Count"] + it.Data["Missing"]
		case MetricBatchAttempts:
			used := it.Data["HintUsed"]
			if all := used + it.Data["NoHint"] + it.Data["HintNotUsed"]; all > 0 {
				s.Batched, s.HintedAttempts = round(used/all), used
			}
		}
		samples[k] = s
	}
	return nil
}

// progressFile is scheduler_perf's name for progress samples:
// <test case>_<workload>_<topic>_<run id>.dat, the test case without "_".
var progressFile = regexp.MustCompile(`^([^_]+)_(.+)_[^_]+_[^_]+\.dat$`)

// readProgress reads a progress file: lines "<seconds>s <bound> <attempts>
// <observed bound> <rate>", the counters cumulative. It returns the
// attempts per bound pod between the first and the last sample, 0 if they
// do not tell.
func readProgress(file string) (Key, float64, error) {
	m := progressFile.FindStringSubmatch(filepath.Base(file))
	if m == nil {
		return "", 0, fmt.Errorf("%s: not a scheduler_perf progress file name", file)
	}
	f, err := os.Open(file)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	var first, last [2]float64 // bound, attempts
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		bound, err1 := strconv.ParseFloat(fields[1], 64)
		attempts, err2 := strconv.ParseFloat(fields[2], 64)
		if err1 != nil || err2 != nil {
			return "", 0, fmt.Errorf("%s: line %q: want counters", file, sc.Text())
		}
		if n == 0 {
			first = [2]float64{bound, attempts}
		}
		last = [2]float64{bound, attempts}
		n++
	}
	if err := sc.Err(); err != nil {
		return "", 0, err
	}
	k := key(m[1], m[2])
	if n < 2 || last[0] <= first[0] {
		return k, 0, nil
	}
	return k, (last[1] - first[1]) / (last[0] - first[0]), nil
}
