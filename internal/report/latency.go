package report

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// EndpointSeries is one inference endpoint's latency over a run.
type EndpointSeries struct {
	Name  string
	SLOMs float64
	// Metric is what P95Ms measures, "ttft" or "request"; the plot's title
	// and axis name it.
	Metric string
	// P95Ms is the p95 latency in ms of each minute from the start of the
	// run; NaN for a minute without requests.
	P95Ms []float64
}

// latencyFloorMs is the least latency the log axis shows: a p95 below it
// (0 ms, say) is drawn there. gonum's log ticks start at 1 for ranges
// below 1, so the floor is 1 ms.
const latencyFloorMs = 1

// latencyFile names run i's (from 1) plot of the endpoint called name,
// unique among the names already in used, which it extends.
func latencyFile(i int, name string, used map[string]bool) string {
	base := fileSafe(name)
	f := fmt.Sprintf("latency-%d-%s.png", i, base)
	for k := 2; used[f]; k++ {
		f = fmt.Sprintf("latency-%d-%s-%d.png", i, base, k)
	}
	used[f] = true
	return f
}

// fileSafe is name with every run of characters other than ASCII letters,
// digits, '.', '-' and '_' replaced by one '_', so it can be part of a file
// name and of a URL unescaped.
func fileSafe(name string) string {
	var b strings.Builder
	gap := false
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
		switch {
		case ok:
			b.WriteRune(c)
			gap = false
		case !gap:
			b.WriteByte('_')
			gap = true
		}
	}
	if b.Len() == 0 {
		return "endpoint"
	}
	return b.String()
}

// saveLatency plots e's per-minute p95 over hours from the start on a log
// axis, with its SLO as a dashed line labelled at its right end. Minutes
// without requests leave gaps; a minute alone between gaps is a dot.
func saveLatency(path, run string, e EndpointSeries) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s p95 %s per minute", run, e.Name, e.Metric)
	p.X.Label.Text = "hours from start"
	p.Y.Label.Text = fmt.Sprintf("p95 %s, ms (log)", e.Metric)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}

	p95 := draw.LineStyle{Color: plotutil.Color(2), Width: vg.Points(1)}
	lo, hi := math.Inf(1), math.Inf(-1)
	var segment, lone plotter.XYs
	flush := func() error {
		switch len(segment) {
		case 0:
			return nil
		case 1: // a line of one point draws nothing
			lone = append(lone, segment[0])
		default:
			l, err := plotter.NewLine(segment)
			if err != nil {
				return err
			}
			l.LineStyle = p95
			p.Add(l)
		}
		segment = nil
		return nil
	}
	for m, v := range e.P95Ms {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		v = max(v, latencyFloorMs)
		lo, hi = min(lo, v), max(hi, v)
		segment = append(segment, plotter.XY{X: float64(m) / 60, Y: v})
	}
	if err := flush(); err != nil {
		return err
	}
	if len(lone) > 0 {
		s, err := plotter.NewScatter(lone)
		if err != nil {
			return err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: p95.Color, Radius: vg.Points(1.2), Shape: draw.CircleGlyph{}}
		p.Add(s)
	}

	hours := float64(len(e.P95Ms)) / 60
	if hours == 0 {
		hours = 1
	}
	if e.SLOMs > 0 && !math.IsInf(e.SLOMs, 0) {
		slo, err := plotter.NewLine(plotter.XYs{{X: 0, Y: e.SLOMs}, {X: hours, Y: e.SLOMs}})
		if err != nil {
			return err
		}
		slo.Color = color.RGBA{R: 200, A: 255}
		slo.Width = vg.Points(1.5)
		slo.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
		label, err := plotter.NewLabels(plotter.XYLabels{
			XYs: plotter.XYs{{X: hours, Y: e.SLOMs}}, Labels: []string{fmt.Sprintf("SLO %g ms", e.SLOMs)}})
		if err != nil {
			return err
		}
		label.TextStyle[0].Color = slo.Color
		label.TextStyle[0].XAlign = draw.XRight
		label.Offset = vg.Point{X: -vg.Points(4), Y: vg.Points(3)}
		p.Add(slo, label)
		lo, hi = min(lo, e.SLOMs), max(hi, e.SLOMs)
	}
	p.Add(plotter.NewGrid())

	// Whole decades, so that the log axis has a labelled tick at both ends
	// (and a range at all when there is nothing to draw).
	if math.IsInf(lo, 0) {
		lo, hi = 1, 1
	}
	p.Y.Min = math.Pow(10, math.Floor(math.Log10(lo)))
	p.Y.Max = math.Pow(10, math.Ceil(math.Log10(hi)))
	if p.Y.Max <= p.Y.Min {
		p.Y.Max = 10 * p.Y.Min
	}
	p.X.Min, p.X.Max = 0, hours
	return p.Save(10*vg.Inch, 4*vg.Inch, path)
}
