package report

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tandem-scheduler/tandem/harness/sim/arc"
	"github.com/tandem-scheduler/tandem/harness/sim/invariant"
)

func TestCause(t *testing.T) {
	for reason, want := range map[string]string{
		"OutOfcpu":                  CauseCapacity,
		"OutOfmemory":               CauseCapacity,
		"OutOfpods":                 CauseCapacity,
		"NodePorts":                 CauseHostPort,
		arc.ReasonPrepareJobTimeout: CausePendingTimeout,
		arc.ReasonStepTimeout:       CausePendingTimeout,
		arc.ReasonRunnerFailed:      CauseOther,
		arc.ReasonHookError:         CauseOther,
	} {
		if got := Cause(reason); got != want {
			t.Errorf("Cause(%q) = %q, want %q", reason, got, want)
		}
	}
}

func TestNewRunCausesAndUnusedRoom(t *testing.T) {
	sec := func(s int) time.Duration { return time.Duration(s) * time.Second }
	job := func(id int) arc.Job { return arc.Job{ID: id, Arrival: 0, Duration: sec(100)} }
	results := []arc.Result{
		{Job: job(1), Succeeded: true, Ended: sec(100)},
		{Job: job(2), Reason: "OutOfcpu", Ended: sec(10)},
		{Job: job(3), Reason: "OutOfcpu", InStep: true, Ended: sec(50)},
		{Job: job(4), Reason: "NodePorts", Ended: sec(10)},
		{Job: job(5), Reason: arc.ReasonStepTimeout, InStep: true, Ended: sec(90)},
		{Job: job(6), Reason: arc.ReasonRunnerFailed, Ended: sec(20)},
	}
	// n1 holds 2 cpu from 0 to 10 s, then 1 cpu of step headroom to 30 s,
	// then nothing: 20 + 20 cpu-s, 20 of them step headroom. n2 holds
	// 500m from 50 s to the end (100 s): 25 cpu-s.
	samples := map[string][]invariant.Sample{
		"n1": {
			{T: 0, ReservedMilli: 2000},
			{T: sec(10), ReservedMilli: 1000, ReservedStepMilli: 1000, UsedMilliCPU: 3000},
			{T: sec(30), UsedMilliCPU: 3000},
		},
		"n2": {{T: 0}, {T: sec(50), ReservedMilli: 500}},
	}
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")}
	run := NewRun("tandem", results, samples, map[string]v1.ResourceList{"n1": alloc, "n2": alloc})

	wantCauses := map[string]int{CauseCapacity: 2, CauseHostPort: 1, CausePendingTimeout: 1, CauseOther: 1}
	if diff := cmp.Diff(wantCauses, run.Jobs.FailedByCause); diff != "" {
		t.Errorf("failed by cause (-want,+got):\n%s", diff)
	}
	if run.Jobs.FailedInSteps != 2 || run.Jobs.Failed != 5 {
		t.Errorf("failed %d, in steps %d; want 5 and 2", run.Jobs.Failed, run.Jobs.FailedInSteps)
	}
	if run.ReservedUnusedCPUSeconds != 65 || run.StepHeadroomUnusedCPUSeconds != 20 {
		t.Errorf("reserved but unused %v cpu-s, of it step headroom %v; want 65 and 20", run.ReservedUnusedCPUSeconds, run.StepHeadroomUnusedCPUSeconds)
	}

	var out bytes.Buffer
	PrintCauses(&out, &Report{Runs: []Run{run}})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[1]), " ") != "tandem 5 2 1 1 1 2 65 20" {
		t.Errorf("PrintCauses wrote:\n%s\nwant a header and the row \"tandem 5 2 1 1 1 2 65 20\"", out.String())
	}
}

