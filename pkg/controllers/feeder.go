package controllers

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/clock"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/controllers/pairpod"
	"github.com/tandem-scheduler/tandem/pkg/controllers/placeholder"
	"github.com/tandem-scheduler/tandem/pkg/controllers/podworker"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
	"github.com/tandem-scheduler/tandem/pkg/sizing"
)

// Profile is what the controllers know of one tandem profile of the
// scheduler: a profile (schedulerName) that enables the plugin.
type Profile struct {
	// Name is the profile's schedulerName.
	Name string
	// Runners selects the profile's runner pods.
	Runners labels.Selector
	// Namespaces are the only namespaces with runners (runnerNamespaces);
	// empty: every namespace.
	Namespaces sets.Set[string]
	// RunnerPodLabel is the label that names a workflow pod's runner; every
	// profile of a scheduler uses the same (they share the reservations).
	RunnerPodLabel string
	// Sizer sizes the profile's runners.
	Sizer *sizing.Sizer
	// Recorder is the profile's event recorder.
	Recorder events.EventRecorder
	// ReservationEvents: the routine Normal events (routineEvent) are sent.
	ReservationEvents bool
	// ReservationMode is the args' reservationMode: with Pods, a bound
	// runner's reservation is also a placeholder pod on its node.
	ReservationMode string
	// PlaceholderImage is the image of placeholder and pair pods.
	PlaceholderImage string
	// handover: the profile hands a placeholder over to its workflow pod
	// at Permit (Holder.SetHandover; the plugin knows once the framework
	// has built the profile).
	handover atomic.Bool
}

// NewProfile returns what the controllers know of the profile name from
// its plugin args (validated), with recorder as its event recorder. The
// profile hands no placeholder over at Permit until SetHandover says so.
func NewProfile(name string, args *config.WorkflowReservationArgs, recorder events.EventRecorder) (*Profile, error) {
	selector, err := metav1.LabelSelectorAsSelector(args.RunnerSelector)
	if err != nil {
		return nil, fmt.Errorf("runnerSelector: %w", err)
	}
	sz, err := sizing.NewSizer(args)
	if err != nil {
		return nil, err
	}
	return &Profile{
		Name:              name,
		Runners:           selector,
		Namespaces:        sets.New(args.RunnerNamespaces...),
		RunnerPodLabel:    args.RunnerPodLabel,
		Sizer:             sz,
		Recorder:          recorder,
		ReservationEvents: args.ReservationEvents,
		ReservationMode:   args.ReservationMode,
		PlaceholderImage:  args.PlaceholderImage,
	}, nil
}

// ConfigOf is what the args of a scheduler's first tandem profile set for
// its controllers.
func ConfigOf(args *config.WorkflowReservationArgs) Config {
	return Config{ReconcileInterval: args.ReconcileInterval.Duration, NoWorkflowPodGrace: args.NoWorkflowPodGrace.Duration}
}

// IsRunner reports whether pod is a runner pod of the profile: in one of
// its namespaces and matching its selector, and not one of tandem's own
// placeholders or pair pods (labelled so), whatever the selector selects.
func (p *Profile) IsRunner(pod *v1.Pod) bool {
	if _, own := pod.Labels[contract.PlaceholderLabel]; own {
		return false
	}
	if _, own := pod.Labels[contract.PairPodLabel]; own {
		return false
	}
	return (p.Namespaces.Len() == 0 || p.Namespaces.Has(pod.Namespace)) && p.Runners.Matches(labels.Set(pod.Labels))
}

// Cluster is what the controllers use of the scheduler: its clients, its
// informers and its queue. The framework's Handle is one.
type Cluster interface {
	ClientSet() clientset.Interface
	KubeConfig() *rest.Config
	// SharedInformerFactory is nil in unit tests without informers.
	SharedInformerFactory() informers.SharedInformerFactory
	Activate(logger klog.Logger, pods map[string]*v1.Pod)
}

// Config is what the first profile's args set for the controllers.
type Config struct {
	ReconcileInterval  time.Duration
	NoWorkflowPodGrace time.Duration
}

