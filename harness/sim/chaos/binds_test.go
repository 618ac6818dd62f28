package chaos

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

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

	w.updated(pending, bound, t0.Add(time.Second))    // bound by tandem
	w.updated(bound, bound, t0.Add(2*time.Second))    // no change of node
	w.updated(pending, bound, t0.Add(3*time.Second))  // seen again: the first bind counts
	w.updated(other, otherBound, t0.Add(time.Second)) // another scheduler's
	w.updated(pinned, pinned, t0.Add(time.Second))    // created with its node
	want := map[string]time.Time{"ns/r/r": t0.Add(time.Second)}
	if diff := cmp.Diff(want, w.binds); diff != "" {
		t.Errorf("binds (-want,+got):\n%s", diff)
	}
	if at, ok := w.boundAt("ns/r/r"); !ok || !at.Equal(t0.Add(time.Second)) {
		t.Errorf("boundAt = %v, %v; want %v", at, ok, t0.Add(time.Second))
	}
	if _, ok := w.boundAt("ns/d/d"); ok {
		t.Errorf("another scheduler's bind recorded")
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

// A watch that relists after an apiserver restart delivers a probe created
// and bound during the gap as an Add of a bound pod: the bind must count, or
// the fault's recovery waits for it until the run ends.
func TestBindWatcherProbeBoundWhileWatchWasDown(t *testing.T) {
	w := newBindWatcher("tandem-scheduler")
	t0 := time.Unix(1000, 0)
	probe := st.MakePod().Namespace("ns").Name("chaos-probe-2").UID("p").SchedulerName("tandem-scheduler").Label(ProbeLabel, "true").Node("n1").Obj()
	pinned := st.MakePod().Namespace("ns").Name("w").UID("w").SchedulerName("tandem-scheduler").Node("n1").Obj()
	w.added(probe, t0)
	w.added(pinned, t0) // created with its node: nobody bound it
	want := map[string]time.Time{"ns/chaos-probe-2/p": t0}
	if diff := cmp.Diff(want, w.binds); diff != "" {
		t.Errorf("binds (-want,+got):\n%s", diff)
	}
}
