package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
)

// FleetSpec describes the tandem-scheduler replicas of a run.
type FleetSpec struct {
	// Binary is the tandem-scheduler executable, Config its
	// KubeSchedulerConfiguration file.
	Binary, Config string
	Replicas       int
	// Lease names the leader-election Lease (in kube-system); empty when
	// the replicas do not elect a leader.
	Lease string
	// LogDir receives each replica's log (all its processes, appended).
	LogDir string
	// Args are added to every process's arguments (e.g. "-v=4").
	Args []string
	// MinDelay and MaxDelay bound the random delay before a killed replica
	// is started again; Seed draws it.
	MinDelay, MaxDelay time.Duration
	Seed               int64
}

// Fleet runs tandem-scheduler replicas as processes, as a Deployment's pods
// would run: a replica that exits is started again after a second (a
// container restart), one that Kill killed after the random restart delay.
type Fleet struct {
	cp       *controlplane.ControlPlane
	spec     FleetSpec
	replicas []*replica
	token    string
	http     *http.Client
	wg       sync.WaitGroup
	cancel   context.CancelFunc

	mu   sync.Mutex
	rand *rand.Rand
	// exits counts the exits the fleet did not cause (e.g. a leader that
	// lost its lease while the apiserver restarted).
	exits []Exit
}

