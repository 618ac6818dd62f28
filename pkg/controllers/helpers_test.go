package controllers

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
	"github.com/tandem-scheduler/tandem/pkg/sizing"
)

// testFeeder is what newTestFeeder builds: a feeder joined by one profile,
// "test", of a scheduler with no informers (the tests feed it by hand).
type testFeeder struct {
	profile *Profile
	cfg     Config
}

// feederOption changes what newTestFeeder builds.
type feederOption func(*testFeeder)

// withGrace sets noWorkflowPodGrace.
func withGrace(d time.Duration) feederOption {
	return func(tf *testFeeder) { tf.cfg.NoWorkflowPodGrace = d }
}

// newTestFeeder returns a feeder that profile "test" (every pod a runner,
// reservationMode Memory, routine events on) joined, on a cluster without
// informers: synced and reconciled at once, its store and handlers fed by
// the test.
func newTestFeeder(t *testing.T, opts ...feederOption) *Feeder {
	t.Helper()
	sz, err := sizing.NewSizer(&config.WorkflowReservationArgs{})
	if err != nil {
		t.Fatal(err)
	}
	tf := &testFeeder{
		profile: &Profile{Name: "test", Runners: labels.Everything(), RunnerPodLabel: "runner-pod", Recorder: events.NewFakeRecorder(100),
			Sizer: sz, ReservationMode: config.ReservationModeMemory, ReservationEvents: true},
		cfg: Config{ReconcileInterval: time.Hour, NoWorkflowPodGrace: time.Minute},
	}
	for _, opt := range opts {
		opt(tf)
	}
	metrics.Register() // as the plugin does when the framework makes it
	f := NewFeeder(nil)
	if err := f.Join(context.Background(), &fakeCluster{}, tf.profile, nil, tf.cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

// eventually polls cond; handlers and timers run asynchronously.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("timed out waiting until %s", what)
	}
}

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: "arc", Name: name} }

// oneUnit is runner's reservation of cpu=1 on n1, bound.
func oneUnit(runner string) *reservations.Reservation {
	return &reservations.Reservation{Runner: key(runner), RunnerUID: types.UID(runner), Node: "n1", Size: contract.Amount{MilliCPU: 1000, Pods: 1}, Source: contract.SourceAnnotation}
}

func runnerPod(name string) *st.PodWrapper {
	return st.MakePod().Namespace("arc").Name(name).UID(name).SchedulerName("test").Label("actions-ephemeral-runner", "True")
}

func units(cpu string) map[v1.ResourceName]string {
	return map[v1.ResourceName]string{v1.ResourceCPU: cpu}
}

// placeholderOf builds runner's placeholder holding cpu on n1, as the worker
// would.
func placeholderOf(runner *v1.Pod, cpu string) *v1.Pod {
	p := PlaceholderFor(runner, "n1", contract.AmountFromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}), "pause:3.10")
	p.UID = types.UID(p.Name)
	return p
}
