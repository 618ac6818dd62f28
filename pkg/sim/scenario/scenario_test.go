package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
		"unknown hook mode": {from: "hookMode: novolume", to: "hookMode: v0.9", wantErr: `hookMode "v0.9"`},
		"unknown field":     {from: "maxRunners: 1", to: "maxRunners: 1, maxRunner: 2", wantErr: "unknown field"},
		"unknown scale set": {from: "duration: 10s", to: "duration: 10s, scaleSet: nope", wantErr: `unknown scale set "nope"`},
		"no nodes":          {from: `[{name: n, count: 1, capacity: {cpu: "1"}}]`, to: "[]", wantErr: "no nodes"},
		"bad scoring":       {from: "name: x", to: "name: x\nscoring: Random", wantErr: `scoring "Random"`},
		"min above max":     {from: "maxRunners: 1", to: "maxRunners: 1, minRunners: 2", wantErr: "minRunners"},
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
