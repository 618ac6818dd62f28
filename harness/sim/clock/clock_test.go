package clock

import (
	"testing"
	"time"
)

func TestStalledTimeDoesNotPass(t *testing.T) {
	c := New(20)
	before := c.Now()
	c.stalled.Add(int64(time.Hour)) // as WatchStalls adds a stall
	if got := c.Now(); got >= before {
		t.Errorf("Now() = %v after a stall of an hour, want less than %v before it", got, before)
	}
	c.Reset()
	if c.Stalled() != 0 || c.Now() > time.Second {
		t.Errorf("after Reset: stalled %v, now %v; want 0 and about 0", c.Stalled(), c.Now())
	}
}

func TestSleep(t *testing.T) {
	c := New(1000)
	start := c.Now()
	if err := c.Sleep(t.Context(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := c.Now() - start; got < 10*time.Second {
		t.Errorf("slept %v simulated, want at least 10s", got)
	}
}
