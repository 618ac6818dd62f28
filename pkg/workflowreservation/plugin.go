// Package workflowreservation implements the WorkflowReservation scheduler
// plugin: an ARC runner pod and the workflow pod it will create later are
// placed as one group. The runner only lands where both fit, room for the
// workflow pod is reserved on that node when the runner is placed, other pods
// cannot take it, and the workflow pod claims it.
package workflowreservation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/apis/config/validation"
	"github.com/tandem-scheduler/tandem/pkg/contract"
	"github.com/tandem-scheduler/tandem/pkg/controllers"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
	"github.com/tandem-scheduler/tandem/pkg/sizing"
)

const (
	// Name is the name of the plugin used in the plugin registry and configurations.
	Name = "WorkflowReservation"

	preFilterStateKey = "PreFilter" + Name
	reserveStateKey   = "Reserve" + Name
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
// it, all of one scheduler joined to one controllers.Feeder.
type WorkflowReservation struct {
	handle fwk.Handle
	// feeder keeps store in step with the cluster, for every profile.
	feeder *controllers.Feeder
	store  *reservations.Store
	// profile is what the controllers know of this profile: its runners,
	// their sizing, its events and reservation mode.
	profile  *controllers.Profile
	scoring  config.ScoringStrategy
	pairPods bool
	// jobs lists the Jobs that name a step pod's runner (hooks v0.7.0).
	jobs batchlisters.JobLister
	// handoverState: with Pods, the in-tree Fit this plugin runs.
	handoverState
}

// New initializes a plugin that leads always and shares its reservations
// with no other profile: a scheduler without leader election and with one
// tandem profile. tandem-scheduler uses NewFactory.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	return newPlugin(ctx, obj, h, controllers.NewFeeder(nil))
}

// NewFactory returns the plugin factory of one scheduler: the instances it
// creates (one per profile) share their reservations, and speak (events,
// metrics of held reservations) only while l leads; nil leads always.
func NewFactory(l *leadership.Leadership) frameworkruntime.PluginFactory {
	f := controllers.NewFeeder(l)
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return newPlugin(ctx, obj, h, f)
	}
}

// newPlugin initializes the plugin from its args and joins it to f; the
// first instance of a scheduler starts f's informer handlers, which rebuild
// the reservations recorded on runner pods, and its reconciler.
func newPlugin(ctx context.Context, obj runtime.Object, h fwk.Handle, f *controllers.Feeder) (fwk.Plugin, error) {
	args, ok := obj.(*config.WorkflowReservationArgs)
	if !ok {
		return nil, fmt.Errorf("want args to be of type WorkflowReservationArgs, got %T", obj)
	}
	if err := validation.ValidateWorkflowReservationArgs(nil, args); err != nil {
		return nil, err
	}
	selector, err := metav1.LabelSelectorAsSelector(args.RunnerSelector)
	if err != nil {
		return nil, fmt.Errorf("runnerSelector: %w", err)
	}
	sz, err := sizing.NewSizer(args)
	if err != nil {
		return nil, err
	}
	pl := &WorkflowReservation{
		handle:   h,
		feeder:   f,
		store:    f.Store(),
		scoring:  *args.ScoringStrategy,
		pairPods: args.PairPods,
	}
	pl.profile = &controllers.Profile{
		Name:              h.ProfileName(),
		Runners:           selector,
		RunnerPodLabel:    args.RunnerPodLabel,
		Sizer:             sz,
		Recorder:          h.EventRecorder(),
		ReservationEvents: args.ReservationEvents,
		ReservationMode:   args.ReservationMode,
		PlaceholderImage:  args.PlaceholderImage,
		Handover:          pl.handover,
	}
	if args.ReservationMode == config.ReservationModePods {
		if pl.fit, err = newFit(ctx, h); err != nil {
			return nil, err
		}
	}
	// The scheduler's, so the same in every profile.
	f.Waiting().SetBackoff(args.PodInitialBackoffSeconds, args.PodMaxBackoffSeconds)
	metrics.Register()
	if informers := h.SharedInformerFactory(); informers != nil {
		pl.jobs = informers.Batch().V1().Jobs().Lister()
	}
	if err := f.Join(ctx, h, pl.profile, args.HookTemplateNamespaces, controllers.Config{
		ReconcileInterval:  args.ReconcileInterval.Duration,
		NoWorkflowPodGrace: args.NoWorkflowPodGrace.Duration,
	}); err != nil {
		return nil, err
	}
	return pl, nil
}