// Exit is a replica's exit that no kill caused.
type Exit struct {
	Replica string    `json:"replica"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
}

type replica struct {
	name string

	mu     sync.Mutex
	proc   *controlplane.Process
	url    string
	killed bool
	// started is closed once the replica's current process answers /healthz.
	started chan struct{}
}

// StartFleet starts the replicas and keeps them running until Stop.
func StartFleet(ctx context.Context, cp *controlplane.ControlPlane, spec FleetSpec) (*Fleet, error) {
	if spec.Replicas < 1 {
		spec.Replicas = 1
	}
	f := &Fleet{
		cp: cp, spec: spec, token: cp.RESTConfig().BearerToken, http: controlplane.InsecureHTTPClient(),
		rand: rand.New(rand.NewSource(spec.Seed)),
	}
	f.http.Timeout = 5 * time.Second
	ctx, f.cancel = context.WithCancel(ctx)
	for i := range spec.Replicas {
		r := &replica{name: fmt.Sprintf("%s-%d", controlplane.SchedulerName, i), started: make(chan struct{})}
		f.replicas = append(f.replicas, r)
		if err := f.start(ctx, r); err != nil {
			f.Stop()
			return nil, err
		}
	}
	for _, r := range f.replicas {
		f.wg.Add(1)
		go f.supervise(ctx, r)
	}
	return f, nil
}

func (f *Fleet) start(ctx context.Context, r *replica) error {
	p, url, err := controlplane.StartSchedulerProcess(ctx, f.cp, controlplane.SchedulerSpec{
		Name: r.name, Dir: f.spec.LogDir, Binary: f.spec.Binary, Config: f.spec.Config, Args: f.spec.Args,
	})
	if err != nil {
		return fmt.Errorf("starting %s: %w", r.name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.proc, r.url, r.killed = p, url, false
	close(r.started)
	return nil
}

// supervise starts r again whenever its process ends, until ctx ends.
func (f *Fleet) supervise(ctx context.Context, r *replica) {
	defer f.wg.Done()
	logger := klog.FromContext(ctx).WithValues("replica", r.name)
	for {
		r.mu.Lock()
		p := r.proc
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-p.Done():
		}
		r.mu.Lock()
		killed := r.killed
		r.started = make(chan struct{})
		r.mu.Unlock()
		delay := time.Second
		if killed {
			delay = f.restartDelay()
		} else {
			f.mu.Lock()
			f.exits = append(f.exits, Exit{Replica: r.name, At: time.Now(), Error: fmt.Sprint(p.ExitError())})
			f.mu.Unlock()
			logger.Info("Scheduler exited on its own; starting it again", "err", p.ExitError(), "log", p.LogPath)
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			if err := f.start(ctx, r); err != nil {
				logger.Error(err, "Starting the scheduler again")
				delay = time.Second
				continue
			}
			break
		}
	}
}

func (f *Fleet) restartDelay() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.spec.MinDelay
	if span := f.spec.MaxDelay - f.spec.MinDelay; span > 0 {
		d += time.Duration(f.rand.Int63n(int64(span)))
	}
	return d
}

// Pick returns a random replica index.
func (f *Fleet) Pick() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rand.Intn(len(f.replicas))
}

// Kill sends SIGKILL to replica i's process and returns when it has exited,
// with the moment the signal was sent. The fleet starts it again after the
// restart delay.
func (f *Fleet) Kill(i int) (time.Time, error) {
	r := f.replicas[i]
	r.mu.Lock()
	p := r.proc
	if !p.Running() {
		r.mu.Unlock()
		return time.Time{}, fmt.Errorf("%s is not running", r.name)
	}
	r.killed = true
	r.mu.Unlock()
	at := time.Now()
	return at, p.Kill()
}

// Name returns replica i's name (its log is <LogDir>/<name>.log).
func (f *Fleet) Name(i int) string { return f.replicas[i].name }

// Exits returns the exits the fleet did not cause.
func (f *Fleet) Exits() []Exit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Exit(nil), f.exits...)
}

// errNoLeader means no replica reports that it leads.
var errNoLeader = errors.New("no replica leads")

// Leader returns the replica that leads, read from each replica's
// leader_election_master_status metric. Without leader election every
// replica schedules; the first one is returned.
func (f *Fleet) Leader(ctx context.Context) (int, error) {
	if f.spec.Lease == "" {
		return 0, nil
	}
	leader := -1
	for i, r := range f.replicas {
		r.mu.Lock()
		p, url := r.proc, r.url
		r.mu.Unlock()
		if !p.Running() {
			continue
		}
		on, err := f.leads(ctx, url)
		if err != nil {
			continue
		}
		if on {
			if leader >= 0 {
				return -1, fmt.Errorf("replicas %d and %d both report that they lead", leader, i)
			}
			leader = i
		}
	}
	if leader < 0 {
		return -1, errNoLeader
	}
	return leader, nil
}

// leaderMetricName is the name label of kube-scheduler's
// leader_election_master_status gauge, whatever the Lease's name
// (options.makeLeaderElectionConfig sets it).
const leaderMetricName = "kube-scheduler"

// leads reads leader_election_master_status from /metrics: 1 on the leader.
func (f *Fleet) leads(ctx context.Context, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", http.NoBody)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	resp, err := f.http.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("/metrics: %s", resp.Status)
	}
	want := fmt.Sprintf(`leader_election_master_status{name=%q} `, leaderMetricName)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		if value, ok := strings.CutPrefix(sc.Text(), want); ok {
			return strings.TrimSpace(value) == "1", nil
		}
	}
	return false, sc.Err()
}

// WaitReady waits until every replica runs and answers, and with leader
// election one of them leads.
func (f *Fleet) WaitReady(ctx context.Context, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, r := range f.replicas {
			r.mu.Lock()
			started, p := r.started, r.proc
			r.mu.Unlock()
			select {
			case <-started:
			default:
				return false, nil
			}
			if !p.Running() {
				return false, nil
			}
		}
		_, err := f.Leader(ctx)
		return err == nil, nil
	})
}

// Stop ends the supervision and stops every replica (SIGTERM, then SIGKILL).
func (f *Fleet) Stop() {
	f.cancel()
	f.wg.Wait()
	for _, r := range f.replicas {
		r.mu.Lock()
		if r.proc != nil {
			_ = r.proc.Stop(5 * time.Second)
		}
		r.mu.Unlock()
	}
}
