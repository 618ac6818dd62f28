package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/tandem-scheduler/tandem/harness/sim/invariant"
)

// Picture geometry, in pixels.
const (
	svgWidth    = 960
	marginLeft  = 130
	marginRight = 20
	laneHeight  = 34
	laneGap     = 6
	panelHeader = 46
	panelFooter = 26
	// pictureHeader holds the picture's title and key.
	pictureHeader = 52
	colorUsed     = "#3b7dd8"
	colorResv     = "#f2a33a"
	colorFail     = "#d62728"
)

// maxLanes is the most nodes a run draws as lanes. Beyond it a lane per
// node makes the picture too tall to read (100 nodes: 4000 px a run), so
// a larger run is drawn as its cluster's cpu and a heatmap of its nodes
// (svg_large.go).
const maxLanes = 16

// plot maps simulated time to x, the same for every panel so that runs
// compare at a glance.
type plot struct {
	end   time.Duration
	width float64
}

func (p plot) x(t time.Duration) float64 {
	return marginLeft + p.width*t.Seconds()/p.end.Seconds()
}

// WriteSVG draws one panel per run: per node, the admitted cpu requests
// (blue) with the room reserved for workflow pods stacked on top (orange),
// as a share of allocatable over simulated time; red ticks mark failed jobs.
// A run of more than maxLanes nodes is drawn instead as the cluster's
// admitted, reserved and free cpu over time and a heatmap row per node.
func WriteSVG(path string, r *Report) error {
	p := plot{end: pictureEnd(r), width: float64(svgWidth - marginLeft - marginRight)}
	height, anyLarge := pictureHeader, false
	for i := range r.Runs {
		height += panelHeight(&r.Runs[i])
		anyLarge = anyLarge || large(&r.Runs[i])
	}
	if anyLarge {
		height += legendHeight
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", svgWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	text(&b, 10, 22, 15, "bold", fmt.Sprintf("Scenario %s: node cpu over simulated time", r.Scenario))
	text(&b, 10, 40, 12, "normal", "blue: admitted requests · orange: reserved for workflow pods · red: a failed job")
	y := pictureHeader
	if anyLarge {
		legend(&b, y)
		y += legendHeight
	}
	for i := range r.Runs {
		run := &r.Runs[i]
		text(&b, 10, y+28, 13, "bold", panelTitle(run))
		y += panelHeader
		if large(run) {
			y = drawLarge(&b, run, y, p)
		} else {
			y = drawLanes(&b, run, y, p)
		}
		axis(&b, y, p.end, p.x)
		y += panelFooter
	}
	b.WriteString("</svg>\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// pictureEnd is the simulated time the x axis ends at: the last run's end
// or last sample, whichever is later.
func pictureEnd(r *Report) time.Duration {
	var end time.Duration
	for _, run := range r.Runs {
		end = max(end, run.start+time.Duration(run.MakespanSeconds*float64(time.Second)))
		for _, n := range run.Timeline {
			if len(n.Samples) > 0 {
				end = max(end, n.Samples[len(n.Samples)-1].T)
			}
		}
	}
	if end <= 0 {
		end = time.Second
	}
	return end
}

// large reports whether run is drawn as a cluster view and a heatmap.
func large(run *Run) bool { return len(run.Timeline) > maxLanes }

// panelHeight is the height of run's panel, title and time axis included.
func panelHeight(run *Run) int {
	if large(run) {
		return panelHeader + largeHeight(len(run.Timeline)) + panelFooter
	}
	return panelHeader + len(run.Timeline)*(laneHeight+laneGap) + panelFooter
}

// panelTitle sums run up above its panel.
func panelTitle(run *Run) string {
	failed := fmt.Sprintf("%d of %d jobs failed", run.Jobs.Failed, run.Jobs.Submitted)
	if run.Jobs.Failed > 0 {
		failed += " (" + reasons(run.Jobs.FailedByReason) + ")"
	}
	if a := run.Autoscale; a != nil {
		return fmt.Sprintf("%s: %s; start p50/p95 %.0f/%.0fs, %.1f jobs/h; %d nodes launched, %.0f node-s",
			run.Scheduler, failed, run.StartLatency.P50, run.StartLatency.P95, run.JobsPerHour, a.Launched, a.NodeSeconds)
	}
	return fmt.Sprintf("%s: %s; makespan %.0fs, %.1f jobs/h, cpu util %.0f%%",
		run.Scheduler, failed, run.MakespanSeconds, run.JobsPerHour, 100*run.MeanNodeCPUUtilization)
}

// drawLanes draws a lane per node of run from y on and returns where the
// lanes end.
func drawLanes(b *bytes.Buffer, run *Run, y int, p plot) int {
	failures := failuresByNode(run)
	for _, n := range run.Timeline {
		top, bottom := float64(y), float64(y+laneHeight)
		label := n.Node
		if l := n.Lifetime; l != nil {
			// A node that came during the run: its lane is drawn from
			// its creation to its removal, an outline elsewhere.
			to := p.end
			if l.Gone {
				to = l.To
			}
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="white" stroke="#ddd" stroke-dasharray="3,3"/>`+"\n", marginLeft, y, p.width, laneHeight)
			fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#f4f4f4" stroke="#ccc"><title>%s: %.0fs to %.0fs</title></rect>`+"\n",
				p.x(l.From), y, math.Max(1, p.x(to)-p.x(l.From)), laneHeight, xmlEscape(n.Node), l.From.Seconds(), to.Seconds())
			if l.Label != "" {
				label = l.Label
			}
		} else {
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="#f4f4f4" stroke="#ccc"/>`+"\n", marginLeft, y, p.width, laneHeight)
		}
		text(b, 8, y+laneHeight/2+4, 10, "normal", label)
		scale := func(milli int64) float64 {
			if n.AllocatableMilliCPU == 0 {
				return 0
			}
			return float64(laneHeight) * math.Min(1, float64(milli)/float64(n.AllocatableMilliCPU))
		}
		area(b, sampleBands(n.Samples, p, func(s invariant.Sample) (float64, float64) {
			return 0, scale(s.UsedMilliCPU)
		}), bottom, colorUsed)
		area(b, sampleBands(n.Samples, p, func(s invariant.Sample) (float64, float64) {
			return scale(s.UsedMilliCPU), scale(s.UsedMilliCPU + s.ReservedMilli)
		}), bottom, colorResv)
		for _, f := range failures[n.Node] {
			fx := p.x(f.at())
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"><title>job %d: %s</title></line>`+"\n",
				fx, top-2, fx, bottom+2, colorFail, f.Job, xmlEscape(f.Reason))
		}
		y += laneHeight + laneGap
	}
	return y
}

// failuresByNode groups run's failed jobs by the node they failed on.
func failuresByNode(run *Run) map[string][]Failure {
	failures := map[string][]Failure{}
	for _, f := range run.Failures {
		failures[f.Node] = append(failures[f.Node], f)
	}
	return failures
}

// at is when the job failed, simulated.
func (f *Failure) at() time.Duration { return time.Duration(f.AtSeconds * float64(time.Second)) }

// band is a step of an area: from x0 to x1, between lo and hi (pixels up
// from the area's bottom).
type band struct{ x0, x1, lo, hi float64 }

// sampleBands turns a node's samples into the steps of an area: each
// sample holds until the next one, the last one to the end.
func sampleBands(samples []invariant.Sample, p plot, bounds func(invariant.Sample) (lo, hi float64)) []band {
	bands := make([]band, 0, len(samples))
	for i, s := range samples {
		next := p.end
		if i+1 < len(samples) {
			next = samples[i+1].T
		}
		lo, hi := bounds(s)
		bands = append(bands, band{x0: p.x(s.T), x1: p.x(next), lo: lo, hi: hi})
	}
	return bands
}

// area draws bands as one step-shaped polygon.
func area(b *bytes.Buffer, bands []band, bottom float64, color string) {
	if len(bands) == 0 {
		return
	}
	fmt.Fprintf(b, `<polygon fill="%s" fill-opacity="0.85" points="`, color)
	for _, s := range bands {
		fmt.Fprintf(b, "%.1f,%.1f %.1f,%.1f ", s.x0, bottom-s.hi, s.x1, bottom-s.hi)
	}
	for i := len(bands) - 1; i >= 0; i-- {
		s := bands[i]
		fmt.Fprintf(b, "%.1f,%.1f %.1f,%.1f ", s.x1, bottom-s.lo, s.x0, bottom-s.lo)
	}
	b.WriteString(`"/>` + "\n")
}

func axis(b *bytes.Buffer, y int, end time.Duration, x func(time.Duration) float64) {
	step := time.Minute
	for end/step > 12 {
		step *= 2
	}
	for t := time.Duration(0); t <= end; t += step {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888"/>`+"\n", x(t), y-2, x(t), y+3)
		text(b, int(x(t))-10, y+15, 10, "normal", fmt.Sprintf("%dm", int(t.Minutes())))
	}
}

func text(b *bytes.Buffer, x, y, size int, weight, s string) {
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="%d" font-weight="%s">%s</text>`+"\n", x, y, size, weight, xmlEscape(s))
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
