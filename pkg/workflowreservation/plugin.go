// Package workflowreservation implements the WorkflowReservation scheduler
// plugin: an ARC runner pod and the workflow pod it will create later are
// placed as one group. The runner only lands where both fit, room for the
// workflow pod is reserved on that node when the runner is placed, other pods
// cannot take it, and the workflow pod claims it. The extension points are
// in this file, in the order the framework calls them; the model, sizing and
// the controllers that feed the model are packages of their own
// (pkg/reservations, pkg/sizing, pkg/controllers).
package workflowreservation

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/apis/config/validation"
	"github.com/tandem-scheduler/tandem/pkg/controllers"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

const (
	// Name is the name of the plugin used in the plugin registry and configurations.
	Name = "WorkflowReservation"

	// stateKey is the one value this plugin keeps in a cycle's
	// CycleState: PreFilter writes it, the later extension points fill in
	// what they decided (cycleState).
	stateKey = Name
)

// The extension points, in the order the framework calls them.
var (
	_ fwk.PreFilterPlugin     = &WorkflowReservation{}
	_ fwk.PreFilterExtensions = &WorkflowReservation{}
	_ fwk.FilterPlugin        = &WorkflowReservation{}
	_ fwk.PostFilterPlugin    = &WorkflowReservation{}
	_ fwk.PreScorePlugin      = &WorkflowReservation{}
	_ fwk.ScorePlugin         = &WorkflowReservation{}
	_ fwk.ReservePlugin       = &WorkflowReservation{}
	_ fwk.PermitPlugin        = &WorkflowReservation{}
	_ fwk.BindPlugin          = &WorkflowReservation{}
	_ fwk.PostBindPlugin      = &WorkflowReservation{}
	_ fwk.EnqueueExtensions   = &WorkflowReservation{}
)

// WorkflowReservation is the plugin: one instance per profile that enables
// it, all of one scheduler joined to the same Controllers.
type WorkflowReservation struct {
	handle fwk.Handle
	// pods says what a pod is to tandem, room holds room for workflow
	// pods: the two seams of this profile's controllers.
	pods controllers.Classifier
	room controllers.Holder
	// store is room's, read on every cycle.
	store *reservations.Store
	// profile is the profile's name; mode its reservationMode.
	profile        string
	mode           string
	runnerPodLabel string
	scoring        config.ScoringStrategy
	pairPods       bool
	// jobsWatched: the scheduler has informers, so a step pod's Job may
	// name its runner (hooks v0.7.0).
	jobsWatched bool
	// index finds the store's entry of a node of the snapshot; one for
	// every profile of the scheduler.
	index *nodeIndexRef
	// signed is what the last PreFilter found of its pod, for SignPod.
	signed atomic.Pointer[signedPod]
	// dra: the scheduler gives extended resources that a DeviceClass maps
	// to DRA devices; devices tells a device's class (dra.go).
	dra     bool
	devices *deviceMatcher
	// handoverState: with Pods, the in-tree Fit this plugin runs.
	handoverState
	// lifetime is the context the framework made the plugin in, done when
	// the scheduler stops: what the plugin starts on its own (Permit's
	// hand-over) ends with it.
	lifetime context.Context
}

// Controllers is what the plugin's instances of one scheduler join: one
// per scheduler, built and run by its command (controllers.Feeder). Join
// returns the joining profile's two seams.
type Controllers interface {
	Join(ctx context.Context, c controllers.Cluster, recorder events.EventRecorder, profile string, args *config.WorkflowReservationArgs) (controllers.Classifier, controllers.Holder, error)
}

// New initializes a plugin that leads always, shares its reservations with
// no other profile and runs its own controllers until ctx ends: a scheduler
// without leader election and with one tandem profile, for a harness that
// takes only a registry (scheduler_perf). tandem-scheduler uses NewFactory.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	c := controllers.NewFeeder(nil)
	pl, err := newPlugin(ctx, obj, h, c, &nodeIndexRef{})
	if err != nil {
		return nil, err
	}
	go c.Run(ctx)
	return pl, nil
}

// NewFactory returns the plugin factory of one scheduler: the instances it
// creates (one per profile) join c and share its reservations. The caller
// runs c once the scheduler's profiles are built; until c's first
// reconcile the plugin schedules nothing.
func NewFactory(c Controllers) frameworkruntime.PluginFactory {
	// One index of the scheduler's nodes for every profile: they share the
	// snapshot and the store.
	index := &nodeIndexRef{}
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return newPlugin(ctx, obj, h, c, index)
	}
}