// Feeder keeps one scheduler's reservation store in step with the cluster,
// for every tandem profile of the scheduler: one cluster, so one set of
// reservations, whichever profile took them. Its informer handlers rebuild
// the reservations recorded on bound runner pods, note the claims of
// workflow pods and release what is gone; its reconciler repairs what the
// handlers missed; it runs the placeholders, the pair pods and the
// EphemeralRunner tracking, and keeps the pods the plugin turned away. The
// plugin's instances, one per profile, join it (Join) and read the store it
// feeds.
type Feeder struct {
	store   *reservations.Store
	leader  *leadership.Leadership
	waiting WaitingPods

	// Set by the first Join and not changed after it.
	cluster Cluster
	pods    corelisters.PodLister
	nodes   corelisters.NodeLister
	// deviceClasses: with DRAExtendedResource on, the DeviceClasses that
	// may map an extended resource to DRA devices (mayBeDRABacked).
	deviceClasses       resourcelisters.DeviceClassLister
	deviceClassesSynced func() bool
	reconcileEvery      time.Duration
	noWorkflowPodGrace  time.Duration
	// runnerPodLabel is the profiles' RunnerPodLabel.
	runnerPodLabel string
	// synced reports whether the informer handlers have seen every
	// existing pod and node, i.e. the reservations are rebuilt.
	synced func() bool
	// reconciled is closed after the reconciler's first pass.
	reconciled chan struct{}
	// running is set by Run.
	running atomic.Bool
	// pairPods keeps the pair pods of waiting runners, placeholders the
	// placeholders of bound runners (both nil without informers).
	pairPods     *pairpod.Controller
	placeholders *placeholder.Controller
	// gauges are the reservation gauges' series, looked up once
	// (recordMetrics runs in every runner's Reserve).
	gauges atomic.Pointer[reservationGauges]

	// mu guards what follows: the profiles join while the first one's
	// handlers run.
	mu sync.RWMutex
	// profiles are the profiles by name (schedulerName); first is the one
	// that joined first, whose informer handlers feed the store.
	profiles map[string]*Profile
	first    *Profile
	// nominated holds the runners nominated to a node and not bound yet:
	// while there are any, PreFilter cannot skip other pods, whose Filter
	// must protect the pair room of a nominated runner (AddPod).
	nominated map[types.UID]bool
	// released holds the runners whose reservation went with their node: a
	// later update of the runner pod, still bound there, must not rebuild it.
	released map[types.UID]bool
	// ephemeralRunners lists ARC's EphemeralRunners once they are listed;
	// arc says what is known of them (arcUnknown, arcAbsent, arcListed).
	ephemeralRunners cache.GenericLister
	arc              atomic.Int32
	// warned holds, per pod, the reasons of the Warning events PreFilter
	// already sent it that every retry would repeat.
	warned map[types.UID]map[string]bool
	// configMapInformers are the informers of hookTemplateNamespaces, by
	// namespace; configMapWatched the ConfigMap informers with the
	// handler (allNamespaces: the scheduler's).
	configMapInformers map[string]cache.SharedIndexInformer
	configMapWatched   map[string]bool
}

// NewFeeder returns the feeder of one scheduler, whose controllers speak
// (events, metrics) and write only while l leads; nil leads always.
func NewFeeder(l *leadership.Leadership) *Feeder {
	if l == nil {
		l = leadership.Leading()
	}
	return &Feeder{
		store:      reservations.NewStore(),
		leader:     l,
		reconciled: make(chan struct{}),
		profiles:   map[string]*Profile{},
		nominated:  map[types.UID]bool{},
		released:   map[types.UID]bool{},
		warned:     map[types.UID]map[string]bool{},
		waiting:    WaitingPods{Clock: clock.RealClock{}},
	}
}

