package arc

import (
	"context"
	"errors"
	"math/rand"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// ErrNoRunner means no runner was in a state to fail.
var ErrNoRunner = errors.New("no running runner")

// errStopped means the emulator's control loop has returned.
var errStopped = errors.New("emulator stopped")

// request is a fault for the control loop to inject; done is closed once it ran.
type request struct {
	fn   func(ctx context.Context, now time.Duration)
	done chan struct{}
}

// call runs fn in the control loop (between two rounds) and waits for it.
func (e *Emulator) call(ctx context.Context, fn func(ctx context.Context, now time.Duration)) error {
	req := request{fn: fn, done: make(chan struct{})}
	select {
	case e.requests <- req:
	case <-e.stopped:
		return errStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-req.done:
		return nil
	case <-e.stopped:
		return errStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Emulator) serveRequests(ctx context.Context, now time.Duration) {
	for {
		select {
		case req := <-e.requests:
			req.fn(ctx, now)
			close(req.done)
		default:
			return
		}
	}
}

// FailedRunner describes an injected runner failure.
type FailedRunner struct {
	Pod  string
	Node string
	// Busy: the runner held a job (it fails with ReasonRunnerFailed).
	Busy bool
}

// FailRunner makes the runner container of a random running runner, idle or
// busy (drawn with r), exit with code 1 through the kubelet: the way a crashed
// runner process looks to ARC. ARC then handles it as it handles any runner
// failure. It returns ErrNoRunner when no runner is running.
func (e *Emulator) FailRunner(ctx context.Context, r *rand.Rand) (FailedRunner, error) {
	var out FailedRunner
	var outErr error
	err := e.call(ctx, func(ctx context.Context, _ time.Duration) {
		type candidate struct {
			rn   *runner
			pod  *v1.Pod
			busy bool
		}
		var cands []candidate
		for _, s := range e.sets {
			for _, rn := range s.runners {
				if rn.lost || rn.crashed || (rn.state != runnerIdle && rn.state != runnerBusy) {
					continue
				}
				if pod := e.runnerPod(s, rn); pod != nil && pod.Status.Phase == v1.PodRunning {
					cands = append(cands, candidate{rn: rn, pod: pod, busy: rn.state == runnerBusy})
				}
			}
		}
		if len(cands) == 0 {
			outErr = ErrNoRunner
			return
		}
		sort.Slice(cands, func(i, j int) bool { return cands[i].pod.Name < cands[j].pod.Name })
		c := cands[r.Intn(len(cands))]
		if outErr = e.exiter.Exit(ctx, c.pod, 1); outErr == nil {
			// The hook runs in the runner's container: it died with it.
			c.rn.crashed = true
			out = FailedRunner{Pod: c.pod.Name, Node: c.pod.Spec.NodeName, Busy: c.busy}
			klog.FromContext(ctx).V(2).Info("Injected runner failure", "pod", klog.KObj(c.pod), "node", c.pod.Spec.NodeName, "busy", c.busy)
		}
	})
	if err != nil {
		return FailedRunner{}, err
	}
	return out, outErr
}

// NodeLost tells ARC's runners that node went away with its machine: the
// runner processes on it died, so the jobs they held fail (ReasonNodeDeleted)
// and no hook or runner there acts any more. ARC itself notices only when
// the pods are gone (the pod garbage collector deletes them) and then creates
// them again under the same names. It returns the runner pods that were on
// the node.
func (e *Emulator) NodeLost(ctx context.Context, node string) ([]string, error) {
	var lost []string
	err := e.call(ctx, func(ctx context.Context, now time.Duration) {
		for _, s := range e.sets {
			for _, rn := range s.runners {
				pod := e.runnerPod(s, rn)
				if pod == nil || pod.Spec.NodeName != node || rn.lost {
					continue
				}
				rn.lost = true
				lost = append(lost, rn.name)
				klog.FromContext(ctx).V(2).Info("Runner lost with its node", "pod", klog.KObj(pod), "node", node, "busy", rn.job != nil)
				if rn.job != nil {
					e.record(ctx, rn, pod, now, false, ReasonNodeDeleted, "node "+node+" was deleted with the runner on it")
					rn.job = nil
				}
			}
		}
	})
	sort.Strings(lost)
	return lost, err
}
