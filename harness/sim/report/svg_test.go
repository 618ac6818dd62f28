package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tandem-scheduler/tandem/harness/sim/arc"
	"github.com/tandem-scheduler/tandem/harness/sim/invariant"
)

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Two nodes with known step functions: n1 (4 cpu) is there throughout,
// n2 (8 cpu) came at 20 s and went at 40 s: its samples count from 20 s
// (the one of 15 s too, from then on) to 40 s.
func twoNodes() []NodeTimeline {
	return []NodeTimeline{
		{Node: "n1", AllocatableMilliCPU: 4000, Samples: []invariant.Sample{
			{T: 0},
			{T: sec(10), UsedMilliCPU: 1000, ReservedMilli: 2000},
			{T: sec(30), UsedMilliCPU: 3000},
			{T: sec(60)},
		}},
		{Node: "n2", AllocatableMilliCPU: 8000, Lifetime: &Lifetime{From: sec(20), To: sec(40), Gone: true}, Samples: []invariant.Sample{
			{T: sec(15), UsedMilliCPU: 500},
			{T: sec(25), UsedMilliCPU: 4000, ReservedMilli: 1000},
			{T: sec(35), UsedMilliCPU: 2000, ReservedMilli: 2000},
			{T: sec(50)},
		}},
	}
}

// stepAt returns the step holding at t.
func stepAt(steps []cpuStep, t time.Duration) cpuStep {
	i := sort.Search(len(steps), func(i int) bool { return steps[i].T > t })
	if i == 0 {
		return cpuStep{T: t}
	}
	return steps[i-1]
}

func TestCPUSeries(t *testing.T) {
	steps := cpuSeries(twoNodes())
	for _, tc := range []struct {
		at                  float64
		used, reserved      float64 // shares of the allocatable
		allocatableMilliCPU int64
	}{
		{at: 5, used: 0, reserved: 0, allocatableMilliCPU: 4000},
		{at: 15, used: 0.25, reserved: 0.5, allocatableMilliCPU: 4000},
		// n2 came, with its sample of 15 s.
		{at: 22, used: 1500.0 / 12000, reserved: 2000.0 / 12000, allocatableMilliCPU: 12000},
		{at: 27, used: 5000.0 / 12000, reserved: 3000.0 / 12000, allocatableMilliCPU: 12000},
		{at: 32, used: 7000.0 / 12000, reserved: 1000.0 / 12000, allocatableMilliCPU: 12000},
		{at: 37, used: 5000.0 / 12000, reserved: 2000.0 / 12000, allocatableMilliCPU: 12000},
		// n2 went at 40 s, whatever its samples say until 50 s.
		{at: 45, used: 0.75, reserved: 0, allocatableMilliCPU: 4000},
		{at: 70, used: 0, reserved: 0, allocatableMilliCPU: 4000},
	} {
		s := stepAt(steps, sec(tc.at))
		if s.Allocatable != tc.allocatableMilliCPU {
			t.Errorf("at %vs: allocatable %dm, want %dm", tc.at, s.Allocatable, tc.allocatableMilliCPU)
			continue
		}
		used, reserved := float64(s.Used)/float64(s.Allocatable), float64(s.Reserved)/float64(s.Allocatable)
		if !near(used, tc.used) || !near(reserved, tc.reserved) {
			t.Errorf("at %vs: used %.4f, reserved %.4f of the cluster; want %.4f and %.4f", tc.at, used, reserved, tc.used, tc.reserved)
		}
	}
	// A step where anything changed (0, 10, 20, 25, 30, 35, 40, 60 s) and
	// nowhere else.
	var at []float64
	for _, s := range steps {
		at = append(at, s.T.Seconds())
	}
	if want := []float64{0, 10, 20, 25, 30, 35, 40, 60}; fmt.Sprint(at) != fmt.Sprint(want) {
		t.Errorf("steps at %v s, want %v", at, want)
	}
}

