package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
	"github.com/tandem-scheduler/tandem/pkg/sizing"
)

// Kind is what a pod is to tandem.
type Kind int

const (
	// Other is an ordinary pod, or one tandem schedules as one.
	Other Kind = iota
	// Runner is a runner whose workflow pod's room is held with it.
	Runner
	// Workflow is a workflow pod that claims its runner's reservation.
	Workflow
	// Step is a container-step pod of a runner whose workflow pod
	// claimed its reservation: it may use the step headroom.
	Step
)

// Verdict is what Classify found of a pod.
type Verdict struct {
	Kind Kind
	// Runner and Reservation: for a workflow or step pod, the runner whose
	// reservation it claims, and the reservation as the store held it.
	Runner      types.NamespacedName
	Reservation reservations.Reservation
	// PinnedTo is the reservation's node, for a workflow pod pinned to it.
	PinnedTo string
	// For a runner: its workflow pod's size (step headroom included) and
	// where it came from, the step headroom, the host ports to hold and
	// the hook mode.
	Workflow contract.Amount
	Source   contract.Source
	Step     contract.Amount
	Ports    []contract.HostPort
	HookMode string

	// Wait, if set, is why the pod cannot be scheduled now (a note short
	// enough for an event); it is retried when what it waits for arrives,
	// unless Unresolvable: then only when the pod or its sizing changes.
	Wait         string
	Unresolvable bool
	// Err is set when the reservations could not be rebuilt: the cycle
	// fails.
	Err error
}

// Classify implements Classifier.
func (s *seams) Classify(ctx context.Context, pod *v1.Pod) Verdict {
	// Only the leader schedules.
	s.f.leader.Lead()
	if contract.IsPairPod(pod) {
		return Verdict{Unresolvable: true, Wait: Truncate(fmt.Sprintf(
			"pair pod of runner %s: it stands for the runner and its workflow pod for cluster autoscalers and is never bound",
			klog.KRef(pod.Namespace, pod.Annotations[contract.PairOfAnnotation])))}
	}
	if err := s.f.awaitRebuild(ctx, pod); err != nil {
		return Verdict{Err: err}
	}
	var v Verdict
	s.claimOf(ctx, pod, &v)
	if v.Kind == Other && s.p.IsRunner(pod) {
		if s.ownedRunner(ctx, pod, &v) {
			s.sizeRunner(ctx, pod, &v)
		}
	} else if _, annotated := pod.Annotations[contract.WorkflowRequestsAnnotation]; annotated && v.Kind == Other {
		klog.FromContext(ctx).V(2).Info("Pod carries the workflow size annotation but is not a runner; ignoring it", "pod", klog.KObj(pod))
		s.f.warnOnce(pod, contract.ReasonIgnoredAnnotation, "Scheduling",
			fmt.Sprintf("Annotation %s ignored: the pod is not a runner of profile %s (it does not match runnerSelector, or its namespace is not one of runnerNamespaces)", contract.WorkflowRequestsAnnotation, s.p.Name))
	}
	return v
}

// awaitRebuild holds the first cycles until the informer handlers have
// rebuilt the reservations recorded on runner pods and the first reconcile
// has run: it uses up reservations whose workflow pod finished before a
// restart. It returns nil once they have.
func (f *Feeder) awaitRebuild(ctx context.Context, pod *v1.Pod) error {
	logger := klog.FromContext(ctx)
	if !f.Synced() {
		logger.V(2).Info("Waiting for reservations to be rebuilt before scheduling", "pod", klog.KObj(pod))
		if !cache.WaitForCacheSync(ctx.Done(), f.Synced) {
			return errors.New("reservations were not rebuilt from runner pods")
		}
	}
	select {
	case <-f.reconciled:
	default:
		logger.V(2).Info("Waiting for the first reconcile of reservations before scheduling", "pod", klog.KObj(pod))
		select {
		case <-f.reconciled:
		case <-ctx.Done():
			return errors.New("reservations were not reconciled")
		}
	}
	return nil
}