// join adds profile p of the scheduler c (Join). It watches p's hook
// templates (hookTemplateNamespaces, none: every namespace) for p's sizer;
// the first profile's join registers the informer handlers and builds the
// controllers, configured by cfg, which Run runs.
func (f *Feeder) join(ctx context.Context, c Cluster, p *Profile, hookTemplateNamespaces []string, cfg Config) error {
	first, err := f.add(p)
	if err != nil {
		return err
	}
	informers := c.SharedInformerFactory()
	if first {
		f.cluster = c
		if c.KubeConfig() == nil {
			f.arc.Store(arcAbsent) // no API to look ARC up in (unit tests)
		}
		f.reconcileEvery, f.noWorkflowPodGrace = cfg.ReconcileInterval, cfg.NoWorkflowPodGrace
		if informers == nil {
			// Unit tests without informers.
			f.synced = func() bool { return true }
			close(f.reconciled)
			return nil
		}
		f.pods = informers.Core().V1().Pods().Lister()
		f.nodes = informers.Core().V1().Nodes().Lister()
		if utilfeature.DefaultFeatureGate.Enabled(features.DRAExtendedResource) {
			classes := informers.Resource().V1().DeviceClasses()
			f.deviceClasses, f.deviceClassesSynced = classes.Lister(), classes.Informer().HasSynced
		}
	}
	if informers == nil {
		return nil
	}
	configMaps, err := f.hookTemplates(ctx, hookTemplateNamespaces)
	if err != nil {
		return err
	}
	p.Sizer.SetConfigMaps(configMaps)
	if !first {
		f.placeholders.Enable(p.ReservationMode)
		return nil
	}
	logger := klog.FromContext(ctx)
	synced, err := f.registerHandlers(logger)
	if err != nil {
		return err
	}
	f.synced = latch(synced)
	podIndexer := informers.Core().V1().Pods().Informer().GetIndexer()
	writes := writeClient(logger, c)
	f.pairPods = pairpod.New(writes, f.pods, podIndexer, f.leader,
		func(pod *v1.Pod, eventType, reason, note string) {
			if eventType == v1.EventTypeNormal {
				f.routineEvent(pod, reason, "PairPod", func() string { return note }) // one per waiting runner
				return
			}
			f.event(pod, eventType, reason, "PairPod", Truncate(note))
		})
	f.placeholders = placeholder.New(writes, podIndexer, f.leader,
		func(pod *v1.Pod, eventType, reason, note string) {
			f.event(pod, eventType, reason, "Placeholder", Truncate(note))
		},
		f.WantPlaceholder)
	f.placeholders.HandOver = handOverClient(logger, c)
	f.placeholders.Enable(p.ReservationMode)
	return nil
}

// Run runs the controllers the profiles' Joins built, on every replica
// (each writes and speaks only while its replica leads), until ctx ends:
// the pair-pod and placeholder workers, the reconciler, the reservation
// gauges and the EphemeralRunner watch. Call it once, after every profile
// joined (tandem-scheduler: after app.Setup built the profiles); the
// plugin schedules nothing until the reconciler's first pass. Without a
// profile that joined with informers it returns at once.
func (f *Feeder) Run(ctx context.Context) {
	if f.pairPods == nil {
		klog.FromContext(ctx).V(2).Info("No tandem profile joined with informers: no controllers to run")
		return
	}
	if !f.running.CompareAndSwap(false, true) {
		panic("controllers.Feeder.Run called twice")
	}
	go f.pairPods.Run(ctx)
	go f.placeholders.Run(ctx)
	go f.runReconciler(ctx)
	go f.speakWhenLeading(ctx)
	go f.watchJobs(ctx)
	go f.watchRejections(ctx)
	<-ctx.Done()
}

// The budget of tandem's own writes (pair pods, placeholders, their
// deletes): a client of their own, so that a burst of them never takes the
// scheduler's rate limit from its bindings, and a timeout on each request,
// so that a slow apiserver cannot hold a worker.
const (
	writeQPS     = 20
	writeBurst   = 40
	writeTimeout = 10 * time.Second
)

// writeClient returns the client of tandem's writes: the scheduler's
// connection with a rate limit and a timeout of their own; the
// scheduler's client where there is no config to copy (unit tests).
func writeClient(logger klog.Logger, c Cluster) clientset.Interface {
	return ownClient(logger, c, "tandem-writes", func(cfg *rest.Config) { cfg.QPS, cfg.Burst = writeQPS, writeBurst })
}

