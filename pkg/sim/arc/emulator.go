package arc

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
)

// Clock is the simulated time the emulator runs on.
type Clock interface {
	Now() time.Duration
}

// Exiter ends a running pod's containers (the kubelet emulator): the
// runner process exits when its job is done.
type Exiter interface {
	Exit(ctx context.Context, pod *v1.Pod, exitCode int32) error
}

// Job is a workflow job for a scale set.
type Job struct {
	ID       int
	ScaleSet string
	// Arrival is when the job is queued; Duration is how long its steps run.
	Arrival, Duration time.Duration
	// Container: the job has a `container:`; only then is there a workflow pod.
	Container bool
	Spec      JobSpec
}

// Result is a job's outcome, times in simulated time.
type Result struct {
	Job     Job
	Runner  string
	Node    string
	Started time.Duration // workflow pod Running (or the job started in the runner)
	Ended   time.Duration
	// Succeeded, or the failure Reason and Message.
	Succeeded bool
	Reason    string
	Message   string
}

// SetTiming is the emulated delays of a scale set.
type SetTiming struct {
	// RunnerStartup: runner pod Running -> runner takes jobs.
	RunnerStartup time.Duration
	// HookDelay: job start -> workflow pod created.
	HookDelay time.Duration
}

// Emulator runs ARC's listener, its EphemeralRunner controller, the runners
// and their container hook for a set of scale sets in one namespace.
type Emulator struct {
	client kubernetes.Interface
	pods   corelisters.PodLister
	clock  Clock
	exiter Exiter
	sets   []*setState
	jobs   []Job
	next   int
	// Tick is the real-time period of the control loop.
	Tick    time.Duration
	results []Result
}

type setState struct {
	set     *ScaleSet
	timing  SetTiming
	rand    *rand.Rand
	queue   []*jobRun
	runners map[string]*runner
	created int
}

type runnerState int

const (
	runnerCreated runnerState = iota
	runnerStarting
	runnerIdle
	runnerBusy
	runnerExiting
)

type runner struct {
	name      string
	state     runnerState
	since     time.Duration
	seen      bool
	job       *jobRun
	createdAt time.Duration
}

// NewEmulator returns an emulator for sets (each with its timing) and jobs
// (any order); pods lists the namespace's pods.
func NewEmulator(client kubernetes.Interface, pods corelisters.PodLister, clock Clock, exiter Exiter, seed int64, sets []*ScaleSet, timing []SetTiming, jobs []Job) *Emulator {
	e := &Emulator{client: client, pods: pods, clock: clock, exiter: exiter, Tick: 10 * time.Millisecond}
	for i, s := range sets {
		e.sets = append(e.sets, &setState{
			set: s, timing: timing[i], runners: map[string]*runner{},
			rand: rand.New(rand.NewSource(seed + int64(i))),
		})
	}
	e.jobs = append([]Job(nil), jobs...)
	sort.SliceStable(e.jobs, func(i, j int) bool { return e.jobs[i].Arrival < e.jobs[j].Arrival })
	return e
}

// Run drives the job stream until every job has ended, then scales every set
// to zero and waits until the runner pods are gone. It returns the results
// in job order.
func (e *Emulator) Run(ctx context.Context) ([]Result, error) {
	ticker := time.NewTicker(e.Tick)
	defer ticker.Stop()
	for len(e.results) < len(e.jobs) {
		select {
		case <-ctx.Done():
			return e.sorted(), fmt.Errorf("%d of %d jobs ended: %w", len(e.results), len(e.jobs), ctx.Err())
		case <-ticker.C:
		}
		if err := e.step(ctx, true); err != nil {
			return e.sorted(), err
		}
	}
	for {
		left := 0
		for _, s := range e.sets {
			left += len(s.runners)
		}
		if left == 0 {
			return e.sorted(), nil
		}
		if err := e.step(ctx, false); err != nil {
			return e.sorted(), err
		}
		select {
		case <-ctx.Done():
			return e.sorted(), fmt.Errorf("scaling down, %d runners left: %w", left, ctx.Err())
		case <-ticker.C:
		}
	}
}

func (e *Emulator) sorted() []Result {
	out := append([]Result(nil), e.results...)
	sort.Slice(out, func(i, j int) bool { return out[i].Job.ID < out[j].Job.ID })
	return out
}