// newPlugin initializes the plugin from its args and joins it to c; the
// first instance of a scheduler registers c's informer handlers, which
// rebuild the reservations recorded on runner pods.
func newPlugin(ctx context.Context, obj runtime.Object, h fwk.Handle, c Controllers, index *nodeIndexRef) (fwk.Plugin, error) {
	args, ok := obj.(*config.WorkflowReservationArgs)
	if !ok {
		return nil, fmt.Errorf("want args to be of type WorkflowReservationArgs, got %T", obj)
	}
	if err := validation.ValidateWorkflowReservationArgs(nil, args); err != nil {
		return nil, err
	}
	for _, w := range validation.WarningsForWorkflowReservationArgs(args) {
		klog.FromContext(ctx).Info("Warning: WorkflowReservation args", "profile", fwk.ProfileName(h), "warning", w)
	}
	pl := &WorkflowReservation{
		handle:         h,
		index:          index,
		profile:        fwk.ProfileName(h),
		mode:           args.ReservationMode,
		runnerPodLabel: args.RunnerPodLabel,
		scoring:        *args.ScoringStrategy,
		pairPods:       args.PairPods,
		jobsWatched:    h.SharedInformerFactory() != nil,
		dra:            draEnabled(h),
		devices:        newDeviceMatcher(),
		lifetime:       ctx,
	}
	var err error
	if pl.fit, err = newFit(ctx, h); err != nil {
		return nil, err
	}
	metrics.Register()
	if pl.pods, pl.room, err = c.Join(ctx, h, h.EventRecorder(), pl.profile, args); err != nil {
		return nil, err
	}
	pl.store = pl.room.Store()
	return pl, nil
}

// Name returns the plugin name.
func (pl *WorkflowReservation) Name() string { return Name }

// podKind is what a pod is to tandem (controllers.Kind).
type podKind = controllers.Kind

const (
	kindOther    = controllers.Other
	kindRunner   = controllers.Runner
	kindWorkflow = controllers.Workflow
	kindStep     = controllers.Step
)

// cycleState is what one scheduling cycle knows about the pod. PreFilter
// writes it (PreScore, for a pod PreFilter skipped); PreScore, Reserve and
// Bind fill in their parts, after any clone the framework makes for
// preemption or nominated pods (Filter's).
type cycleState struct {
	kind    podKind
	request contract.Amount
	// runner: the workflow pod's size (step headroom included) and where
	// it came from, the headroom, the host ports to hold, the hook mode.
	workflow contract.Amount
	source   contract.Source
	step     contract.Amount
	ports    []contract.HostPort
	hookMode string
	// hostPorts are the host ports the pod itself asks for.
	hostPorts []contract.HostPort
	// rejected is set when this plugin's Filter turned the pod away from
	// some node: only then can the plugin's releases of room help it, and
	// only then does PostFilter remember it for activation.
	rejected *atomic.Bool
	// releases is WaitingPods.Releases() when the cycle began.
	releases uint64
	// workflow: the runner whose reservation the pod claims.
	runner types.NamespacedName
	own    reservations.Reservation
	// adjust is what the framework's AddPod and RemovePod changed in this
	// copy of the cycle state (preemption dry runs, nominated pods).
	adjust adjustments
	// nonZero is the pod's request as Score counts it (nonZeroRequest).
	nonZero contract.Amount
	// need is what the pod brings to a node, for Score (PreScore): its
	// request, plus its workflow pod's for a runner. Its cpu and memory
	// count a container that requests none as NodeResourcesFit does
	// (nonZeroRequest).
	need contract.Amount
	// pair is a runner's request with its workflow pod's.
	pair contract.Amount
	// dra: the DRA devices behind the extended resources the pod (or its
	// pair) asks for, where a DeviceClass maps them (dra.go); nil for most.
	dra *draRoom
	// noneHeld: an ordinary pod or a runner, nothing held anywhere and no
	// runner nominated when the cycle began: Filter and Score read no held
	// room unless the framework added a nominated runner to this copy of
	// the state (adjust; the informer may not show its nomination yet). For
	// an ordinary pod Filter then runs the Fit only; PreFilter skips it
	// where the profile runs the stock Fit.
	noneHeld bool

	// What Reserve changed, for Unreserve, Permit and PostBind: the
	// reservation a runner's cycle put into the store (taken), or a
	// workflow pod's claim.
	taken     *reservations.Reservation
	claimed   bool
	wasUsedUp bool
	// recorded: this plugin's Bind bound the runner with its record.
	recorded bool
}