// handOverClient returns the client of the placeholder hand-overs at
// Permit (a get and a delete at most per workflow pod the scheduler binds):
// the scheduler's connection and budget with a rate limiter of its own. In
// the writes' budget a workflow pod waited behind every placeholder create
// queued before it, and ChurnPodsMode's throughput collapsed.
func handOverClient(logger klog.Logger, c Cluster) clientset.Interface {
	return ownClient(logger, c, "tandem-handover", func(*rest.Config) {})
}

// ownClient returns a client on the scheduler's connection with a rate
// limiter of its own, shaped by budget, a timeout per request and agent in
// its user agent; the scheduler's client where there is no config to copy
// (unit tests).
func ownClient(logger klog.Logger, c Cluster, agent string, budget func(*rest.Config)) clientset.Interface {
	cfg := c.KubeConfig()
	if cfg == nil {
		return c.ClientSet()
	}
	cfg = rest.CopyConfig(cfg)
	budget(cfg)
	cfg.Timeout, cfg.RateLimiter = writeTimeout, nil
	cfg.UserAgent = rest.DefaultKubernetesUserAgent() + "/" + agent
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		logger.Error(err, "Cannot make a client of tandem's own; it shares the scheduler's", "client", agent)
		return c.ClientSet()
	}
	return client
}

// add registers p; first says it is the first profile.
func (f *Feeder) add(p *Profile) (first bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first != nil && f.first.RunnerPodLabel != p.RunnerPodLabel {
		return false, fmt.Errorf("runnerPodLabel %q of profile %s differs from %q of profile %s: every tandem profile of a scheduler must use the same", p.RunnerPodLabel, p.Name, f.first.RunnerPodLabel, f.first.Name)
	}
	f.profiles[p.Name] = p
	if f.first == nil {
		f.first, f.runnerPodLabel = p, p.RunnerPodLabel
		return true, nil
	}
	return false, nil
}

// latch returns synced that, once it has reported true, reports true
// without asking again. PreFilter asks on every scheduling cycle, and an
// informer's HasSynced takes the lock of its queue, which the informer holds
// while it hands a batch of events to its handlers: in a busy cluster every
// cycle waited behind the pod informer's batches.
func latch(synced func() bool) func() bool {
	var done atomic.Bool
	return func() bool {
		if done.Load() {
			return true
		}
		if synced() {
			done.Store(true)
			return true
		}
		return false
	}
}

// Store is the reservation store the feeder keeps in step.
func (f *Feeder) Store() *reservations.Store { return f.store }

// Leader is the scheduler's leadership.
func (f *Feeder) Leader() *leadership.Leadership { return f.leader }

// Waiting keeps the pods the plugin turned away.
func (f *Feeder) Waiting() *WaitingPods { return &f.waiting }

// PairPods keeps the pair pods of waiting runners (nil without informers).
func (f *Feeder) PairPods() *pairpod.Controller { return f.pairPods }

// Placeholders keeps the placeholders of bound runners (nil without
// informers).
func (f *Feeder) Placeholders() *placeholder.Controller { return f.placeholders }

// Pods lists the scheduler's pods (nil without informers).
func (f *Feeder) Pods() corelisters.PodLister { return f.pods }

// UsePods has the feeder read pods through l, for tests that hand the
// informer handlers pods themselves, in an order of their choosing.
func (f *Feeder) UsePods(l corelisters.PodLister) { f.pods = l }

// Synced reports whether the informer handlers have seen every existing pod
// and node: the reservations recorded on runners are rebuilt.
func (f *Feeder) Synced() bool { return f.synced() }

// Reconciled is closed after the reconciler's first pass.
func (f *Feeder) Reconciled() <-chan struct{} { return f.reconciled }

// ProfileOf returns the tandem profile that schedules pod, or nil if no
// tandem profile does.
func (f *Feeder) ProfileOf(pod *v1.Pod) *Profile {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.profiles[pod.Spec.SchedulerName]
}