// claimOf sets v for a pod that claims a reservation: a workflow pod
// (Workflow), or a container-step pod once its runner's workflow pod
// claimed (Step). A pinned workflow pod is narrowed to its reservation's
// node. A pod labelled as a workflow pod that claims nothing is scheduled as
// an ordinary pod, and told why once.
func (s *seams) claimOf(ctx context.Context, pod *v1.Pod, v *Verdict) {
	if runner, viaJob := s.runnerNameOf(pod); runner != "" && viaJob {
		// A container-step pod of hooks v0.7.0 (its Job names the runner).
		key := types.NamespacedName{Namespace: pod.Namespace, Name: runner}
		if r, found := s.f.store.Get(key); found && !r.UsedUp() && r.Owns(pod) && r.ClaimedBy() != "" && !r.Step.IsZero() {
			v.Kind, v.Runner, v.Reservation = Step, key, r
		}
		return
	}
	runner, ok := s.f.runnerOf(pod)
	if !ok {
		return
	}
	r, found := s.f.store.Get(runner)
	why := ""
	switch {
	case found && !r.UsedUp() && r.Owns(pod) && r.ClaimedBy() != "" && r.ClaimedBy() != pod.UID && !r.Step.IsZero():
		// The workflow pod claimed; later pods of the runner are its
		// container steps (hooks v0.8 label them directly).
		v.Kind, v.Runner, v.Reservation = Step, runner, r
	case !found:
		why = "runner " + runner.String() + " holds no reservation"
	case r.UsedUp():
		why = "the reservation of runner " + runner.String() + " was used up"
	case r.ClaimedBy() != "" && r.ClaimedBy() != pod.UID:
		why = "the reservation of runner " + runner.String() + " was claimed by another workflow pod (uid " + string(r.ClaimedBy()) + ")"
	case !r.Owns(pod):
		why = "the pod was created before runner " + runner.String() + ": it belongs to an earlier runner of that name"
	default:
		v.Kind, v.Runner, v.Reservation = Workflow, runner, r
		if contract.PinnedTo(pod, r.Node) {
			v.PinnedTo = r.Node
		}
	}
	if why != "" {
		klog.FromContext(ctx).V(2).Info("Workflow pod claims no reservation; scheduling it as an ordinary pod", "pod", klog.KObj(pod), "reason", why)
		s.f.warnOnce(pod, contract.ReasonNoReservation, "Scheduling",
			fmt.Sprintf("Scheduled as an ordinary pod: %s", why))
	}
}

// runnerNameOf returns the runner a pod belongs to: its runner-pod label,
// or (viaJob) the label of the Job that owns it, as hooks v0.7.0 label their
// container-step Jobs but not the Jobs' pods.
func (s *seams) runnerNameOf(p *v1.Pod) (name string, viaJob bool) {
	if name, ok := p.Labels[s.p.RunnerPodLabel]; ok {
		return name, false
	}
	if s.jobs == nil {
		return "", false
	}
	owner := metav1.GetControllerOf(p)
	if owner == nil || owner.Kind != "Job" {
		return "", false
	}
	return s.JobRunner(p.Namespace, owner.Name, owner.UID), true
}

// ownedRunner reports whether a pod matching the runner selector is a
// runner: ARC's EphemeralRunners are not served, or the one of its name
// controls it. A pod that no EphemeralRunner controls is scheduled as an
// ordinary pod, and told so. A pod must wait (v.Wait) until the
// EphemeralRunners show what it is: they are not looked up or listed yet,
// or the one its controller reference names is not listed (yet).
func (s *seams) ownedRunner(ctx context.Context, pod *v1.Pod, v *Verdict) bool {
	logger := klog.FromContext(ctx)
	why := ""
	switch s.f.ownership(pod) {
	case OwnershipNoARC, OwnershipControlled:
		return true
	case OwnershipNone:
		logger.V(2).Info("Pod matches the runner selector but no EphemeralRunner controls it; scheduling it as an ordinary pod", "pod", klog.KObj(pod))
		s.f.warnOnce(pod, contract.ReasonNotAnEphemeralRunner, "Scheduling",
			fmt.Sprintf("Scheduled as an ordinary pod, with no room held for a workflow pod: it matches the runner selector of profile %s, but no EphemeralRunner of ARC controls it", s.p.Name))
		return false
	case OwnershipUnknown:
		why = "ARC's EphemeralRunners are not listed yet (tandem needs list and watch on ephemeralrunners.actions.github.com)"
	default:
		why = fmt.Sprintf("EphemeralRunner %s, which its owner reference names, is not listed (yet) with that UID", pod.Name)
	}
	// Retried when the EphemeralRunners are listed or this one arrives.
	logger.V(2).Info("Runner waits for its EphemeralRunner", "pod", klog.KObj(pod), "why", why)
	s.f.waiting.Add(pod)
	if o := s.f.ownership(pod); o != OwnershipUnknown && o != OwnershipAwaited {
		// Known since the check, maybe before the pod waited: the
		// activation may have passed it by.
		s.c.Activate(logger, map[string]*v1.Pod{pod.Namespace + "/" + pod.Name: pod})
	}
	v.Wait = Truncate(fmt.Sprintf("runner %s waits: %s", klog.KObj(pod), why))
	return false
}

