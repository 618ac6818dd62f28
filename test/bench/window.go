package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/test/bench/compare"
)

// The measured window's markers: ConfigMaps a workload creates with
// createAny (templates/window-start.yaml, templates/window-stop.yaml).
const (
	WindowNamespace = "bench-window"
	WindowStart     = "window-start"
	WindowStop      = "window-stop"
)

// WindowPhase is the phase label of the data items Window writes.
const WindowPhase = "window"

// podWriteVerbs are the apiserver's write verbs (its request metrics' verb
// label).
var podWriteVerbs = sets.New("POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION")

// metricSLI is the histogram whose count is the pods bound in the window.
const metricSLI = "scheduler_pod_scheduling_sli_duration_seconds"

// windowed are the histograms Window measures: metric name, and the label
// whose values each get a data item ("" for one item over all series).
var windowed = []struct {
	metric, label string
	values        []string
}{
	{"scheduler_scheduling_attempt_duration_seconds", "result", []string{"scheduled", "unschedulable"}},
	{"scheduler_scheduling_algorithm_duration_seconds", "", nil},
	{"scheduler_pod_scheduling_sli_duration_seconds", "", nil},
	{"scheduler_framework_extension_point_duration_seconds", "extension_point", []string{"PreFilter", "Filter", "Score", "Reserve", "Permit", "Bind"}},
	{"apiserver_request_duration_seconds", "subresource", []string{"binding"}},
}

// Window measures the scheduler's latency histograms over a workload's
// measured phase only. scheduler_perf (v1.35 to v1.37) means to reset them
// when it starts collecting metrics (metricsCollector.init) but resets a
// gathered copy (the MetricFamily protobufs that Gather returned), so its
// quantiles cover the whole workload, warm-up included. A workload marks the phase with two
// ConfigMaps in WindowNamespace, WindowStart after its warm-up's barriers
// and WindowStop after the measured phase's last barrier; Window snapshots
// the histograms at each and writes the differences as scheduler_perf data
// items, phase WindowPhase, to window-<test case>_<workload>.json in
// -data-items-dir. test/bench/compare prefers them.
type Window struct {
	name string // test case/workload
	dir  string

	mu    sync.Mutex
	start *windowSnapshot
	done  bool
	err   error
	// boundAt is when each runner pod (by UID) was first seen bound, and
	// placedAt when each runner's placeholder (by the runner's UID) was
	// first seen: reservationMode Pods' time to placeholder.
	boundAt, placedAt map[types.UID]time.Time
	startAt, stopAt   time.Time
}

// windowSnapshot is what the window reads at each marker.
type windowSnapshot struct {
	histograms map[string]*dto.Histogram
	// podWrites counts the apiserver's write requests to pods so far.
	podWrites float64
	// batch counts opportunistic batching's attempts by result.
	batch map[string]float64
}

// StartWindow watches client for the markers of the workload named name
// ("BenchmarkPerfScheduling/<test case>/<workload>"). stop ends the watch and
// returns an error if a window started and was not written.
func StartWindow(ctx context.Context, client kubernetes.Interface, name string) (stop func() error, err error) {
	w := &Window{name: name, boundAt: map[types.UID]time.Time{}, placedAt: map[types.UID]time.Time{}}
	if f := flag.Lookup("data-items-dir"); f != nil {
		w.dir = f.Value.String()
	}
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(WindowNamespace))
	if _, err := factory.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if cm, ok := obj.(*v1.ConfigMap); ok {
				w.mark(cm.Name)
			}
		},
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("window: configmap handler: %w", err)
	}
	// Runners and placeholders, wherever the workload puts them.
	pods := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = contract.PlaceholderLabel + " in (true)"
	}))
	runners := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = "actions-ephemeral-runner=True"
	}))
	seen := func(obj any) {
		if pod, ok := obj.(*v1.Pod); ok {
			w.seePod(pod)
		}
	}
	for _, f := range []informers.SharedInformerFactory{pods, runners} {
		if _, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    seen,
			UpdateFunc: func(_, obj any) { seen(obj) },
		}); err != nil {
			cancel()
			return nil, fmt.Errorf("window: pod handler: %w", err)
		}
		f.Start(ctx.Done())
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return func() error {
		cancel()
		factory.Shutdown()
		pods.Shutdown()
		runners.Shutdown()
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.start != nil && !w.done && w.err == nil {
			w.err = errors.New("window: started, never stopped (no " + WindowStop + " marker seen)")
		}
		return w.err
	}, nil
}

// seePod notes when a runner was first seen bound, and when a runner's
// placeholder was first seen.
func (w *Window) seePod(pod *v1.Pod) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case contract.IsPlaceholder(pod):
		owner := metav1.GetControllerOf(pod).UID
		if _, ok := w.placedAt[owner]; !ok {
			w.placedAt[owner] = now
		}
	case pod.Spec.NodeName != "":
		if _, ok := w.boundAt[pod.UID]; !ok {
			w.boundAt[pod.UID] = now
		}
	}
}

