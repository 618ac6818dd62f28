// Package leadership tells the plugins of a kube-scheduler replica whether
// that replica leads. kube-scheduler starts its informers, and so every
// plugin's event handlers, on standby replicas too (they keep their caches
// warm for a fast failover), but only the leader schedules. What a plugin
// says about the cluster (events, metrics of the state it holds) must come
// from the leader only, or every replica says it once.
//
// kube-scheduler exits when it loses the lease, so a replica that started
// leading leads until the process ends: leadership only ever turns on.
package leadership

import (
	"context"
	"sync"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Leadership is one replica's leadership. The zero value does not lead.
type Leadership struct {
	once    sync.Once
	initMu  sync.Mutex
	elected chan struct{}
}

// New returns the leadership of a replica that has not been elected yet.
func New() *Leadership { return &Leadership{} }

// Leading returns the leadership of a scheduler that leads from the start:
// one that runs without leader election.
func Leading() *Leadership {
	l := New()
	l.Lead()
	return l
}

func (l *Leadership) ch() chan struct{} {
	l.initMu.Lock()
	defer l.initMu.Unlock()
	if l.elected == nil {
		l.elected = make(chan struct{})
	}
	return l.elected
}

// Lead records that this replica leads. It is idempotent.
func (l *Leadership) Lead() {
	ch := l.ch()
	l.once.Do(func() { close(ch) })
}

// IsLeader reports whether this replica leads.
func (l *Leadership) IsLeader() bool {
	select {
	case <-l.Elected():
		return true
	default:
		return false
	}
}

// Elected is closed once this replica leads.
func (l *Leadership) Elected() <-chan struct{} { return l.ch() }

// Observe wraps the resource lock a leader elector uses: once a write of a
// record naming the lock's own identity as holder succeeds, this replica
// holds the lease and leads. Both client-go paths (acquire or renew, and
// coordinated leader election's renew) take the lease through such a write.
func (l *Leadership) Observe(lock resourcelock.Interface) resourcelock.Interface {
	return &observedLock{Interface: lock, leadership: l}
}

type observedLock struct {
	resourcelock.Interface
	leadership *Leadership
}

func (o *observedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := o.Interface.Create(ctx, ler)
	o.observe(ler, err)
	return err
}

func (o *observedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := o.Interface.Update(ctx, ler)
	o.observe(ler, err)
	return err
}

func (o *observedLock) observe(ler resourcelock.LeaderElectionRecord, err error) {
	if err == nil && ler.HolderIdentity != "" && ler.HolderIdentity == o.Identity() {
		o.leadership.Lead()
	}
}
