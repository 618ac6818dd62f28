package workflowreservation

import (
	"context"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/controllers"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/internal/tandemtest"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// fakeHandle provides what the plugin uses of the framework handle; any
// other method panics through the nil embedded interface.
type fakeHandle struct {
	fwk.Handle
	client    *fake.Clientset
	informers informers.SharedInformerFactory
	recorder  *events.FakeRecorder
	profile   string

	mu        sync.Mutex
	activated []string
	// waiting is the pod waiting at Permit, if any.
	waiting *fakeWaitingPod
}

// fakeWaitingPod records the verdict on a pod waiting at Permit.
type fakeWaitingPod struct {
	fwk.WaitingPod
	pod     *v1.Pod
	verdict chan string
}

func (w *fakeWaitingPod) GetPod() *v1.Pod { return w.pod }
func (w *fakeWaitingPod) Allow(string)    { w.verdict <- "allowed" }

// GetWaitingPod returns the pod the test put at Permit.
func (h *fakeHandle) GetWaitingPod(uid types.UID) fwk.WaitingPod {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiting == nil || h.waiting.pod.UID != uid {
		return nil
	}
	return h.waiting
}

// wait puts pod at Permit, as the framework does once Permit said Wait.
func (h *fakeHandle) wait(pod *v1.Pod) *fakeWaitingPod {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waiting = &fakeWaitingPod{pod: pod, verdict: make(chan string, 1)}
	return h.waiting
}

func (h *fakeHandle) ClientSet() clientset.Interface                         { return h.client }
func (h *fakeHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.informers }

// SharedDRAManager is nil: the fake has no DRA objects. From 1.36 the Fit
// plugin that Pods mode runs asks for it (DRAExtendedResource is on).
func (h *fakeHandle) SharedDRAManager() fwk.SharedDRAManager { return nil }

func (h *fakeHandle) ProfileName() string {
	if h.profile == "" {
		return "test"
	}
	return h.profile
}
func (h *fakeHandle) KubeConfig() *rest.Config { return nil }
func (h *fakeHandle) APICacher() fwk.APICacher { return nil }

// Activate records the pods the plugin asked to requeue.
func (h *fakeHandle) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name := range pods {
		h.activated = append(h.activated, name)
	}
}

func (h *fakeHandle) activatedPods() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.activated...)
}

// newTestPlugin builds the plugin on a fake clientset holding objs, with
// informers started and synced when withInformers is set.
func newTestPlugin(t testing.TB, args *config.WorkflowReservationArgs, withInformers bool, objs ...runtime.Object) (*WorkflowReservation, *fakeHandle) {
	t.Helper()
	return newTestReplica(t, args, nil, "", withInformers, objs...)
}

// newTestReplica is newTestPlugin for a replica with the given leadership
// (nil: leads) and profile name (empty: "test").
func newTestReplica(t testing.TB, args *config.WorkflowReservationArgs, leader *leadership.Leadership, profile string, withInformers bool, objs ...runtime.Object) (*WorkflowReservation, *fakeHandle) {
	t.Helper()
	if withInformers && !hasNode(objs, "n1") {
		// The node most tests bind their pods to: the reconciler releases
		// reservations on nodes that do not exist.
		objs = append(objs, st.MakeNode().Name("n1").Obj())
	}
	return newTestPluginOn(t, fake.NewClientset(objs...), args, leader, profile, withInformers)
}

// newTestPluginOn is newTestReplica on client, which the caller may have
// given reactors.
func newTestPluginOn(t testing.TB, client *fake.Clientset, args *config.WorkflowReservationArgs, leader *leadership.Leadership, profile string, withInformers bool) (*WorkflowReservation, *fakeHandle) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return newTestPluginIn(ctx, t, client, args, leader, profile, withInformers)
}

// newTestPluginIn is newTestPluginOn for a scheduler that runs until ctx
// is done.
func newTestPluginIn(ctx context.Context, t testing.TB, client *fake.Clientset, args *config.WorkflowReservationArgs, leader *leadership.Leadership, profile string, withInformers bool) (*WorkflowReservation, *fakeHandle) {
	t.Helper()
	h := &fakeHandle{client: client, recorder: events.NewFakeRecorder(100), profile: profile}
	if withInformers {
		h.informers = informers.NewSharedInformerFactory(client, 0)
	}
	f := controllers.NewFeeder(leader)
	p, err := NewFactory(f)(ctx, args, h)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	pl := p.(*WorkflowReservation)
	testFeeders.Store(pl, f)
	t.Cleanup(func() { testFeeders.Delete(pl) })
	// As the scheduler does while it is built, before its informers start.
	if _, err := pl.EventsToRegister(ctx); err != nil {
		t.Fatal(err)
	}
	go f.Run(ctx) // as tandem-scheduler does
	if withInformers {
		h.informers.Start(ctx.Done())
		h.informers.WaitForCacheSync(ctx.Done())
		// The handlers have seen every object the informers listed, and
		// the reconciler has made its first pass.
		if !cache.WaitForCacheSync(ctx.Done(), feederOf(pl).Synced) {
			t.Fatal("handlers did not sync")
		}
		if feederOf(pl).Leader().IsLeader() {
			<-feederOf(pl).Reconciled()
		}
	}
	return pl, h
}

