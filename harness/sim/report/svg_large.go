package report

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Geometry of a large run's panel (more than maxLanes nodes), in pixels.
const (
	// failStrip holds a tick per failed job, above the cluster view.
	failStrip     = 10
	clusterHeight = 80
	// heatmapHeight is the heatmap's height at most: its rows are
	// heatmapHeight / nodes high, between 1 and maxRowHeight, so it is
	// bounded up to heatmapHeight nodes.
	heatmapHeight = 300
	maxRowHeight  = 6
	// heatColumns buckets time in the heatmap and the cluster view: 3 px
	// a column. A cell a node and column, not a shape a sample, keeps the
	// file small: 100 nodes' cells take 350 kB a run at the most (each
	// column of each row a stroke of its own); a synthetic 100-node run of
	// the tests draws in 140 kB all told.
	heatColumns  = 270
	legendHeight = 80
	colorFree    = "#cfe3c6"
	colorMixed   = "#9467bd"
	colorGround  = "#f4f4f4"
)

// heatAlpha is the strength of a heatmap cell's hue by fifth of the node's
// allocatable held (admitted + reserved): 1-20%, ..., 80-100%.
var heatAlpha = []float64{0.25, 0.45, 0.65, 0.85, 1}

// heatHues is a heatmap cell's hue by the part of what the node held that
// was reserved: under 10%, 10-50%, over 50%.
var heatHues = []string{colorUsed, colorMixed, colorResv}

// heatPalette holds the cells' colours, by hue then strength.
var heatPalette = func() [][]string {
	p := make([][]string, len(heatHues))
	for h, hue := range heatHues {
		for _, a := range heatAlpha {
			p[h] = append(p[h], shade(hue, a))
		}
	}
	return p
}()

// shade blends the #rrggbb colour hex over white, alpha its weight: an
// opaque colour, so that the cells need no opacity of their own.
func shade(hex string, alpha float64) string {
	v, _ := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	out := "#"
	for _, shift := range []uint{16, 8, 0} {
		c := float64(v >> shift & 0xff)
		out += fmt.Sprintf("%02x", int(math.Round(255-(255-c)*alpha)))
	}
	return out
}

// heatColor is the colour of a node's cell: "" where the node held
// nothing or was not there.
func heatColor(c cpuColumn) string {
	held := c.Used + c.Reserved
	if c.Allocatable <= 0 || held <= 0 {
		return ""
	}
	fill := min(1, held/c.Allocatable)
	level := min(len(heatAlpha)-1, int(math.Ceil(fill*float64(len(heatAlpha))))-1)
	hue := 0
	switch r := c.Reserved / held; {
	case r > 0.5:
		hue = 2
	case r >= 0.1:
		hue = 1
	}
	return heatPalette[hue][level]
}

// rowHeight is the height of a node's heatmap row in a run of nodes.
func rowHeight(nodes int) int { return max(1, min(maxRowHeight, heatmapHeight/max(1, nodes))) }

// largeHeight is the height of a large run's drawing, between its title and
// its time axis.
func largeHeight(nodes int) int {
	return failStrip + 4 + clusterHeight + 10 + nodes*rowHeight(nodes) + 6
}

// legend explains the large runs' drawing under the picture's title: the
// cluster view, and the heatmap's colour scale (strength by how full a
// node was, hue by how much of it was reserved).
func legend(b *bytes.Buffer, y int) {
	text(b, 10, y+8, 11, "normal", fmt.Sprintf("A run of more than %d nodes: its cluster's cpu as a share of the allocatable of the nodes there at the time (green: free),", maxLanes))
	text(b, 10, y+22, 11, "normal", "then a row per node, coloured by (admitted + reserved) / allocatable and by the part of it reserved; red marks on a row: failed jobs.")
	const swatchW, swatchH = 44, 9
	text(b, 10, y+38, 9, "normal", "admitted + reserved:")
	for level := range heatAlpha {
		lo := 20 * level
		text(b, marginLeft+level*(swatchW+2)+4, y+38, 9, "normal", fmt.Sprintf("%d-%d%%", max(1, lo), lo+20))
	}
	for h, label := range []string{"< 10% of it reserved", "10-50% reserved", "> 50% reserved"} {
		top := y + 42 + h*(swatchH+1)
		text(b, 10, top+8, 9, "normal", label)
		for level, color := range heatPalette[h] {
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", marginLeft+level*(swatchW+2), top, swatchW, swatchH, color)
		}
	}
}