func TestColumns(t *testing.T) {
	cols := columns(cpuSeries(twoNodes()), sec(80), 8)
	// [20 s, 30 s): n1 1000m used + 2000m reserved throughout; n2 (8 cpu)
	// there throughout, 500m used to 25 s, 4000m + 1000m from then on.
	want := cpuColumn{Used: 1000*10 + 500*5 + 4000*5, Reserved: 2000*10 + 1000*5, Allocatable: 12000 * 10}
	if got := cols[2]; !near(got.Used, want.Used) || !near(got.Reserved, want.Reserved) || !near(got.Allocatable, want.Allocatable) {
		t.Errorf("column [20s, 30s) = %+v, want %+v", got, want)
	}
	// [70 s, 80 s): n1 alone, empty.
	if got := cols[7]; got.Used != 0 || got.Reserved != 0 || !near(got.Allocatable, 4000*10) {
		t.Errorf("column [70s, 80s) = %+v, want nothing held of 4 cpu", got)
	}
}

func TestHeatColor(t *testing.T) {
	for _, tc := range []struct {
		col  cpuColumn
		want string
	}{
		{col: cpuColumn{Allocatable: 100}, want: ""},
		{col: cpuColumn{Used: 10}, want: ""},
		{col: cpuColumn{Used: 100, Allocatable: 100}, want: colorUsed},
		{col: cpuColumn{Used: 10, Allocatable: 100}, want: heatPalette[0][0]},
		{col: cpuColumn{Used: 30, Reserved: 20, Allocatable: 100}, want: heatPalette[1][2]},
		{col: cpuColumn{Used: 10, Reserved: 60, Allocatable: 100}, want: heatPalette[2][3]},
		{col: cpuColumn{Reserved: 150, Allocatable: 100}, want: colorResv},
	} {
		if got := heatColor(tc.col); got != tc.want {
			t.Errorf("heatColor(%+v) = %q, want %q", tc.col, got, tc.want)
		}
	}
	if got := shade("#3b7dd8", 0.5); got != "#9dbeec" {
		t.Errorf(`shade("#3b7dd8", 0.5) = %s, want #9dbeec`, got)
	}
}

