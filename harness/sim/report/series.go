package report

import (
	"math"
	"sort"
	"time"
)

// cpuStep is what a set of nodes had from T on, until the next step, in
// millicores: admitted requests, reserved room and allocatable.
type cpuStep struct {
	T           time.Duration
	Used        int64
	Reserved    int64
	Allocatable int64
}

// forever is the end of a node's existence when it was not removed.
const forever = time.Duration(math.MaxInt64)

// existence returns when n counts: a scenario's node from the start on, a
// node that came during the run over its lifetime.
func existence(n *NodeTimeline) (from, to time.Duration) {
	l := n.Lifetime
	switch {
	case l == nil:
		return 0, forever
	case l.Gone:
		return l.From, l.To
	}
	return l.From, forever
}

// cpuSeries sums the nodes' cpu into one step function. The invariant
// checker samples each node at its own change points, so there is no
// common grid: each sample holds until its node's next one, clipped to the
// node's existence (as does its allocatable); it adds its values where it
// starts and takes them away where it ends, and a sweep over those changes
// in time order gives the sum wherever any node changed.
func cpuSeries(nodes []NodeTimeline) []cpuStep {
	var changes []cpuStep
	for i := range nodes {
		changes = nodeChanges(changes, &nodes[i])
	}
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].T < changes[j].T })
	var steps []cpuStep
	var sum cpuStep
	for i, c := range changes {
		sum.Used += c.Used
		sum.Reserved += c.Reserved
		sum.Allocatable += c.Allocatable
		if i+1 < len(changes) && changes[i+1].T == c.T {
			continue
		}
		sum.T = c.T
		if k := len(steps); k > 0 && steps[k-1].Used == sum.Used && steps[k-1].Reserved == sum.Reserved && steps[k-1].Allocatable == sum.Allocatable {
			continue
		}
		steps = append(steps, sum)
	}
	return steps
}

// nodeChanges appends n's changes to changes: cpuSteps holding the amount
// each value changes by at T.
func nodeChanges(changes []cpuStep, n *NodeTimeline) []cpuStep {
	from, to := existence(n)
	if to <= from {
		return changes
	}
	changes = append(changes, cpuStep{T: from, Allocatable: n.AllocatableMilliCPU})
	if to != forever {
		changes = append(changes, cpuStep{T: to, Allocatable: -n.AllocatableMilliCPU})
	}
	for i, s := range n.Samples {
		next := forever
		if i+1 < len(n.Samples) {
			next = n.Samples[i+1].T
		}
		start, end := max(s.T, from), min(next, to)
		if end <= start || (s.UsedMilliCPU == 0 && s.ReservedMilli == 0) {
			continue
		}
		changes = append(changes, cpuStep{T: start, Used: s.UsedMilliCPU, Reserved: s.ReservedMilli})
		if end != forever {
			changes = append(changes, cpuStep{T: end, Used: -s.UsedMilliCPU, Reserved: -s.ReservedMilli})
		}
	}
	return changes
}

// cpuColumn is a step function integrated over a column of the picture,
// in millicore-seconds.
type cpuColumn struct {
	Used, Reserved, Allocatable float64
}

// columns integrates steps over n equal columns of [0, end]: what a
// column shows is the time-weighted mean over its span, so a short peak
// counts for its length and no change point is lost between columns.
func columns(steps []cpuStep, end time.Duration, n int) []cpuColumn {
	cols := make([]cpuColumn, n)
	width := end.Seconds() / float64(n)
	for i, s := range steps {
		from, to := s.T.Seconds(), end.Seconds()
		if i+1 < len(steps) {
			to = min(to, steps[i+1].T.Seconds())
		}
		for c := max(0, int(from/width)); c < n && float64(c)*width < to; c++ {
			if d := min(to, float64(c+1)*width) - max(from, float64(c)*width); d > 0 {
				cols[c].Used += float64(s.Used) * d
				cols[c].Reserved += float64(s.Reserved) * d
				cols[c].Allocatable += float64(s.Allocatable) * d
			}
		}
	}
	return cols
}