// Clone copies the state: AddPod and RemovePod change a clone's adjustments.
func (s *cycleState) Clone() fwk.StateData {
	c := *s
	c.adjust = s.adjust.clone()
	return &c
}

func getCycleState(cs fwk.CycleState) (*cycleState, error) {
	c, err := cs.Read(stateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycleState: %w", stateKey, err)
	}
	s, ok := c.(*cycleState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to workflowreservation.cycleState error", c)
	}
	return s, nil
}

// PreFilter asks what the pod is to tandem (a runner and its workflow pod's
// size, a workflow or step pod and the reservation it claims, or neither)
// and narrows a pinned workflow pod to its reservation's node.
func (pl *WorkflowReservation) PreFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	v := pl.pods.Classify(ctx, pod)
	switch {
	case v.Err != nil:
		return nil, fwk.AsStatus(v.Err)
	case v.Wait != "" && v.Unresolvable:
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, v.Wait)
	case v.Wait != "":
		return nil, fwk.NewStatus(fwk.Unschedulable, v.Wait)
	}
	ownsFit := pl.ownsFit()
	if ownsFit {
		if _, status := pl.fit.PreFilter(ctx, cs, pod, nodes); !status.IsSuccess() {
			return nil, status
		}
	}
	s := &cycleState{kind: v.Kind, runner: v.Runner, own: v.Reservation,
		workflow: v.Workflow, source: v.Source, step: v.Step, ports: v.Ports, hookMode: v.HookMode,
		releases: pl.room.Releases()}
	if (s.kind == kindOther || s.kind == kindRunner) && pl.room.NoneHeld() {
		if s.kind == kindOther && !ownsFit {
			pl.signed.Store(&signedPod{pod: pod})
			return nil, fwk.NewStatus(fwk.Skip)
		}
		// Filter and Score read no held room: the Fit, and for a runner
		// the pair, are all there is to check.
		s.noneHeld = true
	}
	pl.index.update(pl.store, nodes)
	s.request = reservations.PodAmount(pod)
	if s.kind == kindRunner {
		s.pair = s.request.Add(s.workflow)
		s.dra = pl.draRoomFor(s.pair, false)
	} else {
		s.dra = pl.draRoomFor(s.request, true)
	}
	s.nonZero = nonZeroRequest(pod)
	s.hostPorts = podHostPorts(pod)
	s.rejected = &atomic.Bool{}
	cs.Write(stateKey, s)
	pl.signed.Store(&signedPod{pod: pod, s: s})
	var result *fwk.PreFilterResult
	if v.PinnedTo != "" {
		result = &fwk.PreFilterResult{NodeNames: sets.New(v.PinnedTo)}
	}
	return result, nil
}

// signedPod is what the last PreFilter of a profile found of its pod, for
// SignPod, which the framework calls next in the same cycle (opportunistic
// batching): s is nil for a pod PreFilter skipped.
type signedPod struct {
	pod *v1.Pod
	s   *cycleState
}

// Filter counts the room reserved on the node (other than the pod's own
// reservation) as used, and requires room for a runner's workflow pod too.
func (pl *WorkflowReservation) Filter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := getCycleState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if pl.ownsFit() {
		if status := pl.fitFilter(ctx, cs, s, pod, nodeInfo); !status.IsSuccess() {
			return status
		}
	}
	if s.noneHeld && s.kind == kindOther && s.adjust.empty() {
		return nil
	}
	status := pl.filter(s, nodeInfo)
	if !status.IsSuccess() {
		s.rejected.Store(true)
	}
	return status
}

