package arc

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/tandem-scheduler/tandem/harness/sim/retry"
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
	// Steps are its container steps, in order.
	Steps []Step
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
	// InStep: the job failed in one of its container steps.
	InStep bool
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
	// localize rewrites every pod before it is created (SetLocalize).
	localize func(*v1.Pod)
	sets     []*setState
	jobs     []Job
	next     int
	// Tick is the real-time period of the control loop.
	Tick    time.Duration
	results []Result
	// ended counts results, for readers outside the control loop.
	ended atomic.Int64
	// writes retries deletions that failed (the finalizers and the hook's
	// cleanup are retried by ARC's reconcile loop until they go through).
	writes *retry.Queue
	// requests are faults to inject, run by the control loop; started is
	// closed when Run starts, stopped when it returns.
	requests         chan request
	started, stopped chan struct{}
	// ephemeralRunners, when set, is where ARC's EphemeralRunner objects
	// are kept (SetEphemeralRunners).
	ephemeralRunners dynamic.Interface
	// hostname maps a node name to its hostname label (SetHostnames).
	hostname func(node string) string
	// names draws step Job and pod names.
	names *rand.Rand
	// orphans are step Jobs whose job ended before them: their pods still
	// run (nobody deletes a step Job but its TTL), and the Job controller
	// still marks them finished.
	orphans []*stepRun
	// expiring are finished step Jobs the TTL-after-finished controller
	// deletes, with their pods (the garbage collector's part).
	expiring []expiringJob
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

// runner is an EphemeralRunner and its runner process. Its pod is named
// after it; ARC creates the pod again under the same name when it fails.
type runner struct {
	name string
	// uid is the current pod's (incarnation's); empty while the pod is to
	// be created, the first time or again after a failure.
	uid types.UID
	// previous is the UID of the pod before, still going while uid is empty.
	previous types.UID
	state    runnerState
	since    time.Duration
	seen     bool
	job      *jobRun
	// failures is the EphemeralRunner's status.failures count.
	failures  int
	createdAt time.Duration
	// lost is set when the runner's node went away: the runner process
	// died with it, and ARC waits for the pod to be deleted.
	lost bool
	// crashed is set when the runner process was made to exit (FailRunner):
	// it does nothing more (no hook call, no job) until ARC sees the pod
	// failed. The emulator's pod cache may show the pod Running a while
	// after the kubelet's status update.
	crashed bool
	// erUID is the EphemeralRunner object's, once created.
	erUID types.UID
}

// NewEmulator returns an emulator for sets (each with its timing) and jobs
// (any order); pods lists the namespace's pods.
func NewEmulator(client kubernetes.Interface, pods corelisters.PodLister, clock Clock, exiter Exiter, seed int64, sets []*ScaleSet, timing []SetTiming, jobs []Job) *Emulator {
	e := &Emulator{
		client: client, pods: pods, clock: clock, exiter: exiter, Tick: 10 * time.Millisecond,
		writes: retry.New(0), requests: make(chan request, 16), started: make(chan struct{}), stopped: make(chan struct{}),
		names: rand.New(rand.NewSource(seed - 1)),
	}
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

// SetLocalize makes the emulator pass every pod it creates (runners,
// workflow pods, step pods and step Jobs' pods) through localize first:
// real nodes run only a local image (realnode.Localize). Call it before Run.
func (e *Emulator) SetLocalize(localize func(*v1.Pod)) { e.localize = localize }

// create creates pod in namespace, localized.
func (e *Emulator) create(ctx context.Context, namespace string, pod *v1.Pod) (*v1.Pod, error) {
	if e.localize != nil {
		e.localize(pod)
	}
	return e.client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
}

// SetEphemeralRunners makes the emulator keep ARC's EphemeralRunner objects
// (the CRD must be served, see InstallEphemeralRunnerCRD): one per runner,
// owner of its pod, status.jobId and status.jobRequestId written when the
// runner takes a job, deleted when the runner is done. Call it before Run.
func (e *Emulator) SetEphemeralRunners(client dynamic.Interface) { e.ephemeralRunners = client }

// SetHostnames tells the hook each node's kubernetes.io/hostname label
// (hostname returns "" for a node it does not know). The hooks pin a
// runner's pods with a hostname affinity whose value is the runner's node
// name, which is the node's hostname label on the clouds ARC users run
// (EKS, GKE, AKS, kind); Karpenter's KWOK provider labels its nodes with
// the NodeClaim's name instead, so that the emulated hook pins to what the
// label says there. Call it before Run.
func (e *Emulator) SetHostnames(hostname func(node string) string) { e.hostname = hostname }

// pinToHostname rewrites, in a hostname affinity the hook built for node,
// the node's name to its hostname label (SetHostnames).
func (e *Emulator) pinToHostname(spec *v1.PodSpec, node string) {
	if e.hostname == nil || spec.Affinity == nil || spec.Affinity.NodeAffinity == nil {
		return
	}
	label := e.hostname(node)
	if label == "" || label == node {
		return
	}
	rewrite := func(t *v1.NodeSelectorTerm) {
		for i := range t.MatchExpressions {
			r := &t.MatchExpressions[i]
			if r.Key != v1.LabelHostname {
				continue
			}
			for j, v := range r.Values {
				if v == node {
					r.Values[j] = label
				}
			}
		}
	}
	na := spec.Affinity.NodeAffinity
	if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
		for i := range req.NodeSelectorTerms {
			rewrite(&req.NodeSelectorTerms[i])
		}
	}
	for i := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		rewrite(&na.PreferredDuringSchedulingIgnoredDuringExecution[i].Preference)
	}
}