func (w *Window) mark(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch name {
	case WindowStart:
		w.start, w.err = gatherWindowed()
		w.startAt = time.Now()
	case WindowStop:
		if w.start == nil || w.done {
			return
		}
		w.done = true
		w.stopAt = time.Now()
		end, err := gatherWindowed()
		if err == nil {
			err = w.write(end)
		}
		w.err = err
	}
}

// write writes the data items of end minus start.
func (w *Window) write(end *windowSnapshot) error {
	if w.dir == "" {
		return nil // no -data-items-dir: nothing is written
	}
	parts := strings.Split(w.name, "/")
	if len(parts) < 3 {
		return fmt.Errorf("window: test named %q: want BenchmarkPerfScheduling/<test case>/<workload>", w.name)
	}
	var items windowItems
	for _, m := range windowed {
		values := m.values
		if m.label == "" {
			values = []string{""}
		}
		for _, v := range values {
			k := seriesKey(m.metric, m.label, v)
			h, err := subtract(end.histograms[k], w.start.histograms[k])
			if err != nil {
				return fmt.Errorf("window: %s: %w", k, err)
			}
			if h == nil {
				continue
			}
			labels := map[string]string{"Name": strings.Join(parts[:3], "/") + "/" + WindowPhase, "Metric": m.metric}
			if m.label != "" {
				labels[m.label] = v
			}
			items.DataItems = append(items.DataItems, windowItem{Data: quantiles(h), Unit: "ms", Labels: labels})
		}
	}
	if len(items.DataItems) == 0 {
		return errors.New("window: nothing observed between " + WindowStart + " and " + WindowStop)
	}
	if bound, err := subtract(end.histograms[seriesKey(metricSLI, "", "")], w.start.histograms[seriesKey(metricSLI, "", "")]); err == nil && bound != nil && bound.GetSampleCount() > 0 {
		writes := end.podWrites - w.start.podWrites
		items.DataItems = append(items.DataItems, windowItem{
			Data:   map[string]float64{"Total": writes, "PerPod": writes / float64(bound.GetSampleCount())},
			Unit:   "requests",
			Labels: map[string]string{"Name": strings.Join(parts[:3], "/") + "/" + WindowPhase, "Metric": compare.MetricPodWrites},
		})
	}
	if item, ok := w.timeToPlaceholder(); ok {
		item.Labels = map[string]string{"Name": strings.Join(parts[:3], "/") + "/" + WindowPhase, "Metric": compare.MetricTimeToPlaceholder}
		items.DataItems = append(items.DataItems, item)
	}
	// Opportunistic batching's attempts, by result (kube-scheduler's
	// metrics.BatchAttempt* values).
	batch := map[string]float64{
		"HintUsed":    end.batch["hint_used"] - w.start.batch["hint_used"],
		"NoHint":      end.batch["no_hint"] - w.start.batch["no_hint"],
		"HintNotUsed": end.batch["hint_not_used"] - w.start.batch["hint_not_used"],
	}
	items.DataItems = append(items.DataItems, windowItem{
		Data: batch, Unit: "attempts",
		Labels: map[string]string{"Name": strings.Join(parts[:3], "/") + "/" + WindowPhase, "Metric": compare.MetricBatchAttempts},
	})
	data, err := json.MarshalIndent(items, "", "  ")
	if err != nil {
		return err
	}
	file := filepath.Join(w.dir, "window-"+parts[1]+"_"+parts[2]+".json")
	klog.Background().Info("Window: writing the measured phase's latencies", "file", file, "items", len(items.DataItems))
	return os.WriteFile(file, data, 0o644)
}

// timeToPlaceholder is, for the runners first seen bound in the window,
// the time from when each was seen bound to when its placeholder was seen
// (reservationMode Pods; none before, zero), quantiles in milliseconds, and
// how many had none by the end of the window; false where no placeholder
// was seen at all (reservationMode Memory).
func (w *Window) timeToPlaceholder() (windowItem, bool) {
	if len(w.placedAt) == 0 {
		return windowItem{}, false
	}
	var delays []float64
	missing := 0
	for uid, bound := range w.boundAt {
		if bound.Before(w.startAt) || bound.After(w.stopAt) {
			continue
		}
		placed, ok := w.placedAt[uid]
		if !ok || placed.After(w.stopAt) {
			missing++
			continue
		}
		delays = append(delays, max(0, placed.Sub(bound).Seconds()*1000))
	}
	slices.Sort(delays)
	at := func(q float64) float64 {
		if len(delays) == 0 {
			return 0
		}
		return delays[min(len(delays)-1, int(math.Ceil(q*float64(len(delays))))-1)]
	}
	return windowItem{Unit: "ms", Data: map[string]float64{
		"Perc50": at(0.50), "Perc99": at(0.99), "Max": at(1), "Count": float64(len(delays)), "Missing": float64(missing),
	}}, true
}

type windowItems struct {
	DataItems []windowItem `json:"dataItems"`
}

type windowItem struct {
	Data   map[string]float64 `json:"data"`
	Unit   string             `json:"unit"`
	Labels map[string]string  `json:"labels"`
}