// A run with Karpenter: the autoscale table has its row, and the picture
// draws a launched node's lane only while the node existed, under its label.
func TestAutoscaleTableAndPicture(t *testing.T) {
	sec := func(s int) time.Duration { return time.Duration(s) * time.Second }
	results := []arc.Result{{Job: arc.Job{ID: 1, Duration: sec(60)}, Succeeded: true, Started: sec(30), Ended: sec(90)}}
	samples := map[string][]invariant.Sample{
		"static-1":                {{T: 0}},
		"kwok-sim-abcde-long-1-x": {{T: sec(20)}, {T: sec(30), UsedMilliCPU: 1750}, {T: sec(200)}},
	}
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("3900m")}
	run := NewRun("tandem-pods", results, samples, map[string]v1.ResourceList{"static-1": alloc, "kwok-sim-abcde-long-1-x": alloc})
	run.SetAutoscale(&Autoscale{Launched: 1, BySize: map[string]int{"4": 1}, ScaledDown: true, LastRemovedSeconds: 200, NodeSeconds: 380.04, NodeCPUSeconds: 1520},
		map[string]Lifetime{"kwok-sim-abcde-long-1-x": {From: sec(20), To: sec(200), Gone: true, Label: "sim-abcde (4 cpu)"}})
	if got := run.Timeline[0].Node; got != "static-1" {
		t.Errorf("first lane %s, want the scenario's node static-1 before the launched one", got)
	}
	if run.Autoscale.NodeSeconds != 380 {
		t.Errorf("node-seconds = %v, want 380 (rounded)", run.Autoscale.NodeSeconds)
	}
	var out bytes.Buffer
	PrintAutoscale(&out, &Report{Runs: []Run{run}})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[1]), " ") != "tandem-pods 0 - 30/30 1 4=1 0 200 380 1520 40.0" {
		t.Errorf("PrintAutoscale wrote:\n%s\nwant a header, the run's row and the note on other schedulers", out.String())
	}
	out.Reset()
	PrintAutoscale(&out, &Report{Runs: []Run{{Scheduler: "default"}}})
	if out.Len() != 0 {
		t.Errorf("PrintAutoscale without autoscaling wrote %q, want nothing", out.String())
	}

	path := t.TempDir() + "/report.svg"
	if err := WriteSVG(path, &Report{Scenario: "autoscale", Runs: []Run{run}}); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sim-abcde (4 cpu)", "kwok-sim-abcde-long-1-x: 20s to 200s", "1 nodes launched, 380 node-s", ">static-1<"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the picture has no %q", want)
		}
	}
}

// Jobs per hour are set against the ideal bound for every run and against
// the workaround's run when there is one, and the table prints both.
func TestSetRatios(t *testing.T) {
	r := &Report{Ideal: Ideal{JobsPerHour: 2000}, Runs: []Run{
		{Scheduler: "default", JobsPerHour: 500},
		{Scheduler: "anti-affinity/LeastAllocated", JobsPerHour: 800},
		{Scheduler: "tandem/MostAllocated", JobsPerHour: 1950},
	}}
	r.SetRatios()
	for i, want := range []struct{ ofIdeal, vs float64 }{{0.25, 0.625}, {0.4, 1}, {0.975, 2.438}} {
		if got := r.Runs[i]; got.JobsPerHourOfIdeal != want.ofIdeal || got.JobsPerHourVsAntiAffinity != want.vs {
			t.Errorf("%s: of ideal %v, vs anti-affinity %v; want %v, %v", got.Scheduler, got.JobsPerHourOfIdeal, got.JobsPerHourVsAntiAffinity, want.ofIdeal, want.vs)
		}
	}
	var out bytes.Buffer
	PrintTable(&out, r)
	lines := strings.Split(out.String(), "\n")
	if !strings.Contains(lines[0], "OF IDEAL") || !strings.Contains(lines[0], "VS ANTI-AFFINITY") || !strings.HasSuffix(strings.Join(strings.Fields(lines[3]), " "), "98% held 0 0.0 2.44x") {
		t.Errorf("PrintTable wrote:\n%s\nwant OF IDEAL and VS ANTI-AFFINITY columns, tandem's row ending 98%% held 0 0.0 2.44x", out.String())
	}

	// Without a workaround run: no comparison, no column.
	r = &Report{Ideal: Ideal{JobsPerHour: 100}, Runs: []Run{{Scheduler: "tandem", JobsPerHour: 50}}}
	r.SetRatios()
	out.Reset()
	PrintTable(&out, r)
	if r.Runs[0].JobsPerHourVsAntiAffinity != 0 || strings.Contains(out.String(), "ANTI-AFFINITY") || r.Runs[0].JobsPerHourOfIdeal != 0.5 {
		t.Errorf("without a workaround run: %+v\n%s", r.Runs[0], out.String())
	}
}

// Runs on real kubelets get a table of what the kubelets rejected and the
// placeholders they ran; runs on emulated nodes none.
func TestRealNodesTable(t *testing.T) {
	var out bytes.Buffer
	PrintRealNodes(&out, &Report{Runs: []Run{
		{Scheduler: "default", RealNodes: &RealNodes{PodsRejected: map[string]int{"OutOfcpu": 2, "OutOfmemory": 1}}},
		{Scheduler: "tandem-pods", RealNodes: &RealNodes{PodsRejected: map[string]int{}, Placeholders: 20, PlaceholdersRan: 18}},
	}})
	var rows []string
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows = append(rows, strings.Join(f, " "))
		}
	}
	want := []string{
		"SCHEDULER PODS REJECTED BY THE KUBELETS BY REASON PLACEHOLDERS OF THEM RAN",
		"default 3 OutOfcpu=2,OutOfmemory=1 0 0",
		"tandem-pods 0 - 20 18",
	}
	if !slices.Equal(rows, want) {
		t.Errorf("PrintRealNodes wrote:\n%s\nwant the rows %q", out.String(), want)
	}
	out.Reset()
	PrintRealNodes(&out, &Report{Runs: []Run{{Scheduler: "default"}}})
	if out.Len() != 0 {
		t.Errorf("PrintRealNodes without real nodes wrote %q, want nothing", out.String())
	}
}