// Name returns the plugin name.
func (pl *WorkflowReservation) Name() string { return Name }

type podKind int

const (
	kindOther podKind = iota
	kindRunner
	kindWorkflow
	// kindStep is a container-step pod of a runner whose workflow pod
	// claimed its reservation: it may use the step headroom.
	kindStep
)

// preFilterState is what one scheduling cycle knows about the pod.
type preFilterState struct {
	kind    podKind
	request reservations.Amount
	// runner: the workflow pod's size (step headroom included) and where
	// it came from, the headroom, the host ports to hold, the hook mode.
	workflow reservations.Amount
	source   contract.Source
	step     reservations.Amount
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
}

// Clone copies the state: AddPod and RemovePod change a clone's adjustments.
func (s *preFilterState) Clone() fwk.StateData {
	c := *s
	c.adjust = s.adjust.clone()
	return &c
}

func getPreFilterState(cs fwk.CycleState) (*preFilterState, error) {
	c, err := cs.Read(preFilterStateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycleState: %w", preFilterStateKey, err)
	}
	s, ok := c.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to workflowreservation.preFilterState error", c)
	}
	return s, nil
}

// pinnedTo reports whether the pod is tied to node by its own spec: a
// hostname nodeSelector naming it, or a required node affinity every term of
// which names it on the hostname label (or by metadata.name). That is how
// the hooks pin a workflow pod to the runner's node (v0.7.0 with
// ACTIONS_RUNNER_USE_KUBE_SCHEDULER, the RWO mode of the next hook). Any
// other required affinity (an architecture, a pool) leaves the pod free to
// go elsewhere.
func pinnedTo(pod *v1.Pod, node string) bool {
	if v, ok := pod.Spec.NodeSelector[v1.LabelHostname]; ok {
		return v == node
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		return false
	}
	for _, t := range terms {
		if !termNames(t, node) {
			return false
		}
	}
	return true
}

// termNames reports whether the node selector term allows node only.
func termNames(t v1.NodeSelectorTerm, node string) bool {
	only := func(r v1.NodeSelectorRequirement, key string) bool {
		return r.Key == key && r.Operator == v1.NodeSelectorOpIn && len(r.Values) == 1 && r.Values[0] == node
	}
	for _, r := range t.MatchExpressions {
		if only(r, v1.LabelHostname) {
			return true
		}
	}
	for _, r := range t.MatchFields {
		if only(r, metav1.ObjectNameField) {
			return true
		}
	}
	return false
}

// workflowPodUIDs returns the UIDs of the pods labelled as workflow pods of
// runner: when a runner's reservation is taken, these belong to an earlier
// runner of the same name.
func (pl *WorkflowReservation) workflowPodUIDs(runner types.NamespacedName) []types.UID {
	var out []types.UID
	for _, p := range pl.feeder.WorkflowPods(runner) {
		out = append(out, p.UID)
	}
	return out
}