func (pl *WorkflowReservation) filter(s *cycleState, nodeInfo fwk.NodeInfo) *fwk.Status {
	var held reservations.Held
	if !s.noneHeld || !s.adjust.empty() {
		held = pl.reservedOn(s, nodeInfo)
	}
	if len(held.Ports) > 0 && portConflict(s.hostPorts, nodeInfo, held.Ports) && !portConflict(s.hostPorts, nodeInfo, nil) {
		// Ports the node's pods use are NodePorts' to report.
		return fwk.NewStatus(fwk.Unschedulable, contract.ErrReasonPortReserved)
	}
	switch s.kind {
	case kindRunner:
		if !fits(s.pair, held.Amount, nodeInfo, s.dra) {
			return fwk.NewStatus(fwk.Unschedulable, contract.ErrReasonPairDoesNotFit)
		}
		if portConflict(s.ports, nodeInfo, held.Ports) {
			return fwk.NewStatus(fwk.Unschedulable, contract.ErrReasonPortsTaken)
		}
	case kindWorkflow:
		if !fits(s.request, held.Amount, nodeInfo, s.dra) {
			return fwk.NewStatus(fwk.Unschedulable, contract.ErrReasonWorkflowDoesNotFit)
		}
	default:
		if held.Amount.IsZero() {
			return nil
		}
		if !fits(s.request, held.Amount, nodeInfo, s.dra) {
			return fwk.NewStatus(fwk.Unschedulable, contract.ErrReasonRoomReserved)
		}
	}
	return nil
}

// PostFilter explains a runner or workflow pod that fits nowhere, naming
// what it needs. Preemption is DefaultPreemption's, which runs first; it
// sees reservations through PreFilterExtensions.
func (pl *WorkflowReservation) PostFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	s, err := getCycleState(cs)
	if err != nil {
		// PreFilter skipped the pod: nothing to explain.
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if s.rejected != nil && s.rejected.Load() {
		if pl.room.TurnedAway(pod, s.releases) {
			klog.FromContext(ctx).V(4).Info("Reserved room was freed during the pod's scheduling cycle; activating it", "pod", klog.KObj(pod))
			pl.handle.Activate(klog.FromContext(ctx), map[string]*v1.Pod{pod.Namespace + "/" + pod.Name: pod})
		}
		if s.kind == kindRunner && pl.pairPods {
			// Some node turned the runner away for its workflow pod only:
			// an autoscaler would judge the runner schedulable there.
			pl.room.AskPairRoom(pod, s.request, s.workflow, append(append([]contract.HostPort(nil), s.hostPorts...), s.ports...))
		}
	}
	logger := klog.FromContext(ctx)
	switch s.kind {
	case kindRunner:
		if loggerV := logger.V(4); loggerV.Enabled() {
			loggerV.Info("Runner fits no node together with its workflow pod", "pod", klog.KObj(pod), "request", s.request.String(), "workflow", s.workflow.String())
		}
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
			"runner %s needs %s and its workflow pod %s (from %s); no node has room for both",
			klog.KObj(pod), s.request, s.workflow, s.source))
	case kindWorkflow:
		if hold := pl.room.Placeholder(s.runner, s.own.RunnerUID); hold != nil && !pl.handover() {
			// The stock Fit counts the placeholder: it is being deleted
			// (tandem-webhook, or the worker nudged here), and its delete
			// requeues the pod.
			pl.room.CheckPlaceholder(s.runner, s.own.RunnerUID)
			logger.V(4).Info("Workflow pod waits for its runner's placeholder to yield", "pod", klog.KObj(pod), "runner", s.runner, "placeholder", klog.KObj(hold))
			return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
				"workflow pod of runner %s waits for placeholder %s, which holds its room on node %s, to be deleted",
				s.runner, hold.Name, s.own.Node))
		}
		if loggerV := logger.V(4); loggerV.Enabled() {
			loggerV.Info("Workflow pod does not fit beside its reservation", "pod", klog.KObj(pod), "runner", s.runner, "node", s.own.Node, "request", s.request.String(), "reserved", s.own.Size.String())
		}
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
			"workflow pod of runner %s needs %s; its reservation on node %s holds %s and the node has too little free room for the difference",
			s.runner, s.request, s.own.Node, s.own.Size))
	}
	return nil, fwk.NewStatus(fwk.Unschedulable)
}

// PreScore prepares Score; for a pod PreFilter skipped (no reservations
// anywhere) it only needs the pod's request.
func (pl *WorkflowReservation) PreScore(_ context.Context, cs fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	s, err := getCycleState(cs)
	if err != nil {
		s = &cycleState{nonZero: nonZeroRequest(pod)}
		cs.Write(stateKey, s)
	}
	s.need = s.nonZero
	if s.kind == kindRunner {
		s.need = s.need.Add(s.workflow)
	}
	return nil
}

