package controllers

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/internal/tandemtest"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
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

// placeholderOf builds runner's placeholder holding cpu on n1, as the worker
// would.
func placeholderOf(runner *v1.Pod, cpu string) *v1.Pod {
	p := PlaceholderFor(runner, "n1", contract.AmountFromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}), "pause:3.10")
	p.UID = types.UID(p.Name)
	return p
}

// The fixtures the plugin's tests share (pkg/internal/tandemtest).
var (
	runnerPod  = tandemtest.RunnerPod
	units      = tandemtest.Units
	key        = tandemtest.Key
	oneUnit    = tandemtest.OneUnit
	eventually = tandemtest.Eventually
)
