package controllers

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/controllers/placeholder"
	"github.com/tandem-scheduler/tandem/pkg/internal/tandemtest"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
)

// testFeeder is what newTestFeeder builds from its options.
type testFeeder struct {
	args    *config.WorkflowReservationArgs
	objs    []runtime.Object
	leader  *leadership.Leadership
	profile string
	// informers: the cluster has informers over a fake clientset with
	// objs, started, and the controllers run.
	informers bool
}

// feederOption changes what newTestFeeder builds.
type feederOption func(*testFeeder)

// withArgs gives the profile args (default tandemtest.DefaultArgs).
func withArgs(args *config.WorkflowReservationArgs) feederOption {
	return func(tf *testFeeder) { tf.args = args }
}

// withGrace sets the args' noWorkflowPodGrace.
func withGrace(d time.Duration) feederOption {
	return func(tf *testFeeder) { tf.args.NoWorkflowPodGrace.Duration = d }
}

// withObjects gives the cluster informers over a fake clientset holding
// objs (and node n1, which most tests bind to: the reconciler releases
// reservations on nodes that do not exist).
func withObjects(objs ...runtime.Object) feederOption {
	return func(tf *testFeeder) { tf.objs, tf.informers = objs, true }
}

// withProfile names the profile (default "test").
func withProfile(name string) feederOption {
	return func(tf *testFeeder) { tf.profile = name }
}

// withLeader makes the feeder's replica lead as l says (default: always).
func withLeader(l *leadership.Leadership) feederOption {
	return func(tf *testFeeder) { tf.leader = l }
}

// testCluster is the cluster of newTestFeeder: its activations (fakeCluster)
// and the profile's events.
type testCluster struct {
	informerCluster
	// client is the fake clientset behind informerCluster's (withObjects).
	client   *fake.Clientset
	recorder *events.FakeRecorder
}

// events drains the events recorded so far.
func (c *testCluster) events() []string {
	var out []string
	for {
		select {
		case e := <-c.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// newTestFeeder returns a feeder that one profile, "test", joined as the
// plugin joins it (controllers.NewProfile of the args, the scheduler's
// backoff). Without informers (withObjects) it is synced and reconciled at
// once, its store and handlers fed by the test; with them, the controllers
// run (Run) until the test ends, and it returns once the handlers have seen
// every object and, on a leader, the reconciler made its first pass.
func newTestFeeder(t *testing.T, opts ...feederOption) (*Feeder, *testCluster) {
	t.Helper()
	tf := &testFeeder{args: tandemtest.DefaultArgs(), profile: "test"}
	for _, opt := range opts {
		opt(tf)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := &testCluster{recorder: events.NewFakeRecorder(100)}
	if tf.informers {
		objs := tf.objs
		if !slices.ContainsFunc(objs, func(o runtime.Object) bool { n, ok := o.(*v1.Node); return ok && n.Name == "n1" }) {
			objs = append(objs, st.MakeNode().Name("n1").Obj())
		}
		c.client = fake.NewClientset(objs...)
		c.informerCluster.client = c.client
		c.informers = informers.NewSharedInformerFactory(c.client, 0)
	}
	profile, err := NewProfile(tf.profile, tf.args, c.recorder)
	if err != nil {
		t.Fatal(err)
	}
	metrics.Register() // as the plugin does when the framework makes it
	f := NewFeeder(tf.leader)
	f.Waiting().SetBackoff(tf.args.PodInitialBackoffSeconds, tf.args.PodMaxBackoffSeconds)
	var cluster Cluster = &c.fakeCluster
	if tf.informers {
		cluster = &c.informerCluster
	}
	if err := f.join(ctx, cluster, profile, tf.args.HookTemplateNamespaces, ConfigOf(tf.args)); err != nil {
		t.Fatal(err)
	}
	if tf.informers {
		go f.Run(ctx)
		c.informers.Start(ctx.Done())
		c.informers.WaitForCacheSync(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), f.Synced) {
			t.Fatal("handlers did not sync")
		}
		if f.Leader().IsLeader() {
			<-f.Reconciled()
		}
	}
	return f, c
}

// placeholderOf builds runner's placeholder holding cpu on n1, as the worker
// would.
func placeholderOf(runner *v1.Pod, cpu string) *v1.Pod {
	p := placeholder.For(runner, "n1", contract.AmountFromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}), "pause:3.10")
	p.UID = types.UID(p.Name)
	return p
}

// The fixtures the plugin's tests share (pkg/internal/tandemtest).
var (
	runnerPod          = tandemtest.RunnerPod
	workflowPod        = tandemtest.WorkflowPod
	units              = tandemtest.Units
	recordedFor        = tandemtest.RecordedFor
	claimedBy          = tandemtest.ClaimedBy
	defaultArgs        = tandemtest.DefaultArgs
	key                = tandemtest.Key
	oneUnitReservation = tandemtest.OneUnit
	eventually         = tandemtest.Eventually
	earlier            = tandemtest.Earlier
	later              = tandemtest.Later
	pairArgs           = tandemtest.PairPodArgs
	podsModeArgs       = tandemtest.PodsModeArgs
)

// heldReservations lists the reservations held as runner@node:state.
func heldReservations(f *Feeder) []string { return tandemtest.Held(f.store) }

// useListerOf gives f a pod lister holding pods, for tests that call the
// informer handlers themselves, in an order of their choosing.
func useListerOf(t *testing.T, f *Feeder, pods ...*v1.Pod) {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	f.UsePods(corelisters.NewPodLister(indexer))
}

func klogger(t *testing.T) klog.Logger {
	logger, _ := ktesting.NewTestContext(t)
	return logger
}

// threeUnits is node n1 with cpu=3.
var threeUnits = st.MakeNode().Name("n1").Capacity(units("3")).Obj()

// waitForPod polls c's clientset until cond holds for the named pod (nil:
// the pod does not exist).
func waitForPod(t *testing.T, c *testCluster, name string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	return tandemtest.WaitForPod(t, c.client, name, cond)
}
