// Package clock is the simulator's scaled time: durations in scenarios are
// simulated seconds, and a time scale of N runs N simulated seconds per real
// second, so long job streams stay short to run.
package clock

import (
	"context"
	"sync/atomic"
	"time"
)

// Clock maps real time since its start to simulated time. It is safe for
// concurrent use.
type Clock struct {
	start atomic.Int64 // unix nanoseconds
	// stalled is the real time (nanoseconds) during which the process did
	// not run (see WatchStalls): simulated time stands still then.
	stalled atomic.Int64
	scale   float64
}

// New starts a clock running scale simulated seconds per real second
// (scale <= 0 means 1).
func New(scale float64) *Clock {
	if scale <= 0 {
		scale = 1
	}
	c := &Clock{scale: scale}
	c.Reset()
	return c
}

// Reset sets simulated time back to zero.
func (c *Clock) Reset() {
	c.start.Store(time.Now().UnixNano())
	c.stalled.Store(0)
}

// Scale returns the simulated seconds per real second.
func (c *Clock) Scale() float64 { return c.scale }

// Now returns the simulated time elapsed since the clock (re)started.
func (c *Clock) Now() time.Duration {
	return c.Sim(time.Since(time.Unix(0, c.start.Load())) - time.Duration(c.stalled.Load()))
}

// Sim converts a real duration to simulated time.
func (c *Clock) Sim(d time.Duration) time.Duration {
	return time.Duration(float64(d) * c.scale)
}

// Real converts a simulated duration to real time.
func (c *Clock) Real(sim time.Duration) time.Duration {
	return time.Duration(float64(sim) / c.scale)
}

// Sleep waits until the simulated duration d has passed or ctx ends.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	until := c.Now() + d
	for {
		left := until - c.Now()
		if left <= 0 {
			return nil
		}
		t := time.NewTimer(c.Real(left))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// stallCheck is how often WatchStalls looks; a look more than stallSlack
// late counts as a stall.
const (
	stallCheck = 50 * time.Millisecond
	stallSlack = time.Second
)

// WatchStalls holds simulated time while the process does not run: on a
// shared machine the host may stop every process for seconds (a heavy build
// next door, a paused VM), and at a time scale of 20 a 30 s stall would
// otherwise be 10 simulated minutes in which nothing could happen, enough to
// time a workflow pod out. It checks every 50 ms; a check that comes more
// than a second late counts its delay as stalled, and onStall (if set) is
// told. It returns when ctx ends.
func (c *Clock) WatchStalls(ctx context.Context, onStall func(time.Duration)) {
	ticker := time.NewTicker(stallCheck)
	defer ticker.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			if gap := now.Sub(last); gap > stallCheck+stallSlack {
				c.stalled.Add(int64(gap - stallCheck))
				if onStall != nil {
					onStall(gap - stallCheck)
				}
			}
			last = now
		}
	}
}

// Stalled returns the real time held since the last Reset.
func (c *Clock) Stalled() time.Duration { return time.Duration(c.stalled.Load()) }