// PreFilter classifies the pod, sizes a runner's workflow pod and narrows a
// pinned workflow pod to its reservation's node.
func (pl *WorkflowReservation) PreFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	logger := klog.FromContext(ctx)
	// Only the leader schedules.
	pl.feeder.Leader().Lead()
	if contract.IsPairPod(pod) {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, controllers.Truncate(fmt.Sprintf(
			"pair pod of runner %s: it stands for the runner and its workflow pod for cluster autoscalers and is never bound",
			klog.KRef(pod.Namespace, pod.Annotations[contract.PairOfAnnotation]))))
	}
	if !pl.feeder.Synced() {
		logger.V(2).Info("Waiting for reservations to be rebuilt before scheduling", "pod", klog.KObj(pod))
		if !cache.WaitForCacheSync(ctx.Done(), pl.feeder.Synced) {
			return nil, fwk.AsStatus(errors.New("reservations were not rebuilt from runner pods"))
		}
	}
	// The first reconcile recovers runners bound without a valid record
	// and uses up reservations whose workflow pod finished before a restart.
	select {
	case <-pl.feeder.Reconciled():
	default:
		logger.V(2).Info("Waiting for the first reconcile of reservations before scheduling", "pod", klog.KObj(pod))
		select {
		case <-pl.feeder.Reconciled():
		case <-ctx.Done():
			return nil, fwk.AsStatus(errors.New("reservations were not reconciled"))
		}
	}

	if pl.fit != nil {
		if _, status := pl.fit.PreFilter(ctx, cs, pod, nodes); !status.IsSuccess() {
			return nil, status
		}
	}
	s := &preFilterState{releases: pl.feeder.Waiting().Releases()}
	var result *fwk.PreFilterResult
	if runner, viaJob := pl.runnerNameOf(pod); runner != "" && viaJob {
		// A container-step pod of hooks v0.7.0 (its Job names the runner).
		key := types.NamespacedName{Namespace: pod.Namespace, Name: runner}
		if r, found := pl.store.Get(key); found && !r.UsedUp() && r.Owns(pod) && r.ClaimedBy() != "" && !r.Step.IsZero() {
			s.kind, s.runner, s.own = kindStep, key, r
		}
	} else if runner, ok := pl.feeder.RunnerOf(pod); ok {
		r, found := pl.store.Get(runner)
		why := ""
		switch {
		case found && !r.UsedUp() && r.Owns(pod) && r.ClaimedBy() != "" && r.ClaimedBy() != pod.UID && !r.Step.IsZero():
			// The workflow pod claimed; later pods of the runner are its
			// container steps (hooks v0.8 label them directly).
			s.kind, s.runner, s.own = kindStep, runner, r
		case !found:
			why = "runner " + runner.String() + " holds no reservation"
		case r.UsedUp():
			why = "the reservation of runner " + runner.String() + " was used up"
		case r.ClaimedBy() != "" && r.ClaimedBy() != pod.UID:
			why = "the reservation of runner " + runner.String() + " was claimed by another workflow pod (uid " + string(r.ClaimedBy()) + ")"
		case !r.Owns(pod):
			why = "the pod was created before runner " + runner.String() + ": it belongs to an earlier runner of that name"
		default:
			s.kind, s.runner, s.own = kindWorkflow, runner, r
			if pinnedTo(pod, r.Node) {
				result = &fwk.PreFilterResult{NodeNames: sets.New(r.Node)}
			}
		}
		if why != "" {
			logger.V(2).Info("Workflow pod claims no reservation; scheduling it as an ordinary pod", "pod", klog.KObj(pod), "reason", why)
			if pl.feeder.FirstWarning(pod.UID, contract.ReasonNoReservation) {
				pl.handle.EventRecorder().Eventf(pod, nil, v1.EventTypeWarning, contract.ReasonNoReservation, "Scheduling",
					"Scheduled as an ordinary pod: %s", why)
			}
		}
	}
	if s.kind == kindOther && pl.profile.IsRunner(pod) {
		sz := pl.profile.Sizer.Size(pod)
		if sz.NotListed != nil {
			// Retried once the namespace is listed (activateWhenListed) or
			// its template arrives (onConfigMap).
			logger.V(2).Info("Runner waits for its namespace's hook templates to be listed", "pod", klog.KObj(pod), "err", sz.NotListed)
			pl.feeder.Waiting().Add(pod)
			if pl.profile.Sizer.Listed(pod.Namespace) {
				// Listed since the check, maybe before the runner waited:
				// activateWhenListed and the ConfigMap events may have
				// passed it by. The pod is in flight; the queue records the
				// activation and requeues it, after its backoff, when this
				// cycle ends.
				pl.handle.Activate(logger, map[string]*v1.Pod{pod.Namespace + "/" + pod.Name: pod})
			}
			return nil, fwk.NewStatus(fwk.Unschedulable, controllers.Truncate(fmt.Sprintf("runner %s: %v", klog.KObj(pod), sz.NotListed)))
		}
		for _, p := range sz.Problems {
			logger.V(2).Info("Ignoring a broken workflow size source", "pod", klog.KObj(pod), "err", p)
			pl.handle.EventRecorder().Eventf(pod, nil, v1.EventTypeWarning, contract.ReasonInvalidWorkflowSize, "Scheduling", controllers.Truncate(p.Error()))
		}
		if sz.Notice != "" {
			logger.V(2).Info("Hook template sizes the workflow pod only in part", "pod", klog.KObj(pod), "notice", sz.Notice)
			pl.handle.EventRecorder().Eventf(pod, nil, v1.EventTypeWarning, contract.ReasonIncompleteHookTemplate, "Scheduling", controllers.Truncate(sz.Notice))
		}
		switch {
		case !sz.Workflow.IsZero():
			s.kind, s.workflow, s.source = kindRunner, sz.Workflow, sz.Source
			s.step, s.ports, s.hookMode = sz.Step, sz.Ports, sizing.HookMode(pod)
		case sz.Intended:
			// Retried as soon as its hook template's ConfigMap changes.
			pl.feeder.Waiting().Add(pod)
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, controllers.Truncate(fmt.Sprintf(
				"runner %s: the size of its workflow pod is unknown (%s) and no defaultWorkflowRequests is configured", klog.KObj(pod), joinErrors(sz.Problems))))
		default:
			logger.V(2).Info("Runner has no workflow size source; scheduling it without a reservation", "pod", klog.KObj(pod))
			pl.handle.EventRecorder().Eventf(pod, nil, v1.EventTypeWarning, contract.ReasonNoWorkflowSize, "Scheduling",
				"No workflow pod size known: set annotation %s, a hook template with resources, or defaultWorkflowRequests; scheduled without a reservation", contract.WorkflowRequestsAnnotation)
		}
	} else if _, annotated := pod.Annotations[contract.WorkflowRequestsAnnotation]; annotated && s.kind == kindOther {
		logger.V(2).Info("Pod carries the workflow size annotation but is not a runner; ignoring it", "pod", klog.KObj(pod))
		if pl.feeder.FirstWarning(pod.UID, contract.ReasonIgnoredAnnotation) {
			pl.handle.EventRecorder().Eventf(pod, nil, v1.EventTypeWarning, contract.ReasonIgnoredAnnotation, "Scheduling",
				"Annotation %s ignored: the pod does not match the runner selector of profile %s", contract.WorkflowRequestsAnnotation, pl.profile.Name)
		}
	}
	if s.kind == kindOther && pl.store.Empty() && !pl.feeder.AnyNominated() && pl.fit == nil {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	s.request = reservations.PodAmount(pod)
	s.hostPorts = podHostPorts(pod)
	s.rejected = &atomic.Bool{}
	cs.Write(preFilterStateKey, s)
	return result, nil
}

