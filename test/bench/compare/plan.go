// Package compare runs tandem's scheduler_perf workloads side by side with
// vanilla kube-scheduler and compares them: the plan of runs (each
// workload's two sides in alternating order, repetition after repetition),
// the data items scheduler_perf writes for each run, and the report (medians
// over repetitions, tandem/vanilla ratios and their spread).
package compare

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// The two sides of a workload: test cases <Base>Vanilla and <Base>Tandem in
// performance-config.yaml.
const (
	Vanilla = "Vanilla"
	Tandem  = "Tandem"
)

// ShortLabel marks the tiny variant of a workload, the one `make test` runs.
const ShortLabel = "short"

// Workload is one workload of performance-config.yaml with both sides.
type Workload struct {
	// Base is the test case name without its side, e.g. "Runners".
	Base string
	// Name is the workload's name, e.g. "500Nodes_2000Runners".
	Name string
	// Nodes is the workload's `nodes` parameter.
	Nodes int
	// Short reports the `short` label.
	Short bool
}

// ID is how the report names the workload: "Runners/500Nodes_2000Runners".
func (w Workload) ID() string { return w.Base + "/" + w.Name }

// TestCase is the scheduler_perf test case of one side.
func (w Workload) TestCase(side string) string { return w.Base + side }

// config is the part of scheduler_perf's config the plan needs.
type config []struct {
	Name      string `json:"name"`
	Workloads []struct {
		Name   string         `json:"name"`
		Labels []string       `json:"labels"`
		Params map[string]any `json:"params"`
	} `json:"workloads"`
}

// LoadWorkloads reads a scheduler_perf config and returns its workloads in
// file order. Every test case must be one side of a pair with the same
// workloads, and every workload must have a `nodes` parameter.
func LoadWorkloads(path string) ([]Workload, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg config
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sides := map[string]map[string][]string{} // base -> side -> workload names
	var workloads []Workload
	for _, tc := range cfg {
		base, side, ok := splitSide(tc.Name)
		if !ok {
			return nil, fmt.Errorf("%s: test case %s: name must end in %s or %s", path, tc.Name, Vanilla, Tandem)
		}
		if sides[base] == nil {
			sides[base] = map[string][]string{}
		}
		for _, w := range tc.Workloads {
			sides[base][side] = append(sides[base][side], w.Name)
			if side != Vanilla {
				continue
			}
			nodes, ok := w.Params["nodes"].(float64)
			if !ok {
				return nil, fmt.Errorf("%s: %s/%s: no numeric nodes parameter", path, tc.Name, w.Name)
			}
			workloads = append(workloads, Workload{Base: base, Name: w.Name, Nodes: int(nodes), Short: slices.Contains(w.Labels, ShortLabel)})
		}
	}
	for base, s := range sides {
		if !slices.Equal(s[Vanilla], s[Tandem]) {
			return nil, fmt.Errorf("%s: %s%s has workloads %v, %s%s has %v: want the same", path, base, Vanilla, s[Vanilla], base, Tandem, s[Tandem])
		}
	}
	return workloads, nil
}

// splitSide splits "RunnersTandem" into "Runners" and "Tandem".
func splitSide(testCase string) (base, side string, ok bool) {
	for _, s := range []string{Vanilla, Tandem} {
		if b, found := strings.CutSuffix(testCase, s); found && b != "" {
			return b, s, true
		}
	}
	return "", "", false
}

// Run is one scheduler_perf run: one side of one workload.
type Run struct {
	// Rep counts repetitions from 1.
	Rep      int
	Workload Workload
	Side     string
}

// Plan lists the runs: in every repetition each workload's two sides run
// back to back, vanilla first in odd repetitions and tandem first in even
// ones (shifted by one for every other workload), so neither side always
// runs first or always after the same neighbour. Workloads with at least
// largeNodes nodes get repsLarge repetitions, the others reps.
func Plan(workloads []Workload, reps, repsLarge, largeNodes int) []Run {
	maxReps := max(reps, repsLarge)
	var runs []Run
	for rep := 1; rep <= maxReps; rep++ {
		for i, w := range workloads {
			n := reps
			if w.Nodes >= largeNodes {
				n = repsLarge
			}
			if rep > n {
				continue
			}
			first, second := Vanilla, Tandem
			if (rep+i)%2 == 0 {
				first, second = Tandem, Vanilla
			}
			runs = append(runs, Run{Rep: rep, Workload: w, Side: first}, Run{Rep: rep, Workload: w, Side: second})
		}
	}
	return runs
}
