package scenario

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tandem-scheduler/tandem/harness/sim/arc"
)

func TestSeedScenario(t *testing.T) {
	s, err := Load("../../../test/scenarios/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	jobs := s.Stream(0)
	if len(jobs) != 36 {
		t.Fatalf("seed scenario has %d jobs, want 36", len(jobs))
	}
	again := s.Stream(0)
	if diff := cmp.Diff(jobs, again); diff != "" {
		t.Errorf("the same seed gave another stream (-first,+second):\n%s", diff)
	}
	for i, j := range jobs {
		if j.ID != i+1 || j.ScaleSet != "arc-runners" || j.Duration < time.Minute || j.Duration > 3*time.Minute || (i > 0 && j.At < jobs[i-1].At) {
			t.Errorf("job %d = %+v: want IDs in arrival order, the first set, 60-180s", i, j)
		}
	}
	if other := s.Stream(2); cmp.Equal(jobs, other) {
		t.Errorf("seed 2 gave the same stream as seed 1")
	}
}

// test/scenarios/autoscale.yaml: Karpenter's NodePool as written, the
// defaults elsewhere; an autoscaled scenario may start without nodes.
func TestAutoscaleScenario(t *testing.T) {
	s, err := Load("../../../test/scenarios/autoscale.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a := s.Autoscale
	if a == nil {
		t.Fatal("no autoscale section")
	}
	if diff := cmp.Diff([]int{4, 8, 16}, a.CPUs()); diff != "" {
		t.Errorf("instance cpus (-want,+got):\n%s", diff)
	}
	if a.Registration() != time.Minute || a.Consolidation() != time.Minute || a.Policy() != "WhenEmpty" || a.MemoryPerCPU() != 2<<30 {
		t.Errorf("autoscale = %+v: want 60s boot, consolidate after 60s when empty, family c", a)
	}
	defaults := &Autoscale{}
	if diff := cmp.Diff(DefaultInstanceCPUs, defaults.CPUs()); diff != "" || defaults.ScaleDownWait() != DefaultScaleDownTimeout {
		t.Errorf("defaults: cpus %v, scale-down wait %v", defaults.CPUs(), defaults.ScaleDownWait())
	}
	if _, err := Parse([]byte("name: x\nautoscale: {}\nscaleSets: [{name: s, maxRunners: 1, hookMode: novolume}]\njobs: {list: [{at: 0s, duration: 10s}]}\n")); err != nil {
		t.Errorf("an autoscaled scenario without nodes: %v", err)
	}
}

func TestParseRejects(t *testing.T) {
	valid := `
name: x
nodes: [{name: n, count: 1, capacity: {cpu: "1"}}]
scaleSets: [{name: s, maxRunners: 1, hookMode: novolume}]
jobs: {list: [{at: 0s, duration: 10s}]}
`
	if _, err := Parse([]byte(valid)); err != nil {
		t.Fatalf("valid scenario: %v", err)
	}
	tests := map[string]struct {
		from, to string
		wantErr  string
	}{
		"unknown hook mode":  {from: "hookMode: novolume", to: "hookMode: v0.9", wantErr: `hookMode "v0.9"`},
		"unknown field":      {from: "maxRunners: 1", to: "maxRunners: 1, maxRunner: 2", wantErr: "unknown field"},
		"unknown scale set":  {from: "duration: 10s", to: "duration: 10s, scaleSet: nope", wantErr: `unknown scale set "nope"`},
		"no nodes":           {from: `[{name: n, count: 1, capacity: {cpu: "1"}}]`, to: "[]", wantErr: "no nodes"},
		"bad scoring":        {from: "name: x", to: "name: x\nscoring: Random", wantErr: `scoring "Random"`},
		"min above max":      {from: "maxRunners: 1", to: "maxRunners: 1, minRunners: 2", wantErr: "minRunners"},
		"chaos without runs": {from: "name: x", to: "name: x\nchaos: {runs: []}", wantErr: "chaos: no runs"},
		"chaos: leader kills of one replica": {
			from: "name: x", to: "name: x\nchaos: {runs: [{name: a, leaderElection: true, faults: {leaderKills: 1}}]}",
			wantErr: "leaderKills need leaderElection and 2 replicas",
		},
		"chaos: two replicas without leader election": {
			from: "name: x", to: "name: x\nchaos: {runs: [{name: a, replicas: 2, faults: {kills: 1}}]}",
			wantErr: "several replicas need leaderElection",
		},
		"chaos: unknown fault": {
			from: "name: x", to: "name: x\nchaos: {runs: [{name: a, faults: {meteorites: 1}}]}", wantErr: "unknown field",
		},
		"chaos: duplicate run": {
			from: "name: x", to: "name: x\nchaos: {runs: [{name: a, faults: {}}, {name: a, faults: {}}]}", wantErr: `run "a": want a unique name`,
		},
		"chaos: restart delay": {
			from: "name: x", to: "name: x\nchaos: {restartDelay: {min: 2s, max: 1s}, runs: [{name: a, faults: {}}]}", wantErr: "restartDelay",
		},
		"generator: scaleSets and scaleSet": {
			from: "jobs: {list: [{at: 0s, duration: 10s}]}", to: "jobs: {generate: {count: 2, scaleSet: s, scaleSets: [s], minDuration: 1s, maxDuration: 2s}}",
			wantErr: "not both",
		},
		"steps overlap": {
			from: "duration: 10s}", to: "duration: 10s, steps: [{at: 1s, duration: 3s}, {at: 2s, duration: 1s}]}", wantErr: "starting after the step before ends",
		},
		"steps past the job": {
			from: "duration: 10s}", to: "duration: 10s, steps: [{at: 5s, duration: 6s}]}", wantErr: "after the job's 10s",
		},
		"steps without a job container": {
			from: "duration: 10s}", to: "duration: 10s, container: false, steps: [{at: 1s, duration: 1s}]}", wantErr: "need a job container",
		},
		"generator: mix and scaleSets": {
			from: "jobs: {list: [{at: 0s, duration: 10s}]}", to: "jobs: {generate: {count: 2, scaleSets: [s], mix: [{scaleSet: s}], minDuration: 1s, maxDuration: 2s}}",
			wantErr: "not both",
		},
		"generator: steps longer than the shortest job": {
			from: "jobs: {list: [{at: 0s, duration: 10s}]}", to: "jobs: {generate: {count: 2, mix: [{scaleSet: s, steps: {count: 2, minDuration: 1s, maxDuration: 30s}}], minDuration: 60s, maxDuration: 90s}}",
			wantErr: "do not fit",
		},
		"generator: unknown set in mix": {
			from: "jobs: {list: [{at: 0s, duration: 10s}]}", to: "jobs: {generate: {count: 2, mix: [{scaleSet: t}], minDuration: 1s, maxDuration: 2s}}",
			wantErr: `mix 0: unknown scale set "t"`,
		},
		"autoscale: bad policy": {
			from: "name: x", to: "name: x\nautoscale: {consolidationPolicy: Sometimes}", wantErr: `consolidationPolicy "Sometimes"`,
		},
		"autoscale: bad family": {
			from: "name: x", to: "name: x\nautoscale: {instanceFamily: z}", wantErr: `instanceFamily "z"`,
		},
		"autoscale: a size of 0": {
			from: "name: x", to: "name: x\nautoscale: {instanceCPUs: [4, 0]}", wantErr: "want positive sizes",
		},
		"autoscale: a size above the cpu limit": {
			from: "name: x", to: "name: x\nautoscale: {instanceCPUs: [4, 16], cpuLimit: 8}", wantErr: "above cpuLimit 8",
		},
		"autoscale: unknown autoscaler": {
			from: "name: x", to: "name: x\nautoscale: {autoscaler: Descheduler}", wantErr: `autoscaler "Descheduler"`,
		},
		"autoscale: Cluster Autoscaler threshold above 1": {
			from: "name: x", to: "name: x\nautoscale: {autoscaler: ClusterAutoscaler, clusterAutoscaler: {scaleDownUtilizationThreshold: 1.5}}", wantErr: "within [0, 1]",
		},
		"autoscale: negative delay": {
			from: "name: x", to: "name: x\nautoscale: {registrationDelay: -1s}", wantErr: "must not be negative",
		},
		"generator: unknown set in scaleSets": {
			from: "jobs: {list: [{at: 0s, duration: 10s}]}", to: "jobs: {generate: {count: 2, scaleSets: [s, t], minDuration: 1s, maxDuration: 2s}}",
			wantErr: `unknown scale set "t"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(strings.Replace(valid, tc.from, tc.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestChaosScenario(t *testing.T) {
	s, err := Load("../../../test/scenarios/chaos.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Chaos == nil || len(s.Chaos.Runs) != 2 {
		t.Fatalf("chaos section = %+v, want two runs", s.Chaos)
	}
	want := map[string]Faults{
		"kill":     {Kills: 10, RunnerFailures: 4, NodeDeletions: 2},
		"failover": {LeaderKills: 5, APIServerRestarts: 1, RunnerFailures: 4, NodeDeletions: 2},
	}
	for _, r := range s.Chaos.Runs {
		if diff := cmp.Diff(want[r.Name], r.Faults); diff != "" {
			t.Errorf("run %s faults (-want,+got):\n%s", r.Name, diff)
		}
	}
	jobs := s.Stream(0)
	if len(jobs) < 500 {
		t.Errorf("%d jobs, want at least 500", len(jobs))
	}
	perSet := map[string]int{}
	for _, j := range jobs {
		perSet[j.ScaleSet]++
	}
	for _, set := range []string{"arc-pinned", "arc-kube"} {
		if n := perSet[set]; n < len(jobs)/3 {
			t.Errorf("scale set %s has %d of %d jobs, want the stream spread over both sets", set, n, len(jobs))
		}
	}
}

// Spreading jobs over scale sets changes no arrival or duration.
func TestGeneratorScaleSets(t *testing.T) {
	base := Scenario{ScaleSets: []ScaleSet{{Name: "a"}, {Name: "b"}}, Jobs: Jobs{Generate: &Generator{
		Seed: 3, Count: 50, MeanInterarrival: metav1.Duration{Duration: 10 * time.Second},
		MinDuration: metav1.Duration{Duration: time.Minute}, MaxDuration: metav1.Duration{Duration: 2 * time.Minute},
	}}}
	spread := base
	g := *base.Jobs.Generate
	g.ScaleSets = []string{"a", "b"}
	spread.Jobs.Generate = &g
	one, both := base.Stream(0), spread.Stream(0)
	sets := map[string]int{}
	for i := range one {
		if one[i].At != both[i].At || one[i].Duration != both[i].Duration || one[i].ScaleSet != "a" {
			t.Fatalf("job %d: %+v without scaleSets, %+v with: want the same times, set a without", i, one[i], both[i])
		}
		sets[both[i].ScaleSet]++
	}
	if sets["a"] == 0 || sets["b"] == 0 {
		t.Errorf("jobs per set = %v, want both sets used", sets)
	}
}

// A mix spreads jobs over sets and shapes without changing arrivals or
// durations; each entry's jobs get its services and steps, the steps one
// after another inside the job.
func TestGeneratorMix(t *testing.T) {
	none := 0.0
	all := 1.0
	base := Scenario{ScaleSets: []ScaleSet{{Name: "a"}, {Name: "b"}, {Name: "c"}}, Jobs: Jobs{Generate: &Generator{
		Seed: 3, Count: 200, MeanInterarrival: metav1.Duration{Duration: 10 * time.Second},
		MinDuration: metav1.Duration{Duration: time.Minute}, MaxDuration: metav1.Duration{Duration: 2 * time.Minute},
	}}}
	mixed := base
	g := *base.Jobs.Generate
	redis := []arc.Service{{Image: "redis:7", Ports: []string{"6379:6379"}}}
	g.Mix = []Shape{
		{ScaleSet: "a", Weight: 2, Services: redis, WithoutContainer: &none,
			Steps: &StepGenerator{Count: 2, MinDuration: metav1.Duration{Duration: 5 * time.Second}, MaxDuration: metav1.Duration{Duration: 20 * time.Second}}},
		{ScaleSet: "b", WithoutContainer: &all},
		{ScaleSet: "c"},
	}
	mixed.Jobs.Generate = &g
	one, shaped := base.Stream(0), mixed.Stream(0)
	perSet := map[string]int{}
	for i, j := range shaped {
		if one[i].At != j.At || one[i].Duration != j.Duration {
			t.Fatalf("job %d: %+v without a mix, %+v with: want the same times", i, one[i], j)
		}
		perSet[j.ScaleSet]++
		switch j.ScaleSet {
		case "a":
			if !j.Container || len(j.Spec.Services) != 1 || len(j.Steps) != 2 {
				t.Errorf("job %d of set a = %+v: want a container, redis and 2 steps", i, j)
			}
			var end time.Duration
			for _, st := range j.Steps {
				if st.At <= end || st.Duration < 5*time.Second || st.Duration > 20*time.Second {
					t.Errorf("job %d: steps %+v: want 5-20s steps with gaps between them", i, j.Steps)
				}
				end = st.At + st.Duration
			}
			if end >= j.Duration {
				t.Errorf("job %d: steps end at %s, the job at %s", i, end, j.Duration)
			}
		case "b":
			if j.Container || len(j.Steps) != 0 {
				t.Errorf("job %d of set b = %+v: want no container, no steps", i, j)
			}
		case "c":
			if len(j.Steps) != 0 || len(j.Spec.Services) != 0 {
				t.Errorf("job %d of set c = %+v: want neither steps nor services", i, j)
			}
		}
	}
	if perSet["a"] < perSet["b"] || perSet["b"] == 0 || perSet["c"] == 0 {
		t.Errorf("jobs per set = %v, want every entry used, a twice as often", perSet)
	}
}

// Every scenario the repository ships loads, and its stream has the jobs
// it asks for.
func TestShippedScenariosLoad(t *testing.T) {
	files, err := filepath.Glob("../../../test/scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if g := s.Jobs.Generate; g != nil {
			if got, want := len(s.Stream(g.Seed)), g.Count+len(s.Jobs.List); got != want {
				t.Errorf("%s: %d jobs in the stream, want %d", f, got, want)
			}
		}
	}
}