// Score ranks nodes by allocation with reserved room counted as used, the
// way NodeResourcesFit ranks them without reservations (its formulas, and
// its non-zero cpu and memory of best-effort pods): LeastAllocated spreads,
// MostAllocated bin-packs. A runner is scored with its workflow pod. A
// workflow pod that is not pinned to a node prefers its runner's.
func (pl *WorkflowReservation) Score(_ context.Context, cs fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, err := getCycleState(cs)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	if s.kind == kindWorkflow && nodeInfo.Node().Name == s.own.Node {
		return fwk.MaxNodeScore, nil
	}
	used := s.need
	if !s.noneHeld || !s.adjust.empty() {
		used = used.Add(pl.reservedOn(s, nodeInfo).Amount)
	}
	// NodeResourcesFit's accounting: cpu and memory with best-effort
	// containers at the defaults, every other resource as requested.
	alloc, requested, nonZero := nodeInfo.GetAllocatable(), nodeInfo.GetRequested(), nodeInfo.GetNonZeroRequested()

	var total, weights int64
	for _, r := range pl.scoring.Resources {
		var capacity, inUse int64
		switch name := v1.ResourceName(r.Name); name {
		case v1.ResourceCPU:
			capacity, inUse = alloc.GetMilliCPU(), nonZero.GetMilliCPU()+used.MilliCPU
		case v1.ResourceMemory:
			capacity, inUse = alloc.GetMemory(), nonZero.GetMemory()+used.Memory
		case v1.ResourceEphemeralStorage:
			capacity, inUse = alloc.GetEphemeralStorage(), requested.GetEphemeralStorage()+used.EphemeralStorage
		default:
			if s.need.Scalar[name] == 0 {
				continue // as NodeResourcesFit: a resource the pod does not ask for does not rank nodes
			}
			capacity, inUse = alloc.GetScalarResources()[name], requested.GetScalarResources()[name]+used.Scalar[name]
		}
		if capacity == 0 {
			continue // the node does not offer it: it does not rank nodes
		}
		inUse = max(inUse, 0)
		// NodeResourcesFit's leastRequestedScore and mostRequestedScore,
		// rounding included.
		var score int64
		if pl.scoring.Type == config.LeastAllocated {
			if inUse <= capacity {
				score = (capacity - inUse) * fwk.MaxNodeScore / capacity
			}
		} else {
			score = min(inUse, capacity) * fwk.MaxNodeScore / capacity
		}
		total += score * r.Weight
		weights += r.Weight
	}
	if weights == 0 {
		return 0, nil
	}
	return total / weights, nil
}

// ScoreExtensions returns nil: scores are already in [0, MaxNodeScore].
func (pl *WorkflowReservation) ScoreExtensions() fwk.ScoreExtensions { return nil }

// Reserve takes the runner's reservation on the node, or hands a workflow
// pod's reservation over to it.
func (pl *WorkflowReservation) Reserve(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	s, err := getCycleState(cs)
	if err != nil {
		return nil // skipped at PreFilter
	}
	logger := klog.FromContext(ctx)
	switch s.kind {
	case kindRunner:
		runner := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		if r, ok := pl.store.Get(runner); ok && r.RunnerUID == pod.UID && r.Bound() {
			// A bind that reported failure went through, and the queue
			// had not seen it: the runner is bound with its reservation.
			return fwk.AsStatus(fmt.Errorf("runner %s is already bound to node %s with its reservation", klog.KObj(pod), r.Node))
		}
		taken := &reservations.Reservation{
			Runner:        runner,
			RunnerUID:     pod.UID,
			RunnerCreated: pod.CreationTimestamp.Time,
			Node:          nodeName,
			Size:          s.workflow,
			Step:          s.step,
			Ports:         s.ports,
			Source:        s.source,
			HookMode:      s.hookMode,
			ReservedAt:    time.Now(),
		}
		pl.room.Take(ctx, pod, taken)
		s.taken = taken
		if loggerV := logger.V(4); loggerV.Enabled() {
			loggerV.Info("Assumed workflow reservation", "runner", klog.KObj(pod), "node", nodeName, "size", s.workflow.String())
		}
	case kindWorkflow:
		// Only on the reserved node does it claim. Elsewhere (an unpinned
		// workflow pod that another node suited better) it is an ordinary
		// pod, and the room stays held for the runner: whoever may create
		// pods in the namespace may label one with the runner's name.
		s.claimed, s.wasUsedUp = pl.room.Claim(s.runner, s.own.RunnerUID, pod.UID, nodeName)
		if !s.claimed && nodeName != s.own.Node {
			logger.V(2).Info("Workflow pod scheduled to another node than its runner's reservation; it claims nothing", "pod", klog.KObj(pod), "runner", s.runner, "node", nodeName, "reservedNode", s.own.Node)
			pl.room.WarnOnce(pod, contract.ReasonNoReservation, "Scheduling",
				fmt.Sprintf("Scheduled to node %s, not to node %s where runner %s's room is reserved: it claims nothing, and the room stays held for the runner", nodeName, s.own.Node, s.runner.Name))
		}
	}
	return nil
}