// sizeRunner sets v for a runner (Runner) from its sizing sources. A runner
// must wait (v.Wait) while its hook templates are not listed yet, or while
// its size is unknown and no default applies. A runner without any source
// is scheduled without a reservation, and told so.
func (s *seams) sizeRunner(ctx context.Context, pod *v1.Pod, v *Verdict) {
	logger := klog.FromContext(ctx)
	sz := s.p.Sizer.Size(pod)
	if sz.NotListed != nil {
		// Retried once the namespace is listed (activateWhenListed) or
		// its template arrives (onConfigMap).
		logger.V(2).Info("Runner waits for its namespace's hook templates to be listed", "pod", klog.KObj(pod), "err", sz.NotListed)
		s.f.waiting.Add(pod)
		if s.p.Sizer.Listed(pod.Namespace) {
			// Listed since the check, maybe before the runner waited:
			// activateWhenListed and the ConfigMap events may have
			// passed it by. The pod is in flight; the queue records the
			// activation and requeues it, after its backoff, when this
			// cycle ends.
			s.c.Activate(logger, map[string]*v1.Pod{pod.Namespace + "/" + pod.Name: pod})
		}
		v.Wait = Truncate(fmt.Sprintf("runner %s: %v", klog.KObj(pod), sz.NotListed))
		return
	}
	for _, p := range sz.Problems {
		logger.V(2).Info("Ignoring a broken workflow size source", "pod", klog.KObj(pod), "err", p)
		s.f.warn(pod, contract.ReasonInvalidWorkflowSize, "Scheduling", p.Error())
	}
	if sz.Notice != "" {
		logger.V(2).Info("Hook template sizes the workflow pod only in part", "pod", klog.KObj(pod), "notice", sz.Notice)
		s.f.warnOnce(pod, contract.ReasonIncompleteHookTemplate, "Scheduling", sz.Notice)
	}
	switch {
	case !sz.Workflow.IsZero():
		v.Kind, v.Workflow, v.Source = Runner, sz.Workflow, sz.Source
		v.Step, v.Ports, v.HookMode = sz.Step, sz.Ports, sizing.HookMode(pod)
	case sz.Intended:
		// Retried as soon as its hook template's ConfigMap changes.
		s.f.waiting.Add(pod)
		v.Unresolvable = true
		v.Wait = Truncate(fmt.Sprintf(
			"runner %s: the size of its workflow pod is unknown (%s) and no defaultWorkflowRequests is configured", klog.KObj(pod), joinErrors(sz.Problems)))
	default:
		logger.V(2).Info("Runner has no workflow size source; scheduling it without a reservation", "pod", klog.KObj(pod))
		s.f.warn(pod, contract.ReasonNoWorkflowSize, "Scheduling",
			fmt.Sprintf("No workflow pod size known: set annotation %s, a hook template with resources, or defaultWorkflowRequests; scheduled without a reservation", contract.WorkflowRequestsAnnotation))
	}
}

// staleWorkflowPods returns the UIDs of the pods labelled as workflow pods of
// runner when its reservation is taken: they belong to an earlier runner of
// the same name. Only those not created before the runner, at most
// contract.MaxStaleWorkflowPods: the hold rule already tells the earlier
// ones by their creation time.
func (s *seams) staleWorkflowPods(ctx context.Context, runner *v1.Pod) []types.UID {
	var out []types.UID
	for _, p := range s.f.WorkflowPods(types.NamespacedName{Namespace: runner.Namespace, Name: runner.Name}) {
		if p.CreationTimestamp.Before(&runner.CreationTimestamp) {
			continue // not the runner's by its creation time (Facts.Owns)
		}
		if len(out) == contract.MaxStaleWorkflowPods {
			// Anyone who may create pods in the namespace can label as many
			// as they like with the runner's name, and the record must fit
			// the Binding: beyond the bound, one of them may claim.
			klog.FromContext(ctx).Info("More pods labelled as this runner's workflow pods than a record keeps; the others may claim its reservation", "runner", klog.KObj(runner), "kept", len(out))
			s.f.warnOnce(runner, contract.ReasonTooManyWorkflowPods, "Scheduling",
				fmt.Sprintf("More than %d pods labelled %s=%s existed before this runner was bound; the reservation records the first %d as not its workflow pod, and one of the others may claim its room",
					contract.MaxStaleWorkflowPods, s.p.RunnerPodLabel, runner.Name, contract.MaxStaleWorkflowPods))
			break
		}
		out = append(out, p.UID)
	}
	return out
}

// joinErrors joins errs' messages for a status.
func joinErrors(errs []error) string {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}
