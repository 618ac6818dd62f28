package sim

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
)

func TestNoWorkflowPodGrace(t *testing.T) {
	tests := map[string]struct {
		grace time.Duration
		scale float64
		want  time.Duration
	}{
		"the plugin's default, real time": {scale: 1, want: 2 * time.Minute},
		"the plugin's default, 10x":       {scale: 10, want: 12 * time.Second},
		"the scenario's, 20x":             {grace: 30 * time.Second, scale: 20, want: 1500 * time.Millisecond},
		"no scale is real time (scale 0)": {grace: 30 * time.Second, want: 30 * time.Second},
		"rounded to the millisecond, 3x":  {grace: time.Second, scale: 3, want: 333 * time.Millisecond},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sc := &scenario.Scenario{NoWorkflowPodGrace: metav1.Duration{Duration: tc.grace}}
			if got := NoWorkflowPodGrace(sc, tc.scale); got != tc.want {
				t.Errorf("NoWorkflowPodGrace = %s, want %s", got, tc.want)
			}
		})
	}
}

// The grace reaches tandem's profile, and only tandem's.
func TestSchedulerConfigGrace(t *testing.T) {
	if got := SchedulerConfig(Tandem, "", 1500*time.Millisecond, ""); !strings.Contains(got, "noWorkflowPodGrace: 1.5s") {
		t.Errorf("tandem's config has no noWorkflowPodGrace: 1.5s:\n%s", got)
	}
	if got := SchedulerConfig(Default, "", time.Second, ""); strings.Contains(got, "noWorkflowPodGrace") {
		t.Errorf("the default scheduler's config has tandem args:\n%s", got)
	}
}

// tandem-pods is tandem's profile with reservationMode: Pods, and only it
// has that argument; both route runners to tandem-scheduler.
func TestSchedulerConfigReservationMode(t *testing.T) {
	tests := map[string]struct {
		kind     Kind
		wantMode bool
	}{
		"tandem":      {kind: Tandem},
		"tandem-pods": {kind: TandemPods, wantMode: true},
		"default":     {kind: Default},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := SchedulerConfig(tc.kind, "", time.Second, "")
			if has := strings.Contains(got, "reservationMode: Pods"); has != tc.wantMode {
				t.Errorf("reservationMode: Pods in the config = %v, want %v:\n%s", has, tc.wantMode, got)
			}
			// tandem's profiles, in both modes, run NodeResourcesFit's
			// filter in the plugin.
			if has := strings.Contains(got, "    filter:\n      disabled:\n      - name: NodeResourcesFit"); has != tc.kind.IsTandem() {
				t.Errorf("NodeResourcesFit's filter disabled = %v, want %v:\n%s", has, tc.kind.IsTandem(), got)
			}
			if tc.kind.IsTandem() && (tc.kind.SchedulerName() != "tandem-scheduler" || !strings.Contains(got, "WorkflowReservation")) {
				t.Errorf("%s: scheduler name %q, config without WorkflowReservation:\n%s", tc.kind, tc.kind.SchedulerName(), got)
			}
		})
	}
}

func TestParseScheduler(t *testing.T) {
	tests := map[string]struct {
		want    Scheduler
		wantErr bool
	}{
		"tandem":                      {want: Scheduler{Kind: Tandem}},
		"anti-affinity":               {want: Scheduler{Kind: AntiAffinity}},
		"tandem/MostAllocated":        {want: Scheduler{Kind: Tandem, Scoring: "MostAllocated"}},
		"default/LeastAllocated":      {want: Scheduler{Kind: Default, Scoring: "LeastAllocated"}},
		"tandem/Balanced":             {wantErr: true},
		"vanilla":                     {wantErr: true},
		"tandem-pods/MostAllocated/x": {wantErr: true},
		"":                            {wantErr: true},
	}
	for in, tc := range tests {
		got, err := ParseScheduler(in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseScheduler(%q) = %+v, %v; want %+v, error %v", in, got, err, tc.want, tc.wantErr)
		}
		if err == nil && strings.TrimSpace(in) != got.String() {
			t.Errorf("ParseScheduler(%q).String() = %q", in, got.String())
		}
	}
}