// Unreserve undoes Reserve; it is idempotent. It leaves alone what the
// informer has since shown bound: a bind that reported a failure may still
// have gone through.
func (pl *WorkflowReservation) Unreserve(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) {
	s, err := getCycleState(cs)
	if err != nil {
		return
	}
	logger := klog.FromContext(ctx)
	switch s.kind {
	case kindRunner:
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		if s.taken == nil {
			return
		}
		// Only the reservation this cycle took, and only while the
		// informer has not shown it bound.
		if pl.room.Return(s.taken) {
			logger.V(4).Info("Returned workflow reservation", "runner", klog.KObj(pod), "node", s.taken.Node)
		} else if r, ok := pl.store.Get(key); ok && r.RunnerUID == pod.UID {
			logger.V(2).Info("Binding reported a failure but the runner is bound; keeping its reservation", "runner", klog.KObj(pod), "node", r.Node)
		}
	case kindWorkflow:
		if !s.claimed {
			return
		}
		pl.room.Unclaim(s.runner, s.own.RunnerUID, pod.UID, s.wasUsedUp)
	}
}

// permitTimeout bounds the wait for a placeholder's delete.
const permitTimeout = 30 * time.Second

// Permit has a workflow pod wait while its runner's placeholder is
// deleted, then lets it be bound. It always waits in reservationMode Pods:
// the placeholder may be being created, or created and not yet shown by the
// informer, and binding next to it would take its room twice.
func (pl *WorkflowReservation) Permit(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) (*fwk.Status, time.Duration) {
	s, err := getCycleState(cs)
	if err != nil || s.kind != kindWorkflow || !s.claimed {
		return nil, 0 // this cycle did not claim: nothing to hand over
	}
	if !pl.room.MayHavePlaceholder(s.runner, s.own.RunnerUID) {
		return nil, 0
	}
	// Before Permit returns: an Unreserve of this cycle comes after it.
	pl.room.StartYield(s.own.RunnerUID)
	logger := klog.FromContext(ctx)
	go func() {
		ctx, cancel := context.WithTimeout(pl.lifetime, permitTimeout)
		defer cancel()
		hold, err := pl.room.Yield(ctx, s.runner, s.own.RunnerUID)
		// The framework registers the waiting pod once Permit returns.
		var waiting fwk.WaitingPod
		_ = wait.PollUntilContextCancel(ctx, 5*time.Millisecond, true, func(context.Context) (bool, error) {
			waiting = pl.handle.GetWaitingPod(pod.UID)
			return waiting != nil, nil
		})
		if waiting == nil {
			return
		}
		if err != nil {
			logger.Error(err, "Cannot delete the placeholder that holds the workflow pod's room; retrying the pod", "pod", klog.KObj(pod), "runner", s.runner)
			waiting.Reject(Name, controllers.Truncate(fmt.Sprintf("cannot delete the placeholder of runner %s: %v", s.runner.Name, err)))
			return
		}
		if hold != nil {
			logger.V(2).Info("Placeholder yielded to its workflow pod", "pod", klog.KObj(pod), "placeholder", klog.KObj(hold), "node", nodeName)
		}
		waiting.Allow(Name)
	}()
	return fwk.NewStatus(fwk.Wait, "waiting for the placeholder of runner "+s.runner.Name+" to be deleted"), permitTimeout
}

