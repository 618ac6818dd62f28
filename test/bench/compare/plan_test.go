package compare

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadWorkloads(t *testing.T) {
	tests := map[string]struct {
		config  string
		want    []Workload
		wantErr bool
	}{
		"pairs with anchors": {
			config: `
- name: RunnersVanilla
  workloads: &w
  - name: 500Nodes
    labels: [performance]
    params: {nodes: 500, runners: 10}
  - name: 10Nodes
    labels: [performance, short]
    params: {nodes: 10, runners: 1}
- name: RunnersTandem
  workloads: *w
`,
			want: []Workload{
				{Base: "Runners", Name: "500Nodes", Nodes: 500},
				{Base: "Runners", Name: "10Nodes", Nodes: 10, Short: true},
			},
		},
		"a side without its pair": {
			config: `
- name: RunnersVanilla
  workloads: [{name: a, params: {nodes: 1}}]
`,
			wantErr: true,
		},
		"sides with different workloads": {
			config: `
- name: RunnersVanilla
  workloads: [{name: a, params: {nodes: 1}}]
- name: RunnersTandem
  workloads: [{name: b, params: {nodes: 1}}]
`,
			wantErr: true,
		},
		"a test case that is no side": {
			config: `
- name: Runners
  workloads: [{name: a, params: {nodes: 1}}]
`,
			wantErr: true,
		},
		"no nodes parameter": {
			config: `
- name: RunnersVanilla
  workloads: &w [{name: a, params: {runners: 1}}]
- name: RunnersTandem
  workloads: *w
`,
			wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(file, []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := LoadWorkloads(file)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// The shipped config pairs every workload and gives each a short variant.
func TestShippedConfig(t *testing.T) {
	workloads, err := LoadWorkloads(filepath.Join("..", "performance-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	short := map[string]bool{}
	for _, w := range workloads {
		short[w.Base] = short[w.Base] || w.Short
	}
	for base, ok := range short {
		if !ok {
			t.Errorf("workload %s has no short variant: make test would not run it", base)
		}
	}
	for _, base := range []string{"PlainPods", "Runners", "PodsAmongReservations", "Churn", "Saturation"} {
		if _, ok := short[base]; !ok {
			t.Errorf("workload %s missing", base)
		}
	}
}

func TestPlan(t *testing.T) {
	small := Workload{Base: "A", Name: "500Nodes", Nodes: 500}
	large := Workload{Base: "B", Name: "5000Nodes", Nodes: 5000}
	got := Plan([]Workload{small, large}, 3, 1, 5000)
	type step struct {
		rep  int
		id   string
		side string
	}
	var steps []step
	for _, r := range got {
		steps = append(steps, step{r.Rep, r.Workload.ID(), r.Side})
	}
	want := []step{
		{1, "A/500Nodes", Vanilla}, {1, "A/500Nodes", Tandem},
		{1, "B/5000Nodes", Tandem}, {1, "B/5000Nodes", Vanilla},
		{2, "A/500Nodes", Tandem}, {2, "A/500Nodes", Vanilla},
		{3, "A/500Nodes", Vanilla}, {3, "A/500Nodes", Tandem},
	}
	if diff := cmp.Diff(want, steps, cmp.AllowUnexported(step{})); diff != "" {
		t.Errorf("plan (-want,+got):\n%s", diff)
	}
}
