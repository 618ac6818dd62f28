package chaos

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

func TestFirstBindAfter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	tests := map[string]struct {
		binds    []bind
		want     time.Duration
		wantPod  string
		wantNone bool
	}{
		"nothing bound after the loss": {
			binds:    []bind{{Pod: "a", Seen: ms(-500), At: ms(-10)}},
			wantNone: true,
		},
		"a pod seen before the loss is not evidence of a new scheduler": {
			// It may have been bound by the old leader just before it died.
			binds: []bind{
				{Pod: "old", Seen: ms(-5), At: ms(20)},
				{Pod: "probe", Seen: ms(3), At: ms(4100)},
			},
			want: 4100 * time.Millisecond, wantPod: "probe",
		},
		"the earliest qualifying bind wins": {
			binds: []bind{
				{Pod: "probe", Seen: ms(3), At: ms(5000)},
				{Pod: "runner", Seen: ms(1000), At: ms(4200)},
			},
			want: 4200 * time.Millisecond, wantPod: "runner",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, pod, ok := firstBindAfter(tc.binds, t0)
			if ok == tc.wantNone {
				t.Fatalf("found = %v, want %v", ok, !tc.wantNone)
			}
			if got != tc.want || pod != tc.wantPod {
				t.Errorf("firstBindAfter = %v (%s), want %v (%s)", got, pod, tc.want, tc.wantPod)
			}
		})
	}
}

func TestBindWatcher(t *testing.T) {
	w := newBindWatcher("tandem-scheduler")
	t0 := time.Unix(1000, 0)
	pending := st.MakePod().Namespace("ns").Name("r").UID("r").SchedulerName("tandem-scheduler").Obj()
	bound := pending.DeepCopy()
	bound.Spec.NodeName = "n1"
	other := st.MakePod().Namespace("ns").Name("d").UID("d").SchedulerName(v1.DefaultSchedulerName).Obj()
	otherBound := other.DeepCopy()
	otherBound.Spec.NodeName = "n1"
	pinned := st.MakePod().Namespace("ns").Name("w").UID("w").SchedulerName("tandem-scheduler").Node("n1").Obj()

	w.seen(pending, t0)
	w.seen(other, t0)
	w.seen(pinned, t0)
	w.updated(pending, bound, t0.Add(time.Second))    // bound by tandem
	w.updated(bound, bound, t0.Add(2*time.Second))    // no change of node
	w.updated(other, otherBound, t0.Add(time.Second)) // another scheduler's
	w.updated(pinned, pinned, t0.Add(time.Second))    // created with its node
	want := []bind{{Pod: "ns/r", Seen: t0, At: t0.Add(time.Second)}}
	if diff := cmp.Diff(want, w.binds); diff != "" {
		t.Errorf("binds (-want,+got):\n%s", diff)
	}
}

func TestStatsOf(t *testing.T) {
	tests := map[string]struct {
		in   []time.Duration
		want Stats
	}{
		"none": {},
		"one":  {in: []time.Duration{1500 * time.Millisecond}, want: Stats{Count: 1, P50: 1.5, Max: 1.5}},
		"odd":  {in: []time.Duration{5 * time.Second, time.Second, 3 * time.Second}, want: Stats{Count: 3, P50: 3, Max: 5}},
		"even": {in: []time.Duration{4 * time.Second, time.Second, 3 * time.Second, 2 * time.Second}, want: Stats{Count: 4, P50: 2, Max: 4}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, statsOf(tc.in)); diff != "" {
				t.Errorf("statsOf (-want,+got):\n%s", diff)
			}
		})
	}
}