// trusted reports whether a recorded reservation on pod may hold room: the
// pod is a runner of a tandem profile of this scheduler, and no pod that
// ARC's EphemeralRunners show is not theirs.
func (f *Feeder) trusted(pod *v1.Pod) bool {
	return f.isRunner(pod) && f.ownership(pod).MayHoldRoom()
}

// isRunner reports whether pod is a runner of a tandem profile of this
// scheduler, whatever ARC's EphemeralRunners say: for cleaning up after it.
func (f *Feeder) isRunner(pod *v1.Pod) bool {
	owner := f.ProfileOf(pod)
	return owner != nil && owner.IsRunner(pod)
}

// runnerOf returns the runner a workflow pod names, if it carries the label.
func (f *Feeder) runnerOf(pod *v1.Pod) (types.NamespacedName, bool) {
	name, ok := pod.Labels[f.runnerPodLabel]
	if !ok || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: pod.Namespace, Name: name}, true
}

// firstProfile returns the profile whose informer handlers feed the store.
func (f *Feeder) firstProfile() *Profile {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.first
}

// recorder returns the event recorder for pod: its profile's, else the
// first profile's. It returns nil on a replica that does not lead: only the
// leader speaks for the cluster.
func (f *Feeder) recorder(pod *v1.Pod) events.EventRecorder {
	if !f.leader.IsLeader() {
		return nil
	}
	if p := f.ProfileOf(pod); p != nil {
		return p.Recorder
	}
	return f.firstProfile().Recorder
}

// event records an event on pod if this replica leads.
func (f *Feeder) event(pod *v1.Pod, eventType, reason, action, note string) {
	if rec := f.recorder(pod); rec != nil {
		rec.Eventf(pod, nil, eventType, reason, action, "%s", note)
	}
}

// warn sends a Warning event on pod (its note truncated to what an event
// keeps) if this replica leads.
func (f *Feeder) warn(pod *v1.Pod, reason, action, note string) {
	f.event(pod, v1.EventTypeWarning, reason, action, Truncate(note))
}

// warnOnce is Warn for a Warning that every retry of the pod would repeat:
// the pod is told once per reason, by the leader.
func (f *Feeder) warnOnce(pod *v1.Pod, reason, action, note string) {
	if f.leader.IsLeader() && f.firstWarning(pod.UID, reason) {
		f.warn(pod, reason, action, note)
	}
}

// routineEvent sends a Normal event that every job would produce (a
// reservation taken, claimed, released as planned; a pair pod created for a
// waiting runner) if the pod's profile (else the first) has
// reservationEvents on. Each is an API write, an Event with a TTL lease in
// etcd, per job; the reservation is on the runner's record
// (contract.ReservationAnnotation) whatever this says. note is built only
// for an event that is sent.
func (f *Feeder) routineEvent(pod *v1.Pod, reason, action string, note func() string) {
	owner := f.ProfileOf(pod)
	if owner == nil {
		owner = f.firstProfile()
	}
	if owner.ReservationEvents {
		f.event(pod, v1.EventTypeNormal, reason, action, Truncate(note()))
	}
}

// setNominated notes whether the runner is nominated to a node and unbound.
func (f *Feeder) setNominated(uid types.UID, nominated bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if nominated {
		f.nominated[uid] = true
	} else {
		delete(f.nominated, uid)
	}
}

// anyNominated reports whether some runner is nominated and not bound.
func (f *Feeder) anyNominated() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.nominated) > 0
}

// release marks the runners whose reservation went with their node.
func (f *Feeder) release(uids ...types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, uid := range uids {
		f.released[uid] = true
	}
}

// wasReleased reports whether the runner's reservation went with its node.
func (f *Feeder) wasReleased(uid types.UID) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.released[uid]
}

func (f *Feeder) setEphemeralRunners(l cache.GenericLister) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ephemeralRunners = l
}

func (f *Feeder) ephemeralRunnerLister() cache.GenericLister {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.ephemeralRunners
}

