package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/sim"
	"github.com/tandem-scheduler/tandem/harness/sim/arc"
)

// ProbeLabel marks the pods the harness creates after a fault to see when
// scheduling is back: no requests, any node.
const ProbeLabel = "tandem.dev/chaos-probe"

// recoveryTimeout bounds the wait for scheduling to come back after a fault
// (real time); a fault not recovered from by then is reported as such.
const recoveryTimeout = 2 * time.Minute

// APIServerStopGrace is how long a restarted kube-apiserver gets to shut
// down after SIGTERM before SIGKILL.
const APIServerStopGrace = 5 * time.Second

// FaultRecord is a fault as injected.
type FaultRecord struct {
	Kind Kind `json:"kind"`
	// PlannedAtSeconds and AtSeconds are simulated time since the stream
	// started: planned, and when it was injected (faults wait for the
	// previous one's recovery).
	PlannedAtSeconds float64 `json:"plannedAtSeconds"`
	AtSeconds        float64 `json:"atSeconds"`
	Injected         bool    `json:"injected"`
	// Target is the replica, runner pod or node hit.
	Target string `json:"target,omitempty"`
	Detail string `json:"detail,omitempty"`
	// RecoverySeconds (real time), for faults that stop scheduling: from
	// the fault (the SIGKILL, the apiserver's SIGTERM) to the bind of a
	// probe pod created right after it. For a leader kill it is the
	// failover time.
	RecoverySeconds *float64 `json:"recoverySeconds,omitempty"`
	// LeaseTakeoverSeconds (real time), for leader kills: from the SIGKILL
	// to the new holder's acquireTime on the Lease.
	LeaseTakeoverSeconds *float64 `json:"leaseTakeoverSeconds,omitempty"`
	Error                string   `json:"error,omitempty"`

	recovery, takeover time.Duration
}

// injector injects a run's planned faults one after the other; a fault that
// stops scheduling is followed by a wait until scheduling is back.
type injector struct {
	h        *sim.Harness
	cp       *controlplane.ControlPlane
	fleet    *Fleet
	binds    *bindWatcher
	rand     *rand.Rand
	lease    string
	progress io.Writer
	run      string
	probes   int
	records  []FaultRecord
}

func (in *injector) inject(ctx context.Context, plan []Fault) {
	// Fault times count from the start of the job stream.
	select {
	case <-in.h.Emulator.Started():
	case <-ctx.Done():
	}
	for _, f := range plan {
		rec := FaultRecord{Kind: f.Kind, PlannedAtSeconds: f.At.Seconds()}
		if wait := f.At - in.h.Clock.Now(); wait > 0 {
			_ = in.h.Clock.Sleep(ctx, wait)
		}
		if ctx.Err() != nil {
			rec.Error = "not injected: the job stream ended first"
			in.records = append(in.records, rec)
			continue
		}
		rec.AtSeconds = in.h.Clock.Now().Round(time.Second).Seconds()
		err := in.one(ctx, &rec)
		rec.Injected = rec.Injected || err == nil
		if err != nil {
			rec.Error = err.Error()
		}
		klog.FromContext(ctx).V(2).Info("Injected fault", "kind", rec.Kind, "t", rec.AtSeconds, "target", rec.Target, "detail", rec.Detail, "err", err)
		if in.progress != nil {
			line := fmt.Sprintf("  [%s] t=%5.0fs %-16s %s", in.run, rec.AtSeconds, rec.Kind, rec.Target)
			if rec.Detail != "" {
				line += " (" + rec.Detail + ")"
			}
			if rec.RecoverySeconds != nil {
				line += fmt.Sprintf(", scheduling back after %.2fs", *rec.RecoverySeconds)
			}
			if err != nil {
				line += ": " + err.Error()
			}
			fmt.Fprintln(in.progress, line)
		}
		in.records = append(in.records, rec)
	}
}