func seriesKey(metric, label, value string) string {
	return metric + "{" + label + "=" + value + "}"
}

// gatherWindowed returns the windowed histograms now, each label value's
// series summed (all series of a metric without a label), and the
// apiserver's writes to pods so far.
func gatherWindowed() (*windowSnapshot, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil, fmt.Errorf("window: gathering metrics: %w", err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	out := &windowSnapshot{histograms: map[string]*dto.Histogram{}, batch: map[string]float64{}}
	for _, m := range windowed {
		f := byName[m.metric]
		if f == nil {
			continue
		}
		for _, metric := range f.GetMetric() {
			value := ""
			if m.label != "" {
				value = labelValue(metric, m.label)
			}
			k := seriesKey(m.metric, m.label, value)
			sum, err := add(out.histograms[k], metric.GetHistogram())
			if err != nil {
				return nil, fmt.Errorf("window: %s: %w", k, err)
			}
			out.histograms[k] = sum
		}
	}
	if f := byName[compare.MetricBatchAttempts]; f != nil {
		for _, metric := range f.GetMetric() {
			out.batch[labelValue(metric, "result")] += metric.GetCounter().GetValue()
		}
	}
	if f := byName["apiserver_request_total"]; f != nil {
		for _, metric := range f.GetMetric() {
			if podWriteVerbs.Has(labelValue(metric, "verb")) && labelValue(metric, "resource") == "pods" {
				out.podWrites += metric.GetCounter().GetValue() // failed ones too
			}
		}
	}
	return out, nil
}

// labelValue returns the value of metric's label name, "" if it has none.
func labelValue(metric *dto.Metric, name string) string {
	for _, l := range metric.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// add returns a + b, histograms of the same buckets; a may be nil.
func add(a, b *dto.Histogram) (*dto.Histogram, error) {
	if b == nil {
		return a, nil
	}
	if a == nil {
		a = &dto.Histogram{SampleCount: ptr.To[uint64](0), SampleSum: ptr.To(0.0)}
		for _, bk := range b.GetBucket() {
			a.Bucket = append(a.Bucket, &dto.Bucket{UpperBound: ptr.To(bk.GetUpperBound()), CumulativeCount: ptr.To[uint64](0)})
		}
	}
	if len(a.Bucket) != len(b.Bucket) {
		return nil, fmt.Errorf("series with %d and %d buckets", len(a.Bucket), len(b.Bucket))
	}
	*a.SampleCount += b.GetSampleCount()
	*a.SampleSum += b.GetSampleSum()
	for i, bk := range b.GetBucket() {
		*a.Bucket[i].CumulativeCount += bk.GetCumulativeCount()
	}
	return a, nil
}

// subtract returns end - start, nil if nothing was observed in between;
// start may be nil (nothing observed before). A histogram that shrank (the
// registry was reset in between, as scheduler_perf does after a workload)
// or changed buckets is an error.
func subtract(end, start *dto.Histogram) (*dto.Histogram, error) {
	if end == nil {
		return nil, nil
	}
	out := &dto.Histogram{SampleCount: ptr.To(end.GetSampleCount()), SampleSum: ptr.To(end.GetSampleSum())}
	for _, bk := range end.GetBucket() {
		out.Bucket = append(out.Bucket, &dto.Bucket{UpperBound: ptr.To(bk.GetUpperBound()), CumulativeCount: ptr.To(bk.GetCumulativeCount())})
	}
	if start != nil {
		if len(start.Bucket) != len(out.Bucket) {
			return nil, fmt.Errorf("buckets changed from %d to %d", len(start.Bucket), len(out.Bucket))
		}
		if start.GetSampleCount() > end.GetSampleCount() {
			return nil, fmt.Errorf("%d samples at the start, %d at the end: the metrics were reset in between", start.GetSampleCount(), end.GetSampleCount())
		}
		*out.SampleCount -= start.GetSampleCount()
		*out.SampleSum -= start.GetSampleSum()
		for i, bk := range start.GetBucket() {
			if bk.GetCumulativeCount() > out.Bucket[i].GetCumulativeCount() {
				return nil, fmt.Errorf("bucket le=%v shrank", bk.GetUpperBound())
			}
			*out.Bucket[i].CumulativeCount -= bk.GetCumulativeCount()
		}
	}
	if out.GetSampleCount() == 0 {
		return nil, nil
	}
	return out, nil
}

// quantiles are the data of one item, in milliseconds, as scheduler_perf
// writes them.
func quantiles(h *dto.Histogram) map[string]float64 {
	th := &testutil.Histogram{Histogram: h}
	ms := func(s float64) float64 {
		if math.IsInf(s, 0) || math.IsNaN(s) {
			return 0
		}
		return s * 1000
	}
	return map[string]float64{
		"Perc50":  ms(th.Quantile(0.50)),
		"Perc90":  ms(th.Quantile(0.90)),
		"Perc95":  ms(th.Quantile(0.95)),
		"Perc99":  ms(th.Quantile(0.99)),
		"Average": ms(th.Average()),
		"Count":   float64(h.GetSampleCount()),
	}
}
