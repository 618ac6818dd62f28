package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	dto "github.com/prometheus/client_model/go"
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
		start: &windowSnapshot{histograms: map[string]*dto.Histogram{}}}
	k := seriesKey("scheduler_scheduling_attempt_duration_seconds", "result", "scheduled")
	if err := w.write(&windowSnapshot{histograms: map[string]*dto.Histogram{k: histogram(4, 2, 0, 4, 4)}}); err != nil {
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
	if len(items.DataItems) != 1 {
		t.Fatalf("items %+v, want one", items.DataItems)
	}
	it := items.DataItems[0]
	if it.Labels["Name"] != "BenchmarkPerfScheduling/ChurnTandem/500Nodes_2000Pairs_4Rounds/window" || it.Labels["result"] != "scheduled" || it.Data["Count"] != 4 {
		t.Errorf("item %+v", it)
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