// one injects a fault; rec.Injected is set once it happened, even if what
// follows (the recovery) failed.
func (in *injector) one(ctx context.Context, rec *FaultRecord) error {
	switch rec.Kind {
	case Kill:
		if err := in.fleet.WaitReady(ctx, recoveryTimeout); err != nil {
			return fmt.Errorf("schedulers not ready: %w", err)
		}
		i := in.fleet.Pick()
		rec.Target = in.fleet.Name(i)
		at, err := in.fleet.Kill(i)
		if err != nil {
			return err
		}
		rec.Injected = true
		return in.recover(ctx, rec, at)
	case LeaderKill:
		if err := in.fleet.WaitReady(ctx, recoveryTimeout); err != nil {
			return fmt.Errorf("schedulers not ready: %w", err)
		}
		i, err := in.fleet.Leader(ctx)
		if err != nil {
			return err
		}
		holder := in.leaseHolder(ctx)
		rec.Target = in.fleet.Name(i)
		at, err := in.fleet.Kill(i)
		if err != nil {
			return err
		}
		rec.Injected = true
		err = in.recover(ctx, rec, at)
		if takeover, newHolder, terr := in.leaseTakeover(ctx, holder, at); terr == nil {
			rec.takeover = takeover
			rec.LeaseTakeoverSeconds = ptrSeconds(takeover)
			rec.Detail = "lease taken over by " + newHolder
		} else if err == nil {
			err = terr
		}
		return err
	case APIServerRestart:
		if err := in.fleet.WaitReady(ctx, recoveryTimeout); err != nil {
			return fmt.Errorf("schedulers not ready: %w", err)
		}
		rec.Target = controlplane.APIServerName
		at := time.Now()
		err := in.cp.RestartAPIServer(ctx, APIServerStopGrace)
		rec.Injected = true
		if err != nil {
			return err
		}
		rec.Detail = fmt.Sprintf("down for %.1fs", time.Since(at).Seconds())
		return in.recover(ctx, rec, at)
	case RunnerFailure:
		var fr arc.FailedRunner
		err := wait.PollUntilContextTimeout(ctx, time.Second, recoveryTimeout, true, func(ctx context.Context) (bool, error) {
			var err error
			fr, err = in.h.Emulator.FailRunner(ctx, in.rand)
			if errors.Is(err, arc.ErrNoRunner) {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			return err
		}
		rec.Target = fr.Pod
		rec.Detail = "on " + fr.Node + ", idle"
		if fr.Busy {
			rec.Detail = "on " + fr.Node + ", busy"
		}
		return nil
	case NodeDeletion:
		node := in.pickNode()
		rec.Target = node
		replacement, lost, err := in.h.ReplaceNode(ctx, node)
		if err != nil {
			return err
		}
		rec.Detail = fmt.Sprintf("replaced by %s; runners on it: %s", replacement, strings.Join(lost, ", "))
		return nil
	}
	return fmt.Errorf("unknown fault %q", rec.Kind)
}

// pickNode draws a node that holds a running runner pod (else any node).
func (in *injector) pickNode() string {
	nodes := in.h.Nodes()
	pods, _ := in.h.Factory.Core().V1().Pods().Lister().Pods(in.h.Namespace).List(labels.SelectorFromSet(labels.Set{arc.LabelEphemeralRunner: "True"}))
	busy := map[string]bool{}
	for _, p := range pods {
		if p.Status.Phase == v1.PodRunning {
			busy[p.Spec.NodeName] = true
		}
	}
	var withRunners []string
	for _, n := range nodes {
		if busy[n] {
			withRunners = append(withRunners, n)
		}
	}
	if len(withRunners) > 0 {
		nodes = withRunners
	}
	return nodes[in.rand.Intn(len(nodes))]
}

// recover creates a probe pod (no requests, any node, through the scheduler
// under test) right after the fault, once the killed process has exited or
// the apiserver answers again, and waits until it is bound: a pod that no
// killed scheduler can have seen, so whatever binds it is the new leader or
// the restarted process. The recovery time runs from the fault to that
// bind. The probe is deleted then.
func (in *injector) recover(ctx context.Context, rec *FaultRecord, at time.Time) error {
	in.probes++
	name := fmt.Sprintf("chaos-probe-%d", in.probes)
	pods := in.h.Client.CoreV1().Pods(in.h.Namespace)
	probe := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ProbeLabel: "true"}},
		Spec: v1.PodSpec{
			SchedulerName: in.binds.schedulerName,
			RestartPolicy: v1.RestartPolicyNever,
			Tolerations:   []v1.Toleration{{Operator: v1.TolerationOpExists}},
			Containers:    []v1.Container{{Name: "probe", Image: "probe"}},
		},
	}
	var created *v1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, recoveryTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		created, err = pods.Create(ctx, probe, metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("creating probe pod: %w", err)
	}
	defer func() {
		zero := int64(0)
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, recoveryTimeout, true, func(ctx context.Context) (bool, error) {
			err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			return err == nil || apierrors.IsNotFound(err), nil
		})
	}()
	key := in.h.Namespace + "/" + name + "/" + string(created.UID)
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, recoveryTimeout, true, func(context.Context) (bool, error) {
		bound, ok := in.binds.boundAt(key)
		rec.recovery = bound.Sub(at)
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("probe pod not bound within %v after the fault: %w", recoveryTimeout, err)
	}
	rec.RecoverySeconds = ptrSeconds(rec.recovery)
	klog.FromContext(ctx).V(2).Info("Scheduling is back", "after", rec.recovery, "probe", klog.KObj(created))
	return nil
}

// leaseHolder returns the Lease's holder now ("" if unknown).
func (in *injector) leaseHolder(ctx context.Context) string {
	l, err := in.h.Client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, in.lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// leaseTakeover waits until another replica than old holds the Lease and
// returns how long after at it acquired it, and its identity.
func (in *injector) leaseTakeover(ctx context.Context, old string, at time.Time) (time.Duration, string, error) {
	var d time.Duration
	var holder string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, recoveryTimeout, true, func(ctx context.Context) (bool, error) {
		l, err := in.h.Client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, in.lease, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // the apiserver may be unavailable: poll again
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == old || *l.Spec.HolderIdentity == "" {
			return false, nil
		}
		holder = *l.Spec.HolderIdentity
		d = time.Since(at)
		if l.Spec.AcquireTime != nil {
			d = l.Spec.AcquireTime.Sub(at)
		}
		return true, nil
	})
	if err != nil {
		return 0, "", fmt.Errorf("lease %s not taken over: %w", in.lease, err)
	}
	return d, holder, nil
}

func ptrSeconds(d time.Duration) *float64 {
	s := float64(d.Round(10*time.Millisecond)) / float64(time.Second)
	return &s
}