// Jobs returns how many jobs the stream has.
func (e *Emulator) Jobs() int { return len(e.jobs) }

// Started is closed once Run has started: the job stream's time runs.
func (e *Emulator) Started() <-chan struct{} { return e.started }

// Ended returns how many jobs have ended so far; safe to call while Run runs.
func (e *Emulator) Ended() int { return int(e.ended.Load()) }

// Run drives the job stream until every job has ended, then scales every set
// to zero and waits until the runner pods are gone. It returns the results
// in job order (on error, those of the jobs that ended).
func (e *Emulator) Run(ctx context.Context) ([]Result, error) {
	close(e.started)
	defer close(e.stopped)
	writesCtx, stopWrites := context.WithCancel(ctx)
	defer stopWrites()
	go e.writes.Run(writesCtx)
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
		if left == 0 && e.writes.Len() == 0 {
			return e.sorted(), nil
		}
		if err := e.step(ctx, false); err != nil {
			return e.sorted(), err
		}
		select {
		case <-ctx.Done():
			return e.sorted(), fmt.Errorf("scaling down, %d runners and %d deletions left: %w", left, e.writes.Len(), ctx.Err())
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
	e.serveRequests(ctx, now)
	e.driveOrphans(ctx, now)
	e.expireJobs(ctx, now)
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
		e.reconcileRunners(ctx, s, now)
		desired := 0
		if keep {
			desired = min(s.set.MinRunners+len(s.queue)+s.count(runnerBusy), s.set.MaxRunners)
		}
		e.scale(ctx, s, desired, now)
		e.assign(ctx, s, now)
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

// scale creates runners up to desired, or deletes runners that hold no job
// (pending ones first, then the longest idle) down to it. A runner's pod that
// cannot be created now (apiserver unavailable) is created on a later round
// under the same name, as ARC's reconcile loop does.
func (e *Emulator) scale(ctx context.Context, s *setState, desired int, now time.Duration) {
	active := len(s.runners) - s.count(runnerExiting)
	for ; active < desired; active++ {
		s.created++
		name := RunnerPodName(s.set.Name, s.set.Suffix, Suffix(s.rand))
		for s.runners[name] != nil {
			name = RunnerPodName(s.set.Name, s.set.Suffix, Suffix(s.rand))
		}
		r := &runner{name: name, state: runnerCreated, createdAt: now}
		s.runners[name] = r
		e.createPod(ctx, s, r)
	}
	if active <= desired {
		return
	}
	var spare []*runner
	for _, r := range s.runners {
		if r.job == nil && (r.state == runnerCreated || r.state == runnerStarting || r.state == runnerIdle) {
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
		e.finalize(ctx, s, r)
		delete(s.runners, r.name)
	}
}

// assign gives queued jobs, oldest first, to the runners idle longest.
func (e *Emulator) assign(ctx context.Context, s *setState, now time.Duration) {
	var idle []*runner
	for _, r := range s.runners {
		if r.state == runnerIdle && !r.lost && !r.crashed {
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
		e.jobStarted(ctx, s, r)
	}
}

// deletePod deletes a pod (grace 0), retried until it is gone; uid, when
// set, makes sure a newer pod of the same name is not the one deleted.
func (e *Emulator) deletePod(ctx context.Context, namespace, name string, uid types.UID) {
	e.writes.Do(ctx, "delete/"+namespace+"/"+name+"/"+string(uid), func(ctx context.Context) error {
		zero := int64(0)
		opts := metav1.DeleteOptions{GracePeriodSeconds: &zero}
		if uid != "" {
			opts.Preconditions = &metav1.Preconditions{UID: &uid}
		}
		err := e.client.CoreV1().Pods(namespace).Delete(ctx, name, opts)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	})
}
