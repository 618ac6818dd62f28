package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/tandem-scheduler/tandem/pkg/sim/invariant"
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
	colorUsed   = "#3b7dd8"
	colorResv   = "#f2a33a"
	colorFail   = "#d62728"
)

// WriteSVG draws one panel per run: per node, the admitted cpu requests
// (blue) with the room reserved for workflow pods stacked on top (orange),
// as a share of allocatable over simulated time; red ticks mark failed jobs.
func WriteSVG(path string, r *Report) error {
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
	plotW := float64(svgWidth - marginLeft - marginRight)
	x := func(t time.Duration) float64 { return marginLeft + plotW*t.Seconds()/end.Seconds() }

	var b bytes.Buffer
	height := 52
	for _, run := range r.Runs {
		height += panelHeader + len(run.Timeline)*(laneHeight+laneGap) + panelFooter
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", svgWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	text(&b, 10, 22, 15, "bold", fmt.Sprintf("Scenario %s: node cpu over simulated time", r.Scenario))
	text(&b, 10, 40, 12, "normal", "blue: admitted requests · orange: reserved for workflow pods · red: a failed job")
	y := 52
	for _, run := range r.Runs {
		failed := fmt.Sprintf("%d of %d jobs failed", run.Jobs.Failed, run.Jobs.Submitted)
		if run.Jobs.Failed > 0 {
			failed += " (" + reasons(run.Jobs.FailedByReason) + ")"
		}
		title := fmt.Sprintf("%s: %s; makespan %.0fs, %.1f jobs/h, cpu util %.0f%%",
			run.Scheduler, failed, run.MakespanSeconds, run.JobsPerHour, 100*run.MeanNodeCPUUtilization)
		if a := run.Autoscale; a != nil {
			title = fmt.Sprintf("%s: %s; start p50/p95 %.0f/%.0fs, %.1f jobs/h; %d nodes launched, %.0f node-s",
				run.Scheduler, failed, run.StartLatency.P50, run.StartLatency.P95, run.JobsPerHour, a.Launched, a.NodeSeconds)
		}
		text(&b, 10, y+28, 13, "bold", title)
		y += panelHeader
		failures := map[string][]Failure{}
		for _, f := range run.Failures {
			failures[f.Node] = append(failures[f.Node], f)
		}
		for _, n := range run.Timeline {
			top, bottom := float64(y), float64(y+laneHeight)
			label := n.Node
			if l := n.Lifetime; l != nil {
				// A node that came during the run: its lane is drawn from
				// its creation to its removal, an outline elsewhere.
				to := end
				if l.Gone {
					to = l.To
				}
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="white" stroke="#ddd" stroke-dasharray="3,3"/>`+"\n", marginLeft, y, plotW, laneHeight)
				fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#f4f4f4" stroke="#ccc"><title>%s: %.0fs to %.0fs</title></rect>`+"\n",
					x(l.From), y, math.Max(1, x(to)-x(l.From)), laneHeight, xmlEscape(n.Node), l.From.Seconds(), to.Seconds())
				if l.Label != "" {
					label = l.Label
				}
			} else {
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="#f4f4f4" stroke="#ccc"/>`+"\n", marginLeft, y, plotW, laneHeight)
			}
			text(&b, 8, y+laneHeight/2+4, 10, "normal", label)
			scale := func(milli int64) float64 {
				if n.AllocatableMilliCPU == 0 {
					return 0
				}
				return float64(laneHeight) * math.Min(1, float64(milli)/float64(n.AllocatableMilliCPU))
			}
			area(&b, n.Samples, end, x, bottom, func(s invariant.Sample) (float64, float64) {
				return 0, scale(s.UsedMilliCPU)
			}, colorUsed)
			area(&b, n.Samples, end, x, bottom, func(s invariant.Sample) (float64, float64) {
				return scale(s.UsedMilliCPU), scale(s.UsedMilliCPU + s.ReservedMilli)
			}, colorResv)
			for _, f := range failures[n.Node] {
				fx := x(time.Duration(f.AtSeconds * float64(time.Second)))
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"><title>job %d: %s</title></line>`+"\n",
					fx, top-2, fx, bottom+2, colorFail, f.Job, xmlEscape(f.Reason))
			}
			y += laneHeight + laneGap
		}
		axis(&b, y, end, x)
		y += panelFooter
	}
	b.WriteString("</svg>\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// area draws a step-shaped band between lo and hi (pixels up from bottom).
func area(b *bytes.Buffer, samples []invariant.Sample, end time.Duration, x func(time.Duration) float64, bottom float64, band func(invariant.Sample) (lo, hi float64), color string) {
	if len(samples) == 0 {
		return
	}
	var upper, lower []string
	for i, s := range samples {
		next := end
		if i+1 < len(samples) {
			next = samples[i+1].T
		}
		lo, hi := band(s)
		upper = append(upper, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(s.T), bottom-hi, x(next), bottom-hi))
		lower = append(lower, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(next), bottom-lo, x(s.T), bottom-lo))
	}
	fmt.Fprintf(b, `<polygon fill="%s" fill-opacity="0.85" points="`, color)
	for _, p := range upper {
		b.WriteString(p + " ")
	}
	for i := len(lower) - 1; i >= 0; i-- {
		b.WriteString(lower[i] + " ")
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