// Filter counts the room reserved on the node (other than the pod's own
// reservation) as used, and requires room for a runner's workflow pod too.
func (pl *WorkflowReservation) Filter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := getPreFilterState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if pl.fit != nil {
		if status := pl.fitFilter(ctx, cs, s, pod, nodeInfo); !status.IsSuccess() {
			return status
		}
	}
	status := pl.filter(s, nodeInfo)
	if !status.IsSuccess() {
		s.rejected.Store(true)
	}
	return status
}

func (pl *WorkflowReservation) filter(s *preFilterState, nodeInfo fwk.NodeInfo) *fwk.Status {
	held := pl.reservedOn(s, nodeInfo)
	if len(held.Ports) > 0 && portConflict(s.hostPorts, nodeInfo, held.Ports) && !portConflict(s.hostPorts, nodeInfo, nil) {
		// Ports the node's pods use are NodePorts' to report.
		return fwk.NewStatus(fwk.Unschedulable, contract.ErrReasonPortReserved)
	}
	switch s.kind {
	case kindRunner:
		if !fits(s.request.Add(s.workflow), held.Amount, nodeInfo) {
			return fwk.NewStatus(fwk.Unschedulable, contract.ErrReasonPairDoesNotFit)
		}
		if portConflict(s.ports, nodeInfo, held.Ports) {
			return fwk.NewStatus(fwk.Unschedulable, contract.ErrReasonPortsTaken)
		}
	case kindWorkflow:
		if !fits(s.request, held.Amount, nodeInfo) {
			return fwk.NewStatus(fwk.Unschedulable, contract.ErrReasonWorkflowDoesNotFit)
		}
	default:
		if held.Amount.IsZero() {
			return nil
		}
		if !fits(s.request, held.Amount, nodeInfo) {
			return fwk.NewStatus(fwk.Unschedulable, contract.ErrReasonRoomReserved)
		}
	}
	return nil
}