// A 100-node picture of four runs, one of them autoscaled: each run is a
// cluster view and a heatmap of bounded height, the file stays small.
func TestLargePicture(t *testing.T) {
	var runs []Run
	failures := 0
	for i, s := range []string{"default", "tandem", "tandem-pods", "tandem-auto"} {
		launched := 0
		if i == 3 {
			launched = 20
		}
		run := syntheticRun(s, 100, launched, 2000, int64(i))
		failures += len(run.Failures)
		runs = append(runs, run)
	}
	svg := writeSVG(t, &Report{Scenario: "large", Runs: runs})
	t.Logf("100 nodes x 4 runs: %d bytes, %d px high", len(svg), svgHeight(t, svg))
	if len(svg) > 1<<20 {
		t.Errorf("the picture is %d bytes, want at most 1 MiB", len(svg))
	}
	if h := svgHeight(t, svg); h > 4*600+200 {
		t.Errorf("the picture is %d px high, want at most 600 a run and 200 for the title", h)
	}
	for _, want := range []string{`class="cluster"`, `class="heatmap"`} {
		if n := bytes.Count(svg, []byte(want)); n != 4 {
			t.Errorf("%d elements %s, want one a run (4)", n, want)
		}
	}
	if bytes.Contains(svg, []byte(`height="34"`)) {
		t.Errorf("the large picture has lanes")
	}
	if n := bytes.Count(svg, []byte("<title>job ")); n != failures {
		t.Errorf("%d failed-job ticks, want %d", n, failures)
	}
	// Every tenth row labelled, in the order of the nodes' numbers; the
	// autoscaled run's 80 static nodes before the launched ones.
	for _, want := range []string{"1600 cpu", ">1280-", "sim-node-99 (16 cpu) sim-node-99: "} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the picture has no %q", want)
		}
	}
	label := func(node string) []byte { return []byte(`font-size="8" font-weight="normal">` + node + "<") }
	for _, want := range []string{"sim-node-0", "sim-node-10", "sim-node-70", "sim-node-90"} {
		if !bytes.Contains(svg, label(want)) {
			t.Errorf("no row labelled %s", want)
		}
	}
	if bytes.Contains(svg, label("sim-node-18")) {
		t.Errorf("the heatmap's rows are in the order of the names' characters, want their numbers'")
	}
	if os.Getenv("REPORT_SVG") != "" {
		if err := os.WriteFile(os.Getenv("REPORT_SVG"), svg, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Rows get thinner as nodes come: 300 nodes draw as high as 100.
	one := svgHeight(t, writeSVG(t, &Report{Runs: []Run{syntheticRun("default", 100, 0, 500, 1)}}))
	if h := svgHeight(t, writeSVG(t, &Report{Runs: []Run{syntheticRun("default", 300, 0, 500, 1)}})); h > one {
		t.Errorf("a run of 300 nodes is %d px high, one of 100 %d px; want no higher", h, one)
	}
}

// The heatmap's cells on a case worked by hand: 17 nodes (one more than
// lanes), n0 full of admitted requests throughout, n1 full, three quarters
// of it reserved, for the first half, a job failed on n1 at 50 s.
func TestHeatmapCells(t *testing.T) {
	var nodes []NodeTimeline
	for i := range maxLanes + 1 {
		nodes = append(nodes, NodeTimeline{Node: fmt.Sprintf("n%d", i), AllocatableMilliCPU: 16000, Samples: []invariant.Sample{{T: 0}}})
	}
	nodes[0].Samples = []invariant.Sample{{T: 0, UsedMilliCPU: 16000}}
	nodes[1].Samples = []invariant.Sample{{T: 0, UsedMilliCPU: 4000, ReservedMilli: 12000}, {T: sec(50)}}
	run := Run{Scheduler: "tandem", MakespanSeconds: 100, Timeline: nodes, Failures: []Failure{{Job: 7, Node: "n1", AtSeconds: 50, Reason: "OutOfcpu"}}}
	svg := string(writeSVG(t, &Report{Runs: []Run{run}}))

	rowH := rowHeight(len(nodes))
	top := pictureHeader + legendHeight + panelHeader + failStrip + 4 + clusterHeight + 10
	row := func(i int) string { return num(float64(top+i*rowH) + float64(rowH)/2) }
	for _, want := range []string{
		// n0: one stroke over the whole width, darkest blue.
		fmt.Sprintf(`<path stroke=%q d="M%d %sh%d"/>`, colorUsed, marginLeft, row(0), svgWidth-marginLeft-marginRight),
		// n1: over the first half, darkest orange.
		fmt.Sprintf(`<path stroke=%q d="M%d %sh%d"/>`, colorResv, marginLeft, row(1), (svgWidth-marginLeft-marginRight)/2),
		fmt.Sprintf(`d="M%d %dv%d"`, marginLeft+(svgWidth-marginLeft-marginRight)/2, top+rowH-1, rowH+2),
		"<title>job 7 on n1 at 50s: OutOfcpu</title>",
		">272 cpu<",
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("the picture has no %s", want)
		}
	}
	if n := strings.Count(svg, "<path stroke="); n != 3 {
		t.Errorf("%d paths, want 3 (n0's cells, n1's, the failure mark):\n%s", n, svg)
	}
}

// Up to maxLanes nodes a run keeps its lane per node, and the picture no
// key for large runs.
func TestSmallPictureKeepsLanes(t *testing.T) {
	for _, nodes := range []int{3, maxLanes} {
		run := syntheticRun("tandem", nodes, 0, 40, 1)
		svg := writeSVG(t, &Report{Scenario: "seed", Runs: []Run{run, run}})
		if n := bytes.Count(svg, []byte(`height="34" fill="#f4f4f4"`)); n != 2*nodes {
			t.Errorf("%d nodes: %d lanes, want %d", nodes, n, 2*nodes)
		}
		for _, unwanted := range []string{`class="heatmap"`, `class="cluster"`, "A run of more than"} {
			if bytes.Contains(svg, []byte(unwanted)) {
				t.Errorf("%d nodes: the picture has %s", nodes, unwanted)
			}
		}
		if want := fmt.Sprintf(">sim-node-%d<", nodes-1); !bytes.Contains(svg, []byte(want)) {
			t.Errorf("%d nodes: no lane labelled %s", nodes, want)
		}
	}
}