// drawLarge draws a large run from y on and returns where it ends: its
// failed jobs as ticks, its cluster's cpu, and a heatmap row per node.
func drawLarge(b *bytes.Buffer, run *Run, y int, p plot) int {
	failureTicks(b, run, y, p)
	clusterView(b, run.Timeline, y+failStrip+4, p)
	heatmap(b, run, y+failStrip+4+clusterHeight+10, p)
	return y + largeHeight(len(run.Timeline))
}

// failureTicks marks each failed job of run at its time (hover for the
// job, its node and its reason).
func failureTicks(b *bytes.Buffer, run *Run, y int, p plot) {
	text(b, 8, y+failStrip-1, 9, "normal", "failed jobs")
	for _, f := range run.Failures {
		fx := p.x(f.at())
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="1.5"><title>job %d on %s at %.0fs: %s</title></line>`+"\n",
			fx, y, fx, y+failStrip, colorFail, f.Job, xmlEscape(f.Node), f.AtSeconds, xmlEscape(f.Reason))
	}
}

// clusterView draws the admitted (blue), reserved (orange) and free
// (green) cpu of nodes stacked, as a share of their allocatable: that of
// the nodes there in each column of time, so a launched node counts only
// while it exists. Columns without any node are left blank.
func clusterView(b *bytes.Buffer, nodes []NodeTimeline, y int, p plot) {
	steps := cpuSeries(nodes)
	cols := columns(steps, p.end, heatColumns)
	bottom := float64(y + clusterHeight)
	fmt.Fprintf(b, `<rect class="cluster" x="%d" y="%d" width="%.1f" height="%d" fill="white" stroke="#ccc"/>`+"\n", marginLeft, y, p.width, clusterHeight)
	height := func(milli, alloc float64) float64 { return clusterHeight * min(1, milli/alloc) }
	for from := 0; from < len(cols); {
		if cols[from].Allocatable <= 0 {
			from++
			continue
		}
		var used, reserved, free []band
		to := from
		for ; to < len(cols) && cols[to].Allocatable > 0; to++ {
			c := cols[to]
			x0, x1 := columnX(p, to), columnX(p, to+1)
			u, ur := height(c.Used, c.Allocatable), height(c.Used+c.Reserved, c.Allocatable)
			used = append(used, band{x0: x0, x1: x1, hi: u})
			reserved = append(reserved, band{x0: x0, x1: x1, lo: u, hi: ur})
			free = append(free, band{x0: x0, x1: x1, lo: ur, hi: clusterHeight})
		}
		area(b, used, bottom, colorUsed)
		area(b, reserved, bottom, colorResv)
		area(b, free, bottom, colorFree)
		from = to
	}
	for _, share := range []int{0, 50, 100} {
		sy := y + clusterHeight - clusterHeight*share/100
		if share == 50 {
			fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%.1f" y2="%d" stroke="white" stroke-opacity="0.7"/>`+"\n", marginLeft, sy, marginLeft+p.width, sy)
		}
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="9" text-anchor="end">%d%%</text>`+"\n", marginLeft-4, sy+3, share)
	}
	text(b, 8, y+clusterHeight/2-2, 10, "normal", "cluster")
	text(b, 8, y+clusterHeight/2+11, 10, "normal", allocatableRange(steps))
}

// columnX is where column c of the heatmap and the cluster view starts.
func columnX(p plot, c int) float64 { return marginLeft + p.width*float64(c)/heatColumns }

// allocatableRange says how much cpu the nodes had: "1600 cpu", or the
// least and the most, "64-400 cpu", where nodes came and went.
func allocatableRange(steps []cpuStep) string {
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, s := range steps {
		if s.Allocatable > 0 {
			lo, hi = min(lo, s.Allocatable), max(hi, s.Allocatable)
		}
	}
	cpu := func(milli int64) string { return strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64) }
	switch {
	case hi == 0:
		return "no cpu"
	case lo == hi:
		return cpu(hi) + " cpu"
	}
	return cpu(lo) + "-" + cpu(hi) + " cpu"
}

// heatmap draws a row per node of run from y on: grey while the node
// exists (hover for its name), a cell per column of time it held
// anything, and a red mark per job that failed on it. Cells of a colour
// form one path of horizontal strokes, a stroke per run of equal cells,
// which keeps the file small.
func heatmap(b *bytes.Buffer, run *Run, y int, p plot) {
	rowH := rowHeight(len(run.Timeline))
	cells := map[string]*strings.Builder{}
	rows := map[string]int{}
	every := labelEvery(rowH)
	for i, n := range heatmapRows(run.Timeline) {
		top := y + i*rowH
		rows[n.Node] = top
		heatRow(b, n, top, rowH, p)
		if i%every == 0 {
			text(b, 8, top+rowH/2+3, 8, "normal", nodeLabel(n))
		}
		rowCells(cells, n, float64(top)+float64(rowH)/2, p)
	}
	fmt.Fprintf(b, `<g class="heatmap" fill="none" stroke-width="%d" pointer-events="none" shape-rendering="crispEdges">`+"\n", rowH)
	for _, hue := range heatPalette {
		for _, color := range hue {
			if d, ok := cells[color]; ok {
				fmt.Fprintf(b, `<path stroke="%s" d="%s"/>`+"\n", color, d.String())
			}
		}
	}
	var marks strings.Builder
	for _, f := range run.Failures {
		if top, ok := rows[f.Node]; ok {
			fmt.Fprintf(&marks, "M%s %dv%d", num(p.x(f.at())), top-1, rowH+2)
		}
	}
	if marks.Len() > 0 {
		fmt.Fprintf(b, `<path stroke="%s" stroke-width="1.5" d="%s"/>`+"\n", colorFail, marks.String())
	}
	b.WriteString("</g>\n")
}

// heatmapRows orders the heatmap's rows: the scenario's nodes by name,
// numbers in names by value (sim-node-2 before sim-node-10, so that every
// tenth row's label counts on), then the nodes that came during the run,
// in the order they came (as their lanes are).
func heatmapRows(nodes []NodeTimeline) []*NodeTimeline {
	var static, came []*NodeTimeline
	for i := range nodes {
		if nodes[i].Lifetime == nil {
			static = append(static, &nodes[i])
		} else {
			came = append(came, &nodes[i])
		}
	}
	sort.SliceStable(static, func(i, j int) bool { return naturalLess(static[i].Node, static[j].Node) })
	return append(static, came...)
}

// naturalLess orders a before b, comparing runs of digits by their value.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da == 0 || db == 0 {
			if a[0] != b[0] {
				return a[0] < b[0]
			}
			a, b = a[1:], b[1:]
			continue
		}
		na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
		if len(na) != len(nb) {
			return len(na) < len(nb)
		}
		if na != nb {
			return na < nb
		}
		a, b = a[da:], b[db:]
	}
	return len(a) < len(b)
}

// digits is the length of the run of digits s starts with.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// heatRow draws the ground of n's row: over the time n existed, with its
// name (and when it came and went) to hover over.
func heatRow(b *bytes.Buffer, n *NodeTimeline, top, rowH int, p plot) {
	from, to := existence(n)
	to = min(to, p.end)
	title := n.Node
	if l := n.Lifetime; l != nil {
		title = fmt.Sprintf("%s %s: %.0fs to %.0fs", nodeLabel(n), n.Node, from.Seconds(), to.Seconds())
	}
	fmt.Fprintf(b, `<rect x="%s" y="%d" width="%s" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
		num(p.x(from)), top, num(max(1, p.x(to)-p.x(from))), rowH, colorGround, xmlEscape(title))
}