func nodeInfo(node *v1.Node, pods ...*v1.Pod) fwk.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(node)
	return ni
}

func drainEvents(h *fakeHandle) []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// useListerOf gives the plugin a pod lister holding pods, for tests that
// call the informer handlers themselves, in an order of their choosing.
func useListerOf(t *testing.T, pl *WorkflowReservation, pods ...*v1.Pod) {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	feederOf(pl).UsePods(corelisters.NewPodLister(indexer))
}

func hasNode(objs []runtime.Object, name string) bool {
	for _, o := range objs {
		if n, ok := o.(*v1.Node); ok && n.Name == name {
			return true
		}
	}
	return false
}

func klogger(t *testing.T) klog.Logger {
	logger, _ := ktesting.NewTestContext(t)
	return logger
}

// The states a test starts a reservation in, reached through the store's
// own verbs in a store of their own (copies that a test then puts).

// usedUpBy returns r claimed by pod and used up: the pod is gone.
func usedUpBy(r *reservations.Reservation, pod types.UID) *reservations.Reservation {
	s := reservations.NewStore()
	s.Take(claimedBy(r, pod))
	s.WorkflowPodGone(r.Runner, pod)
	c, _ := s.Get(r.Runner)
	return &c
}

// reserveRunner runs a runner through PreFilter and Reserve on node.
func reserveRunner(t *testing.T, pl *WorkflowReservation, pod *v1.Pod, node string) *framework.CycleState {
	t.Helper()
	ctx := context.Background()
	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, pod, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter(%s): %v", pod.Name, status)
	}
	if status := pl.Reserve(ctx, cs, pod, node); !status.IsSuccess() {
		t.Fatalf("Reserve(%s): %v", pod.Name, status)
	}
	return cs
}

// boundWithRecord returns pod as the informer shows it once the Binding that
// carries its reservation (as Bind writes it) went through.
func boundWithRecord(t *testing.T, pl *WorkflowReservation, pod *v1.Pod, node string) *v1.Pod {
	t.Helper()
	r, ok := pl.store.Get(key(pod.Name))
	if !ok {
		t.Fatalf("no reservation for %s", pod.Name)
	}
	value, err := reservations.Encode(&r)
	if err != nil {
		t.Fatal(err)
	}
	bound := pod.DeepCopy()
	bound.Spec.NodeName = node
	if bound.Annotations == nil {
		bound.Annotations = map[string]string{}
	}
	bound.Annotations[contract.ReservationAnnotation] = value
	return bound
}

// The fixtures the controllers' tests share (pkg/internal/tandemtest).
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

// testFeeders holds the controllers each test plugin joined, for the tests
// that look behind the plugin's seams, until its test ends (a benchmark's
// stores of 20,000 reservations would otherwise stay for the process).
var testFeeders sync.Map

// feederOf returns the controllers pl joined.
func feederOf(pl *WorkflowReservation) *controllers.Feeder {
	f, ok := testFeeders.Load(pl)
	if !ok {
		panic("plugin not made by newTestPluginIn")
	}
	return f.(*controllers.Feeder)
}

// profileOf returns what the controllers know of pl's profile.
func profileOf(pl *WorkflowReservation) *controllers.Profile {
	return feederOf(pl).ProfileOf(&v1.Pod{Spec: v1.PodSpec{SchedulerName: pl.profile}})
}

// setLayout gives pl the layout of a profile in which it runs the in-tree
// Fit (runsFit) and hands placeholders over at Permit (handover), as
// layout finds it in a profile built so, and tells the controllers.
func setLayout(pl *WorkflowReservation, runsFit, handover bool) {
	pl.layoutOnce.Do(func() {})
	pl.runsFit, pl.handoverAtPermit = runsFit, handover
	pl.room.SetHandover(handover)
}