// forget drops what is kept about a pod that is gone.
func (f *Feeder) forget(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.released, uid)
	delete(f.nominated, uid)
	delete(f.warned, uid)
}

// firstWarning reports whether the pod has not been sent a Warning with
// reason yet, and notes that it has now.
func (f *Feeder) firstWarning(uid types.UID, reason string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.warned[uid][reason] {
		return false
	}
	if f.warned[uid] == nil {
		f.warned[uid] = map[string]bool{}
	}
	f.warned[uid][reason] = true
	return true
}

// WantPlaceholder is the placeholder the runner incarnation should have, and
// the runner pod: one while its profile holds reservations with pods, the
// runner is bound (or its binding is in flight) and its reservation waits
// for a workflow pod.
func (f *Feeder) WantPlaceholder(key podworker.RunnerKey) (*v1.Pod, *v1.Pod) {
	runner, err := f.pods.Pods(key.Namespace).Get(key.Name)
	if err != nil || runner.UID != key.UID {
		return nil, nil
	}
	if runner.DeletionTimestamp != nil || contract.IsTerminal(runner) {
		return runner, nil
	}
	owner := f.ProfileOf(runner)
	if owner == nil || owner.ReservationMode != config.ReservationModePods {
		return runner, nil
	}
	nn := types.NamespacedName{Namespace: key.Namespace, Name: key.Name}
	r, ok := f.store.Get(nn)
	if !ok || r.RunnerUID != key.UID || r.UsedUp() || r.ClaimedBy() != "" {
		return runner, nil
	}
	// A runner not shown bound yet has its placeholder only while its
	// binding is in flight: its reservation is assumed, not bound (Bind
	// creates the placeholder, then binds). Bound, on the reservation's
	// node.
	if bound := runner.Spec.NodeName; (bound == "" && r.Bound()) || (bound != "" && bound != r.Node) {
		return runner, nil
	}
	for _, wf := range f.WorkflowPods(nn) {
		if !r.Owns(wf) || contract.IsTerminal(wf) || !contract.MayClaimOn(wf, r.Node) {
			continue // not the runner's workflow pod, or one on another node: an ordinary pod
		}
		if wf.Spec.NodeName == "" {
			if p := f.ProfileOf(wf); p != nil && p.handover.Load() {
				continue // it takes the placeholder's room at Permit
			}
			if !contract.PinnedTo(wf, r.Node) {
				// It may go anywhere and takes the room only once bound
				// there: a labelled pod pending forever must not free it.
				continue
			}
		}
		return runner, nil // it takes the room: the placeholder yields
	}
	hold := f.placeholderHold(&r)
	if hold.IsZero() {
		return runner, nil
	}
	return runner, placeholder.For(runner, r.Node, hold, owner.PlaceholderImage)
}

// placeholderHold is what r's placeholder requests: what r holds, without
// the extended resources its node's allocatable does not list, or lists at
// 0 (a removed device plugin's, for which the kubelet would reject the
// placeholder). Those are DRA devices (KEP-5004): a pod's request holds one
// only through a claim the scheduler allocated for it, and a placeholder,
// bound by tandem, has none (the kubelet admits it all the same: it ignores
// extended resources its node does not list). Counted in the placeholder,
// the device would be taken off the reservation's hold (the hold rule
// counts what the placeholder requests as held by the node) and held by
// nobody; left out, tandem's accounting holds it, as in reservationMode
// Memory.
func (f *Feeder) placeholderHold(r *reservations.Reservation) contract.Amount {
	hold, _ := r.Holds(contract.RunnerPods{})
	hold.Pods = 0
	if len(hold.Scalar) == 0 || f.nodes == nil {
		return hold
	}
	node, err := f.nodes.Get(r.Node)
	if err != nil {
		return hold
	}
	var kept map[v1.ResourceName]int64
	for name, v := range hold.Scalar {
		if q, listed := node.Status.Allocatable[name]; listed && !q.IsZero() {
			if kept == nil {
				kept = map[v1.ResourceName]int64{}
			}
			kept[name] = v
		}
	}
	hold.Scalar = kept
	return hold
}