// rowCells adds n's cells to the paths by colour, on the row centred at
// yc: runs of columns of a colour as one stroke.
func rowCells(cells map[string]*strings.Builder, n *NodeTimeline, yc float64, p plot) {
	cols := columns(cpuSeries([]NodeTimeline{*n}), p.end, heatColumns)
	for from := 0; from < len(cols); {
		color := heatColor(cols[from])
		to := from + 1
		for to < len(cols) && heatColor(cols[to]) == color {
			to++
		}
		if color != "" {
			d, ok := cells[color]
			if !ok {
				d = &strings.Builder{}
				cells[color] = d
			}
			fmt.Fprintf(d, "M%s %sh%s", num(columnX(p, from)), num(yc), num(columnX(p, to)-columnX(p, from)))
		}
		from = to
	}
}

// nodeLabel names n in the picture: its label if it came during the run.
func nodeLabel(n *NodeTimeline) string {
	if n.Lifetime != nil && n.Lifetime.Label != "" {
		return n.Lifetime.Label
	}
	return n.Node
}

// labelEvery is how many heatmap rows of rowH pixels come per label, so
// that labels stand at least 24 px apart: 1, 2, 5, 10, 20, 50, ...
func labelEvery(rowH int) int {
	for every := 1; ; every *= 10 {
		for _, k := range []int{every, 2 * every, 5 * every} {
			if k*rowH >= 24 {
				return k
			}
		}
	}
}

// num formats a coordinate to a tenth of a pixel, without trailing zeros:
// the heatmap writes tens of thousands of them.
func num(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }
