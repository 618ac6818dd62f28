package bench

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/test/bench/compare"
)

func histogram(count uint64, sum float64, cumulative ...uint64) *dto.Histogram {
	h := &dto.Histogram{SampleCount: ptr.To(count), SampleSum: ptr.To(sum)}
	bounds := []float64{0.1, 1, 10}
	for i, c := range cumulative {
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptr.To(bounds[i]), CumulativeCount: ptr.To(c)})
	}
	return h
}

// The window is what was observed between the two snapshots: 100 fast
// attempts before it, 10 slow ones in it.
func TestWindowSubtractsTheWarmUp(t *testing.T) {
	before := histogram(100, 5, 100, 100, 100)
	sum, err := add(nil, before)
	if err != nil {
		t.Fatal(err)
	}
	end, err := add(histogram(100, 5, 100, 100, 100), histogram(10, 50, 0, 0, 10))
	if err != nil {
		t.Fatal(err)
	}
	d, err := subtract(end, sum)
	if err != nil {
		t.Fatal(err)
	}
	if d.GetSampleCount() != 10 || d.GetSampleSum() != 50 {
		t.Fatalf("window holds %d samples summing to %v, want 10 and 50", d.GetSampleCount(), d.GetSampleSum())
	}
	q := quantiles(d)
	// All ten in the (1 s, 10 s] bucket: p50 interpolates to 5.5 s.
	if q["Perc50"] != 5500 || q["Average"] != 5000 || q["Count"] != 10 {
		t.Errorf("quantiles %v, want Perc50 5500 ms, Average 5000 ms, Count 10", q)
	}
	if d, err := subtract(before, before); d != nil || err != nil {
		t.Errorf("a window that observed nothing: %v, %v; want no data, no error", d, err)
	}
	if _, err := subtract(histogram(5, 1, 5, 5, 5), before); err == nil {
		t.Error("a histogram that shrank (a reset registry) was subtracted")
	}
	if _, err := subtract(histogram(200, 9, 200, 200), before); err == nil {
		t.Error("histograms of different buckets were subtracted")
	}
	if _, err := add(before, histogram(1, 1, 1)); err == nil {
		t.Error("series of different buckets were summed")
	}
}

// write names the file and the items as test/bench/compare reads them.
func TestWindowWrite(t *testing.T) {
	dir := t.TempDir()
	w := &Window{name: "BenchmarkPerfScheduling/ChurnTandem/500Nodes_2000Pairs_4Rounds", dir: dir,
		start: &windowSnapshot{histograms: map[string]*dto.Histogram{}, batch: map[string]float64{"hint_used": 10, "no_hint": 5}}}
	k := seriesKey("scheduler_scheduling_attempt_duration_seconds", "result", "scheduled")
	end := &windowSnapshot{histograms: map[string]*dto.Histogram{k: histogram(4, 2, 0, 4, 4)}, batch: map[string]float64{"hint_used": 13, "no_hint": 6}}
	if err := w.write(end); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "window-ChurnTandem_500Nodes_2000Pairs_4Rounds.json"))
	if err != nil {
		t.Fatal(err)
	}
	var items windowItems
	if err := json.Unmarshal(data, &items); err != nil {
		t.Fatal(err)
	}
	if len(items.DataItems) != 2 {
		t.Fatalf("items %+v, want the attempts' latency and the batch's attempts", items.DataItems)
	}
	it := items.DataItems[0]
	if it.Labels["Name"] != "BenchmarkPerfScheduling/ChurnTandem/500Nodes_2000Pairs_4Rounds/window" || it.Labels["result"] != "scheduled" || it.Data["Count"] != 4 {
		t.Errorf("item %+v", it)
	}
	// The batch's attempts in the window: 3 took the hinted node, 1 had none.
	if it := items.DataItems[1]; it.Labels["Metric"] != compare.MetricBatchAttempts || it.Data["HintUsed"] != 3 || it.Data["NoHint"] != 1 || it.Data["HintNotUsed"] != 0 {
		t.Errorf("batch item %+v, want 3 hints used, 1 attempt without", it)
	}
}

// A window that observed nothing is an error, not an empty file.
func TestWindowWriteNothing(t *testing.T) {
	w := &Window{name: "BenchmarkPerfScheduling/ChurnTandem/500Nodes", dir: t.TempDir(), start: &windowSnapshot{histograms: map[string]*dto.Histogram{}}}
	if err := w.write(&windowSnapshot{histograms: map[string]*dto.Histogram{}}); err == nil {
		t.Error("an empty window was written")
	}
}

// The apiserver's writes to pods in the window, per pod bound in it: 30
// writes before the window, 120 more during it, in which the SLI
// histogram counted 40 pods bound.
func TestWindowPodWrites(t *testing.T) {
	dir := t.TempDir()
	sli := seriesKey(metricSLI, "", "")
	w := &Window{name: "BenchmarkPerfScheduling/RunnersPodsModeTandem/500Nodes_2000Runners", dir: dir,
		start: &windowSnapshot{histograms: map[string]*dto.Histogram{sli: histogram(10, 1, 10, 10, 10)}, podWrites: 30}}
	if err := w.write(&windowSnapshot{histograms: map[string]*dto.Histogram{sli: histogram(50, 9, 50, 50, 50)}, podWrites: 150}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "window-RunnersPodsModeTandem_500Nodes_2000Runners.json"))
	if err != nil {
		t.Fatal(err)
	}
	var items windowItems
	if err := json.Unmarshal(data, &items); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, it := range items.DataItems {
		if it.Labels["Metric"] != compare.MetricPodWrites {
			continue
		}
		found = true
		if it.Data["Total"] != 120 || it.Data["PerPod"] != 3 {
			t.Errorf("pod writes %v, want Total 120, PerPod 3", it.Data)
		}
	}
	if !found {
		t.Errorf("no %s item in %+v", compare.MetricPodWrites, items.DataItems)
	}
}

// Time to placeholder, reservationMode Pods: of the runners first seen
// bound in the window, how long after each its placeholder was seen (none
// before it: a placeholder created before the Binding counts zero), and
// how many had none by the window's end. A window without placeholders
// (Memory mode) writes no such item.
func TestWindowTimeToPlaceholder(t *testing.T) {
	start := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	w := &Window{boundAt: map[types.UID]time.Time{}, placedAt: map[types.UID]time.Time{}, startAt: start, stopAt: start.Add(time.Minute)}
	if _, ok := w.timeToPlaceholder(); ok {
		t.Error("a window without placeholders wrote a time to placeholder")
	}
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	w.boundAt["before"], w.placedAt["before"] = at(-500), at(-400) // bound before the window: not counted
	w.boundAt["early"], w.placedAt["early"] = at(1000), at(900)    // placeholder first: 0
	w.boundAt["a"], w.placedAt["a"] = at(2000), at(2100)
	w.boundAt["b"], w.placedAt["b"] = at(3000), at(3300)
	w.boundAt["none"] = at(4000)                                // never got one
	w.boundAt["late"], w.placedAt["late"] = at(5000), at(70000) // after the window: missing
	item, ok := w.timeToPlaceholder()
	if !ok {
		t.Fatal("no time to placeholder")
	}
	want := map[string]float64{"Perc50": 100, "Perc99": 300, "Max": 300, "Count": 3, "Missing": 2}
	for k, v := range want {
		if math.Abs(item.Data[k]-v) > 1e-6 {
			t.Errorf("%s = %v, want %v (all: %v)", k, item.Data[k], v, item.Data)
		}
	}
}