// Bind binds a runner and records its reservation in the same request: the
// apiserver copies a Binding's annotations onto the pod, so a runner is never
// bound without its reservation, nor recorded without being bound, and it
// costs no API call beyond the binding. Other pods are left to DefaultBinder.
// The profile must run this Bind before DefaultBinder (enable the plugin at
// the bind extension point too); otherwise PostBind warns that the
// reservation is not recorded.
func (pl *WorkflowReservation) Bind(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	s, err := getCycleState(cs)
	if err != nil || s.kind != kindRunner {
		return fwk.NewStatus(fwk.Skip)
	}
	r, ok := pl.store.Get(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	if !ok || r.RunnerUID != pod.UID || r.Node != nodeName {
		return fwk.AsStatus(fmt.Errorf("reservation of runner %s on node %s is gone", klog.KObj(pod), nodeName))
	}
	value, err := reservations.Encode(&r)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if pl.mode == config.ReservationModePods {
		// Through the scheduler's own client: bindings and placeholders
		// share the budget the operator gave the scheduler, two writes per
		// runner, and the room is held on the node for the kubelet, other
		// schedulers and autoscalers from the moment the runner is bound.
		// A create that fails is the placeholder worker's to retry once the
		// runner shows bound.
		if err := pl.room.PlaceBeforeBinding(ctx, pl.handle.ClientSet(), pod, &r); err != nil {
			klog.FromContext(ctx).V(2).Info("Cannot create the placeholder before the runner's binding; the placeholder worker retries once it is bound",
				"runner", klog.KObj(pod), "node", r.Node, "err", err)
		}
	}
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			Annotations: map[string]string{contract.ReservationAnnotation: value}},
		Target: v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if cacher := pl.handle.APICacher(); cacher != nil {
		onFinish, err := cacher.BindPod(binding)
		if err == nil {
			err = cacher.WaitOnFinish(ctx, onFinish)
		}
		if err != nil {
			return fwk.AsStatus(err)
		}
	} else if err := pl.handle.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fwk.AsStatus(err)
	}
	s.recorded = true
	return nil
}

// PostBind reports the reservation taken or claimed.
func (pl *WorkflowReservation) PostBind(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) {
	s, err := getCycleState(cs)
	if err != nil {
		return
	}
	logger := klog.FromContext(ctx)
	switch s.kind {
	case kindRunner:
		if !s.recorded {
			pl.warnBoundElsewhere(ctx, pod, nodeName)
		}
		if logger := logger.V(2); logger.Enabled() {
			// The hook mode shows here and in the event only: the record does not carry it.
			logger.Info("Reserved room for the workflow pod", "runner", klog.KObj(pod), "node", nodeName, "size", s.workflow.String(), "source", s.source,
				"stepRequests", s.step.String(), "hostPorts", portList(s.ports), "hookMode", s.hookMode)
		}
		pl.room.RoutineEvent(pod, contract.ReasonReserved, "Reserve", func() string { return reservedNote(s, nodeName) })
	case kindWorkflow:
		if !s.claimed {
			return // it claimed nothing (scheduled to another node, or claimed by another)
		}
		pl.room.Claimed(s.own)
		logger.V(2).Info("Workflow pod claimed its reservation", "pod", klog.KObj(pod), "runner", s.runner, "node", nodeName)
		pl.room.RoutineEvent(pod, contract.ReasonClaimed, "Claim", func() string {
			return fmt.Sprintf("Claimed the reservation of runner %s on node %s", s.runner.Name, nodeName)
		})
	}
}

// warnBoundElsewhere is PostBind's word for a profile in which another bind
// plugin bound the runner: its reservation is held in memory but not
// recorded on the pod, so a restart or a leader change loses it. The runner
// is told (a Warning event) and the log says how to fix the profile: a
// runner without a record holds nothing after a restart (the reconciler
// cannot tell it from a pod tandem never bound).
func (pl *WorkflowReservation) warnBoundElsewhere(ctx context.Context, pod *v1.Pod, nodeName string) {
	logger := klog.FromContext(ctx)
	warnBinderOrder.Do(func() {
		logger.Error(nil, "Another bind plugin bound a runner before WorkflowReservation: reservations are not recorded on runner pods and a restart or leader change loses them; enable WorkflowReservation at the bind extension point, ahead of DefaultBinder", "runner", klog.KObj(pod))
	})
	pl.room.Warn(pod, contract.ReasonNotRecorded, "Bind",
		fmt.Sprintf("Bound by another bind plugin: the reservation on node %s is not recorded on the pod (enable WorkflowReservation at the bind extension point)", nodeName))
}

var warnBinderOrder sync.Once