func TestNaturalLess(t *testing.T) {
	sorted := []string{"a", "n-2", "n-02x", "n-10", "n-10a", "n-100", "node"}
	for i := range sorted {
		for j := range sorted {
			if got := naturalLess(sorted[i], sorted[j]); got != (i < j) {
				t.Errorf("naturalLess(%q, %q) = %v, want %v", sorted[i], sorted[j], got, i < j)
			}
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// writeSVG draws r and returns the file, checked to be well-formed XML.
func writeSVG(t *testing.T, r *Report) []byte {
	t.Helper()
	path := t.TempDir() + "/report.svg"
	if err := WriteSVG(path, r); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		if _, err := d.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("the picture is no well-formed XML: %v", err)
		}
	}
	return svg
}

var svgHeightRE = regexp.MustCompile(`<svg [^>]*height="(\d+)"`)

func svgHeight(t *testing.T, svg []byte) int {
	t.Helper()
	m := svgHeightRE.FindSubmatch(svg)
	if m == nil {
		t.Fatalf("no height in %.200s", svg)
	}
	h, _ := strconv.Atoi(string(m[1]))
	return h
}

// syntheticRun makes a run of jobs on nodes of 16 cpu named sim-node-<i>,
// the last launched of them came and went during the run. Each job's
// runner admits 500m on a node and reserves 3 cpu for its workflow pod,
// which comes 5-40 s later and runs for 2-15 min; every tenth job fails
// when its workflow pod comes. Jobs favour the first nodes, as a packing
// scheduler does. Each node's change points fall at times of its own.
func syntheticRun(scheduler string, nodes, launched, jobs int, seed int64) Run {
	rng := rand.New(rand.NewSource(seed))
	name := func(i int) string { return fmt.Sprintf("sim-node-%d", i) }
	changes := map[string][]invariant.Sample{} // deltas
	var results []arc.Result
	for id := range jobs {
		arrival := time.Duration(id)*4*time.Second + time.Duration(rng.Int63n(int64(4*time.Second)))
		node := name(int(float64(nodes) * rng.Float64() * rng.Float64()))
		claim := arrival + 5*time.Second + time.Duration(rng.Int63n(int64(35*time.Second)))
		end := claim + 2*time.Minute + time.Duration(rng.Int63n(int64(13*time.Minute)))
		res := arc.Result{Job: arc.Job{ID: id, Arrival: arrival, Duration: end - claim}, Node: node, Started: claim, Ended: end, Succeeded: true}
		changes[node] = append(changes[node], invariant.Sample{T: arrival, UsedMilliCPU: 500, ReservedMilli: 3000})
		if id%10 == 0 {
			res.Succeeded, res.Reason, res.Started, res.Ended = false, "OutOfcpu", -1, claim
			changes[node] = append(changes[node], invariant.Sample{T: claim, UsedMilliCPU: -500, ReservedMilli: -3000})
		} else {
			changes[node] = append(changes[node], invariant.Sample{T: claim, UsedMilliCPU: 3000, ReservedMilli: -3000},
				invariant.Sample{T: end, UsedMilliCPU: -3500})
		}
		results = append(results, res)
	}
	samples := map[string][]invariant.Sample{}
	allocatable := map[string]v1.ResourceList{}
	lifetimes := map[string]Lifetime{}
	for i := range nodes {
		n := name(i)
		allocatable[n] = v1.ResourceList{v1.ResourceCPU: resource.MustParse("16")}
		samples[n] = accumulate(changes[n])
		if i >= nodes-launched {
			// Launched 10 s before its first runner came, removed a
			// minute after its last pod went.
			s := samples[n]
			lifetimes[n] = Lifetime{From: max(0, s[0].T-10*time.Second), To: s[len(s)-1].T + time.Minute, Gone: true, Label: n + " (16 cpu)"}
		}
	}
	run := NewRun(scheduler, results, samples, allocatable)
	if launched > 0 {
		run.SetAutoscale(&Autoscale{Launched: launched}, lifetimes)
	}
	return run
}

// accumulate turns changes (deltas) into samples: the sums from each
// change's time on.
func accumulate(changes []invariant.Sample) []invariant.Sample {
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].T < changes[j].T })
	out := []invariant.Sample{{}}
	if len(changes) > 0 {
		out[0].T = changes[0].T
	}
	for _, c := range changes {
		last := out[len(out)-1]
		if c.T > last.T {
			out = append(out, last)
			out[len(out)-1].T = c.T
		}
		out[len(out)-1].UsedMilliCPU += c.UsedMilliCPU
		out[len(out)-1].ReservedMilli += c.ReservedMilli
	}
	return out
}