// PostFilter explains a runner or workflow pod that fits nowhere, naming
// what it needs. Preemption is DefaultPreemption's, which runs first; it
// sees reservations through PreFilterExtensions.
func (pl *WorkflowReservation) PostFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	s, err := getPreFilterState(cs)
	if err != nil {
		// PreFilter skipped the pod: nothing to explain.
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if s.rejected != nil && s.rejected.Load() {
		if pl.feeder.Waiting().TurnedAway(pod, s.releases) {
			klog.FromContext(ctx).V(4).Info("Reserved room was freed during the pod's scheduling cycle; activating it", "pod", klog.KObj(pod))
			pl.handle.Activate(klog.FromContext(ctx), map[string]*v1.Pod{pod.Namespace + "/" + pod.Name: pod})
		}
		if s.kind == kindRunner && pl.pairPods {
			// Some node turned the runner away for its workflow pod only:
			// an autoscaler would judge the runner schedulable there.
			pl.feeder.PairPods().Ask(pod, controllers.PairPodFor(pod, s.request, s.workflow, append(append([]contract.HostPort(nil), s.hostPorts...), s.ports...), pl.profile.PlaceholderImage))
		}
	}
	logger := klog.FromContext(ctx)
	switch s.kind {
	case kindRunner:
		logger.V(4).Info("Runner fits no node together with its workflow pod", "pod", klog.KObj(pod), "request", s.request.String(), "workflow", s.workflow.String())
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
			"runner %s needs %s and its workflow pod %s (from %s); no node has room for both",
			klog.KObj(pod), s.request, s.workflow, s.source))
	case kindWorkflow:
		if hold := pl.feeder.Placeholders().Of(s.runner, s.own.RunnerUID); hold != nil && !pl.handover() {
			// The stock Fit counts the placeholder: it is being deleted
			// (tandem-webhook, or the worker nudged here), and its delete
			// requeues the pod.
			pl.feeder.Placeholders().Check(s.runner.Namespace, s.runner.Name, s.own.RunnerUID)
			logger.V(4).Info("Workflow pod waits for its runner's placeholder to yield", "pod", klog.KObj(pod), "runner", s.runner, "placeholder", klog.KObj(hold))
			return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
				"workflow pod of runner %s waits for placeholder %s, which holds its room on node %s, to be deleted",
				s.runner, hold.Name, s.own.Node))
		}
		logger.V(4).Info("Workflow pod does not fit beside its reservation", "pod", klog.KObj(pod), "runner", s.runner, "node", s.own.Node, "request", s.request.String(), "reserved", s.own.Size.String())
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
			"workflow pod of runner %s needs %s; its reservation on node %s holds %s and the node has too little free room for the difference",
			s.runner, s.request, s.own.Node, s.own.Size))
	}
	return nil, fwk.NewStatus(fwk.Unschedulable)
}

// reserveState remembers what Reserve changed, for Unreserve: the
// reservation a runner's cycle put into the store, or a workflow pod's claim.
type reserveState struct {
	taken     *reservations.Reservation
	claimed   bool
	wasUsedUp bool
}

func (s *reserveState) Clone() fwk.StateData { return s }

// Reserve takes the runner's reservation on the node, or hands a workflow
// pod's reservation over to it.
func (pl *WorkflowReservation) Reserve(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	s, err := getPreFilterState(cs)
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
			Stale:         pl.workflowPodUIDs(runner),
			Node:          nodeName,
			Size:          s.workflow,
			Step:          s.step,
			Ports:         s.ports,
			Source:        s.source,
			HookMode:      s.hookMode,
			ReservedAt:    time.Now(),
			StaleJob:      pl.feeder.StaleJobOf(runner),
		}
		pl.store.Take(taken)
		cs.Write(reserveStateKey, &reserveState{taken: taken})
		pl.feeder.RecordMetrics()
		logger.V(4).Info("Assumed workflow reservation", "runner", klog.KObj(pod), "node", nodeName, "size", s.workflow.String())
	case kindWorkflow:
		// Elsewhere than reserved (an unpinned workflow pod), the room is
		// no longer needed: the reservation is used up at once.
		rs := &reserveState{}
		rs.claimed, rs.wasUsedUp = pl.store.Claim(s.runner, s.own.RunnerUID, pod.UID, nodeName)
		cs.Write(reserveStateKey, rs)
		pl.feeder.RecordMetrics()
	}
	return nil
}

