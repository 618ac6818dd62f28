package controllers

import (
	"context"

	"k8s.io/client-go/tools/events"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/controllers/pairpod"
	"github.com/tandem-scheduler/tandem/pkg/controllers/placeholder"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// The plugin reaches the controllers through two seams, one pair per
// profile, which Join returns: a Classifier, which says what a pod is to
// tandem and what it needs, and a Holder, which holds room for workflow
// pods. Waiting pods, leadership, placeholders, pair pods, events and
// metrics sit behind them. As VolumeBinding asks its
// SchedulerVolumeBinder, the plugin asks these and nothing else of the
// controllers; both are interfaces, so the plugin's own tests may fake
// them.

// Classifier tells what a pod is to one tandem profile.
type Classifier interface {
	// Classify says what pod is and what it needs: a runner and the size
	// of its workflow pod, a workflow or step pod and the reservation it
	// claims, or an ordinary pod; or why it must wait. It blocks until
	// the reservations recorded on runners are rebuilt and first
	// reconciled, sends the pod the Warning its inputs deserve, and takes
	// the lead (only the leader schedules).
	Classify(ctx context.Context, pod *v1.Pod) Verdict
	// RunnerOf returns the runner a pod names as its workflow pod's (the
	// runner-pod label), if it carries the label.
	RunnerOf(pod *v1.Pod) (types.NamespacedName, bool)
	// JobRunner returns the runner-pod label of the Job namespace/name
	// with uid, "" if there is none or Jobs are not watched (hooks v0.7.0
	// label container-step Jobs, not their pods).
	JobRunner(namespace, name string, uid types.UID) string
	// NominatedRoom is the workflow room a runner nominated to a node and
	// not bound yet brings there: zero for any other pod.
	NominatedRoom(pod *v1.Pod) contract.Amount
}

// Holder holds room for workflow pods: the store's verbs the extension
// points call, and what goes with them (placeholders, pair pods, the pods
// the plugin turned away, events and metrics).
type Holder interface {
	// Store is the reservations, for reading; every tandem profile of a
	// scheduler reads the same.
	Store() *reservations.Store
	// NoneHeld reports that nothing is held anywhere and no runner is
	// nominated: a pod's cycle need read no held room.
	NoneHeld() bool
	// Releases counts the releases of room so far, for TurnedAway.
	Releases() uint64
	// TurnedAway remembers a pod the plugin's Filter turned away in a
	// cycle that began at Releases() == since, and reports whether room
	// was freed since: the release's activation passed the pod by.
	TurnedAway(pod *v1.Pod, since uint64) bool
	// Take puts the reservation a runner's cycle assumed into the store,
	// with what the cluster shows of pods and jobs of an earlier runner
	// of its name.
	Take(ctx context.Context, runner *v1.Pod, r *reservations.Reservation)
	// Return takes back the reservation a runner's cycle took, unless the
	// informer has shown it bound; it reports whether it did.
	Return(r *reservations.Reservation) bool
	// Claim hands the runner's reservation (incarnation runnerUID) to its
	// workflow pod (uid pod) on node.
	Claim(runner types.NamespacedName, runnerUID, pod types.UID, node string) (claimed, wasUsedUp bool)
	// Unclaim undoes Claim, and brings back a placeholder deleted for it.
	Unclaim(runner types.NamespacedName, runnerUID, pod types.UID, wasUsedUp bool)
	// Claimed reports a claim bound.
	Claimed(r reservations.Reservation)
	// AskPairRoom asks for a pair pod that stands for a waiting runner
	// and its workflow pod, for cluster autoscalers.
	AskPairRoom(runner *v1.Pod, request, workflow contract.Amount, ports []contract.HostPort)

	// Placeholders (reservationMode Pods).

	// Placeholder returns the placeholder of the runner incarnation, if
	// the informer shows one.
	Placeholder(runner types.NamespacedName, uid types.UID) *v1.Pod
	// CheckPlaceholder has the placeholder worker look at the runner.
	CheckPlaceholder(runner types.NamespacedName, uid types.UID)
	// MayHavePlaceholder reports whether the runner incarnation may have
	// a placeholder: one exists, or its profile holds room with pods.
	MayHavePlaceholder(runner types.NamespacedName, uid types.UID) bool
	// StartYield and Yield delete the runner's placeholder for its
	// workflow pod, which waits at Permit.
	StartYield(uid types.UID)
	Yield(ctx context.Context, runner types.NamespacedName, uid types.UID) (*v1.Pod, error)
	// PlaceBeforeBinding creates the placeholder of runner on r's node
	// through client, before its Binding.
	PlaceBeforeBinding(ctx context.Context, client clientset.Interface, runner *v1.Pod, r *reservations.Reservation) error
	// SetHandover says whether the profile hands a placeholder over to
	// its workflow pod at Permit.
	SetHandover(bool)

	// Events on pods, sent by the leader only.

	Warn(pod *v1.Pod, reason, action, note string)
	WarnOnce(pod *v1.Pod, reason, action, note string)
	RoutineEvent(pod *v1.Pod, reason, action string, note func() string)
}

// Join adds the tandem profile name of the scheduler c, configured by args
// (validated), with the profile's event recorder, and returns its seams.
// The first profile's Join registers the informer handlers and builds the
// controllers, which Run runs. (The recorder is an argument, not a method of
// Cluster: the framework's Handle returns an events.EventRecorderLogger from
// 1.36 on, an events.EventRecorder before; either is an EventRecorder.)
func (f *Feeder) Join(ctx context.Context, c Cluster, recorder events.EventRecorder, name string, args *config.WorkflowReservationArgs) (Classifier, Holder, error) {
	p, err := NewProfile(name, args, recorder)
	if err != nil {
		return nil, nil, err
	}
	metrics.RegisterProfile(name)
	// The scheduler's, so the same in every profile.
	f.waiting.SetBackoff(args.PodInitialBackoffSeconds, args.PodMaxBackoffSeconds)
	if err := f.join(ctx, c, p, args.HookTemplateNamespaces, ConfigOf(args)); err != nil {
		return nil, nil, err
	}
	s := &seams{f: f, p: p, c: c}
	if informers := c.SharedInformerFactory(); informers != nil {
		s.jobs = informers.Batch().V1().Jobs().Lister()
	}
	return s, s, nil
}

// seams are one profile's Classifier and Holder.
type seams struct {
	f *Feeder
	p *Profile
	// c is the profile's scheduler, for Activate.
	c Cluster
	// jobs lists the Jobs that name a step pod's runner (hooks v0.7.0);
	// nil without informers.
	jobs batchlisters.JobLister
}

var (
	_ Classifier = &seams{}
	_ Holder     = &seams{}
)

func (s *seams) RunnerOf(pod *v1.Pod) (types.NamespacedName, bool) { return s.f.runnerOf(pod) }

func (s *seams) JobRunner(namespace, name string, uid types.UID) string {
	if s.jobs == nil {
		return ""
	}
	job, err := s.jobs.Jobs(namespace).Get(name)
	if err != nil || job.UID != uid {
		return ""
	}
	return job.Labels[s.p.RunnerPodLabel]
}

func (s *seams) NominatedRoom(pod *v1.Pod) contract.Amount {
	if pod.Spec.NodeName != "" || !s.f.trusted(pod) {
		return contract.Amount{}
	}
	return s.p.Sizer.Size(pod).Workflow
}

func (s *seams) Store() *reservations.Store { return s.f.store }

func (s *seams) NoneHeld() bool { return s.f.store.Empty() && !s.f.anyNominated() }

func (s *seams) Releases() uint64 { return s.f.waiting.Releases() }

func (s *seams) TurnedAway(pod *v1.Pod, since uint64) bool { return s.f.waiting.TurnedAway(pod, since) }

func (s *seams) Take(ctx context.Context, runner *v1.Pod, r *reservations.Reservation) {
	r.Stale = s.staleWorkflowPods(ctx, runner)
	r.StaleJob = s.f.staleJobOf(r.Runner)
	s.f.store.Take(r)
	s.f.recordMetrics()
}

func (s *seams) Return(r *reservations.Reservation) bool {
	if !s.f.store.Return(r) {
		return false
	}
	metrics.Releases.WithLabelValues(s.p.Name, metrics.ReleaseUnreserved, "false").Inc()
	// A placeholder Bind created goes with it.
	s.CheckPlaceholder(r.Runner, r.RunnerUID)
	s.f.recordMetrics()
	return true
}

func (s *seams) Claim(runner types.NamespacedName, runnerUID, pod types.UID, node string) (claimed, wasUsedUp bool) {
	claimed, wasUsedUp = s.f.store.Claim(runner, runnerUID, pod, node)
	if claimed {
		s.f.recordMetrics()
	}
	return claimed, wasUsedUp
}

func (s *seams) Unclaim(runner types.NamespacedName, runnerUID, pod types.UID, wasUsedUp bool) {
	s.f.store.Unclaim(runner, pod, wasUsedUp)
	// Holding again: a placeholder deleted at Permit comes back.
	if s.f.placeholders != nil {
		s.f.placeholders.Unyield(runner, runnerUID)
	}
	s.f.recordMetrics()
}

func (s *seams) Claimed(r reservations.Reservation) { s.f.observeClaim(s.p.Name, r) }

func (s *seams) AskPairRoom(runner *v1.Pod, request, workflow contract.Amount, ports []contract.HostPort) {
	if s.f.pairPods != nil {
		s.f.pairPods.Ask(runner, pairpod.For(runner, request, workflow, ports, s.p.PlaceholderImage))
	}
}

func (s *seams) Placeholder(runner types.NamespacedName, uid types.UID) *v1.Pod {
	if s.f.placeholders == nil {
		return nil
	}
	return s.f.placeholders.Of(runner, uid)
}

func (s *seams) CheckPlaceholder(runner types.NamespacedName, uid types.UID) {
	if s.f.placeholders != nil {
		s.f.placeholders.Check(runner.Namespace, runner.Name, uid)
	}
}

func (s *seams) MayHavePlaceholder(runner types.NamespacedName, uid types.UID) bool {
	if s.f.placeholders == nil {
		return false
	}
	if s.f.placeholders.Of(runner, uid) != nil {
		return true
	}
	pod, err := s.f.pods.Pods(runner.Namespace).Get(runner.Name)
	if err != nil || pod.UID != uid {
		return false
	}
	owner := s.f.ProfileOf(pod)
	return owner != nil && owner.ReservationMode == config.ReservationModePods
}

func (s *seams) StartYield(uid types.UID) { s.f.placeholders.StartYield(uid) }

func (s *seams) Yield(ctx context.Context, runner types.NamespacedName, uid types.UID) (*v1.Pod, error) {
	return s.f.placeholders.Yield(ctx, runner, uid)
}

func (s *seams) PlaceBeforeBinding(ctx context.Context, client clientset.Interface, runner *v1.Pod, r *reservations.Reservation) error {
	hold := s.f.placeholderHold(r)
	if hold.IsZero() || s.f.placeholders == nil {
		return nil
	}
	return s.f.placeholders.CreateForBind(ctx, client, runner, placeholder.For(runner, r.Node, hold, s.p.PlaceholderImage))
}

func (s *seams) SetHandover(on bool) { s.p.handover.Store(on) }

func (s *seams) Warn(pod *v1.Pod, reason, action, note string) { s.f.warn(pod, reason, action, note) }

func (s *seams) WarnOnce(pod *v1.Pod, reason, action, note string) {
	s.f.warnOnce(pod, reason, action, note)
}

func (s *seams) RoutineEvent(pod *v1.Pod, reason, action string, note func() string) {
	s.f.routineEvent(pod, reason, action, note)
}