// step runs one round of every controller. keep=false scales sets to zero.
func (e *Emulator) step(ctx context.Context, keep bool) error {
	now := e.clock.Now()
	for e.next < len(e.jobs) && e.jobs[e.next].Arrival <= now {
		j := e.jobs[e.next]
		e.next++
		s := e.set(j.ScaleSet)
		if s == nil {
			return fmt.Errorf("job %d: unknown scale set %q", j.ID, j.ScaleSet)
		}
		s.queue = append(s.queue, &jobRun{job: j})
	}
	for _, s := range e.sets {
		if err := e.reconcileRunners(ctx, s, now); err != nil {
			return err
		}
		desired := 0
		if keep {
			desired = min(s.set.MinRunners+len(s.queue)+s.count(runnerBusy), s.set.MaxRunners)
		}
		if err := e.scale(ctx, s, desired, now); err != nil {
			return err
		}
		e.assign(s, now)
	}
	return nil
}

func (e *Emulator) set(name string) *setState {
	for _, s := range e.sets {
		if s.set.Name == name {
			return s
		}
	}
	return nil
}

func (s *setState) count(state runnerState) int {
	n := 0
	for _, r := range s.runners {
		if r.state == state {
			n++
		}
	}
	return n
}

// reconcileRunners follows each runner pod: started, registered, its job,
// finished (then ARC deletes it), or rejected by the kubelet (ARC replaces it).
func (e *Emulator) reconcileRunners(ctx context.Context, s *setState, now time.Duration) error {
	logger := klog.FromContext(ctx)
	for _, r := range s.runners {
		pod, err := e.pods.Pods(s.set.Namespace).Get(r.name)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if pod != nil {
			r.seen = true
		}
		switch {
		case pod == nil && r.seen:
			logger.Info("Runner pod disappeared", "pod", klog.KRef(s.set.Namespace, r.name))
			if r.job != nil {
				e.finish(ctx, s, r, nil, now, false, ReasonWorkflowPodGone, "runner pod deleted")
			}
			delete(s.runners, r.name)
		case pod == nil:
		case r.state == runnerExiting:
			if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
				e.deletePod(ctx, s.set.Namespace, r.name)
				delete(s.runners, r.name)
			}
		case pod.Status.Phase == v1.PodFailed:
			// Rejected at admission before it took a job: ARC replaces it.
			logger.V(2).Info("Runner pod failed; replacing it", "pod", klog.KObj(pod), "reason", pod.Status.Reason)
			e.deletePod(ctx, s.set.Namespace, r.name)
			delete(s.runners, r.name)
		case r.state == runnerCreated && pod.Status.Phase == v1.PodRunning:
			r.state, r.since = runnerStarting, now
		case r.state == runnerStarting && now-r.since >= s.timing.RunnerStartup:
			r.state, r.since = runnerIdle, now
		case r.state == runnerBusy:
			if err := e.advance(ctx, s, r, pod, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// scale creates runners up to desired, or deletes runners that hold no job
// (pending ones first, then the longest idle) down to it.
func (e *Emulator) scale(ctx context.Context, s *setState, desired int, now time.Duration) error {
	active := len(s.runners) - s.count(runnerExiting)
	for ; active < desired; active++ {
		s.created++
		name := RunnerPodName(s.set.Name, s.set.Suffix, Suffix(s.rand))
		if _, err := e.client.CoreV1().Pods(s.set.Namespace).Create(ctx, s.set.RunnerPod(name), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating runner pod %s: %w", name, err)
		}
		s.runners[name] = &runner{name: name, state: runnerCreated, createdAt: now}
	}
	if active <= desired {
		return nil
	}
	var spare []*runner
	for _, r := range s.runners {
		if r.state == runnerCreated || r.state == runnerStarting || r.state == runnerIdle {
			spare = append(spare, r)
		}
	}
	sort.Slice(spare, func(i, j int) bool {
		if spare[i].state != spare[j].state {
			return spare[i].state < spare[j].state
		}
		return spare[i].createdAt > spare[j].createdAt
	})
	for _, r := range spare[:min(len(spare), active-desired)] {
		e.deletePod(ctx, s.set.Namespace, r.name)
		delete(s.runners, r.name)
	}
	return nil
}

// assign gives queued jobs, oldest first, to the runners idle longest.
func (e *Emulator) assign(s *setState, now time.Duration) {
	var idle []*runner
	for _, r := range s.runners {
		if r.state == runnerIdle {
			idle = append(idle, r)
		}
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].since < idle[j].since })
	for _, r := range idle {
		if len(s.queue) == 0 {
			return
		}
		j := s.queue[0]
		s.queue = s.queue[1:]
		j.assigned = now
		r.state, r.job = runnerBusy, j
	}
}

func (e *Emulator) deletePod(ctx context.Context, namespace, name string) {
	zero := int64(0)
	err := e.client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Error(err, "Deleting pod", "pod", klog.KRef(namespace, name))
	}
}
