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
	scale float64
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
func (c *Clock) Reset() { c.start.Store(time.Now().UnixNano()) }

// Scale returns the simulated seconds per real second.
func (c *Clock) Scale() float64 { return c.scale }

// Now returns the simulated time elapsed since the clock (re)started.
func (c *Clock) Now() time.Duration {
	return c.Sim(time.Since(time.Unix(0, c.start.Load())))
}

// Sim converts a real duration to simulated time.
func (c *Clock) Sim(d time.Duration) time.Duration {
	return time.Duration(float64(d) * c.scale)
}

// Real converts a simulated duration to real time.
func (c *Clock) Real(sim time.Duration) time.Duration {
	return time.Duration(float64(sim) / c.scale)
}

// Sleep waits for the simulated duration d or until ctx ends.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(c.Real(d))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
