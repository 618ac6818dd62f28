// Package retry keeps trying the API writes of the simulator's emulators
// until they go through, as the controllers they play do with their work
// queues: a write that fails (the apiserver is restarting, a request timed
// out) is tried again shortly after, until it succeeds, becomes moot, or the
// run ends. Without it an emulator would drop the write, and the pod it was
// for would stay Pending, Running or undeleted forever.
package retry

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// DefaultPeriod is how often pending writes are tried again (real time).
const DefaultPeriod = 200 * time.Millisecond

// Queue holds the writes that failed, by key; a later write under the same
// key replaces an earlier one (the latest status of a pod wins).
type Queue struct {
	period time.Duration

	mu      sync.Mutex
	pending map[string]entry
	// gen counts the writes under each key: a retry of an older write is
	// dropped once a newer one came.
	gen map[string]uint64
	// busy counts writes being tried, so Len does not report a write in
	// flight as done.
	busy int
}

type entry struct {
	write func(context.Context) error
	gen   uint64
}

// New returns a queue that tries pending writes every period (DefaultPeriod
// if zero) once Run runs.
func New(period time.Duration) *Queue {
	if period <= 0 {
		period = DefaultPeriod
	}
	return &Queue{period: period, pending: map[string]entry{}, gen: map[string]uint64{}}
}

// Do runs write now. If it fails, the queue keeps it under key and tries it
// again every period until it returns nil. write reports a write that has
// become moot (its object is gone) as success.
func (q *Queue) Do(ctx context.Context, key string, write func(context.Context) error) {
	q.mu.Lock()
	delete(q.pending, key) // this write supersedes a pending one
	q.gen[key]++
	e := entry{write: write, gen: q.gen[key]}
	q.busy++
	q.mu.Unlock()
	err := write(ctx)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("API write failed; retrying", "key", key, "err", err)
	}
	q.done(key, e, err)
}

// done records the outcome of a try of e: a failed write stays pending
// unless a newer one under the same key came meanwhile.
func (q *Queue) done(key string, e entry, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.busy--
	if err != nil && q.gen[key] == e.gen {
		q.pending[key] = e
	}
}

// Run tries the pending writes every period until ctx ends.
func (q *Queue) Run(ctx context.Context) {
	ticker := time.NewTicker(q.period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		q.mu.Lock()
		batch := q.pending
		q.pending = map[string]entry{}
		q.busy += len(batch)
		q.mu.Unlock()
		for key, e := range batch {
			q.done(key, e, e.write(ctx))
		}
	}
}

// Len returns the number of writes not yet through.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending) + q.busy
}