// Unreserve undoes Reserve; it is idempotent. It leaves alone what the
// informer has since shown bound: a bind that reported a failure may still
// have gone through.
func (pl *WorkflowReservation) Unreserve(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) {
	s, err := getPreFilterState(cs)
	if err != nil {
		return
	}
	logger := klog.FromContext(ctx)
	switch s.kind {
	case kindRunner:
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		c, err := cs.Read(reserveStateKey)
		rs, ok := c.(*reserveState)
		if err != nil || !ok || rs.taken == nil {
			return
		}
		// Only the reservation this cycle took, and only while the
		// informer has not shown it bound.
		if pl.store.Return(rs.taken) {
			logger.V(4).Info("Returned workflow reservation", "runner", klog.KObj(pod), "node", rs.taken.Node)
			metrics.Releases.WithLabelValues(pl.profile.Name, metrics.ReleaseUnreserved, "false").Inc()
		} else if r, ok := pl.store.Get(key); ok && r.RunnerUID == pod.UID {
			logger.V(2).Info("Binding reported a failure but the runner is bound; keeping its reservation", "runner", klog.KObj(pod), "node", r.Node)
		}
	case kindWorkflow:
		c, err := cs.Read(reserveStateKey)
		rs, ok := c.(*reserveState)
		if err != nil || !ok || !rs.claimed {
			return
		}
		pl.store.Unclaim(s.runner, pod.UID, rs.wasUsedUp)
		// Holding again: a placeholder deleted at Permit comes back.
		pl.feeder.Placeholders().Unyield(s.runner, s.own.RunnerUID)
	}
	pl.feeder.RecordMetrics()
}

// PostBind reports the reservation taken or claimed.
func (pl *WorkflowReservation) PostBind(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) {
	s, err := getPreFilterState(cs)
	if err != nil {
		return
	}
	logger := klog.FromContext(ctx)
	switch s.kind {
	case kindRunner:
		pl.warnIfBoundElsewhere(ctx, cs, pod, nodeName)
		if logger := logger.V(2); logger.Enabled() {
			// The hook mode shows here and in the event only: the record does not carry it.
			logger.Info("Reserved room for the workflow pod", "runner", klog.KObj(pod), "node", nodeName, "size", s.workflow.String(), "source", s.source,
				"stepRequests", s.step.String(), "hostPorts", portList(s.ports), "hookMode", s.hookMode)
		}
		pl.feeder.RoutineEvent(pod, contract.ReasonReserved, "Reserve", func() string { return reservedNote(s, nodeName) })
	case kindWorkflow:
		pl.feeder.ObserveClaim(pl.profile.Name, s.own)
		logger.V(2).Info("Workflow pod claimed its reservation", "pod", klog.KObj(pod), "runner", s.runner, "node", nodeName)
		pl.feeder.RoutineEvent(pod, contract.ReasonClaimed, "Claim", func() string {
			return fmt.Sprintf("Claimed the reservation of runner %s on node %s", s.runner.Name, nodeName)
		})
	}
}

func joinErrors(errs []error) string {
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "; ")
}

// reservedNote is the note of the event for a reservation taken.
func reservedNote(s *preFilterState, node string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Reserved %s on node %s for the workflow pod (size from %s)", s.workflow, node, s.source)
	if !s.step.IsZero() {
		fmt.Fprintf(&b, "; of it %s for container-step pods", s.step)
	}
	if len(s.ports) > 0 {
		fmt.Fprintf(&b, "; host ports %s", portList(s.ports))
	}
	if s.hookMode != "" {
		fmt.Fprintf(&b, "; hook mode: %s", s.hookMode)
	}
	return b.String()
}

// portList is ports as "6379/TCP,8080/TCP".
func portList(ports []contract.HostPort) string {
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		out = append(out, p.String())
	}
	return strings.Join(out, ",")
}
