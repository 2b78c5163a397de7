package report

import (
	"fmt"
	"html/template"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Run is one simulation run as the report shows it.
type Run struct {
	Name string // e.g. "allot, borrow"
	// Utilisation is the share of GPUs in use per bucket of SampleHours.
	Utilisation []float64
	SampleHours float64
	// QueueDelays are the jobs' queueing delays in seconds, in any order.
	QueueDelays []float64
	Tenants     []Tenant
	// Figures are name/value rows for the summary table, in order.
	Figures [][2]string
	// Endpoints get one latency plot each.
	Endpoints []EndpointSeries
}

// Tenant is one tenant's average use against its guarantee, in GPUs.
type Tenant struct {
	Name       string
	Guaranteed float64
	AvgUsed    float64
}

// Write renders runs into dir (created if need be): utilisation.png,
// queueing_cdf.png, one tenants-N.png per run, one latency-N-ENDPOINT.png
// per endpoint of run N (the name made file-safe), and index.html.
func Write(dir, title string, runs []Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := saveUtilisation(filepath.Join(dir, "utilisation.png"), runs); err != nil {
		return fmt.Errorf("utilisation plot: %w", err)
	}
	if err := saveQueueCDF(filepath.Join(dir, "queueing_cdf.png"), runs); err != nil {
		return fmt.Errorf("queueing-delay plot: %w", err)
	}
	page := pageData{Title: title}
	for i, r := range runs {
		name := fmt.Sprintf("tenants-%d.png", i+1)
		if err := saveTenants(filepath.Join(dir, name), r); err != nil {
			return fmt.Errorf("tenant plot of %s: %w", r.Name, err)
		}
		pr := pageRun{Name: r.Name, TenantPlot: name, Figures: r.Figures}
		used := map[string]bool{}
		for _, e := range r.Endpoints {
			name := latencyFile(i+1, e.Name, used)
			if err := saveLatency(filepath.Join(dir, name), r.Name, e); err != nil {
				return fmt.Errorf("latency plot of %s, %s: %w", r.Name, e.Name, err)
			}
			pr.Latency = append(pr.Latency, pageLatency{Endpoint: e.Name, Metric: e.Metric, Plot: name})
		}
		page.Runs = append(page.Runs, pr)
	}
	f, err := os.Create(filepath.Join(dir, "index.html"))
	if err != nil {
		return err
	}
	if err := indexPage.Execute(f, page); err != nil {
		f.Close()
		return fmt.Errorf("index.html: %w", err)
	}
	return f.Close()
}

func saveUtilisation(path string, runs []Run) error {
	p := plot.New()
	p.Title.Text = utilisationTitle(runs)
	p.X.Label.Text = "days since the first submit"
	p.Y.Label.Text = "share of GPUs in use"
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = true
	for i, r := range runs {
		// Daily means keep the lines readable over months.
		per := max(1, int(math.Round(24/r.SampleHours)))
		var pts plotter.XYs
		for k := 0; k < len(r.Utilisation); k += per {
			end := min(k+per, len(r.Utilisation))
			var sum float64
			for _, u := range r.Utilisation[k:end] {
				sum += u
			}
			pts = append(pts, plotter.XY{X: float64(k) * r.SampleHours / 24, Y: sum / float64(end-k)})
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(r.Name, l)
	}
	p.Add(plotter.NewGrid())
	return p.Save(10*vg.Inch, 4.5*vg.Inch, path)
}

// utilisationTitle says what the utilisation plot's points are: daily means
// of the samples, which are hourly as the simulator records them.
func utilisationTitle(runs []Run) string {
	for _, r := range runs {
		if r.SampleHours != 1 {
			return "GPU utilisation over time, daily means"
		}
	}
	return "GPU utilisation over time, daily means of hourly samples"
}

func saveQueueCDF(path string, runs []Run) error {
	p := plot.New()
	p.Title.Text = "Queueing delay, CDF over jobs"
	p.X.Label.Text = "queueing delay + 1 s (log scale)"
	p.Y.Label.Text = "share of jobs"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = true
	p.Legend.Left = false
	for i, r := range runs {
		d := slices.Clone(r.QueueDelays)
		slices.Sort(d)
		if len(d) == 0 {
			continue
		}
		const steps = 400
		var pts plotter.XYs
		for k := 0; k <= steps; k++ {
			idx := min(len(d)-1, k*(len(d)-1)/steps)
			pts = append(pts, plotter.XY{X: d[idx] + 1, Y: float64(idx+1) / float64(len(d))})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.2)
		l.Dashes = plotutil.Dashes(i / 7)
		p.Add(l)
		p.Legend.Add(r.Name, l)
	}
	p.Add(plotter.NewGrid())
	// A log axis needs a range above 0 that is not a point (every job
	// started at once: all delays 0 s; or no run has a job).
	if math.IsInf(p.X.Min, 1) {
		p.X.Min = 1
	}
	p.X.Min = max(p.X.Min, 1)
	p.X.Max = max(p.X.Max, 10*p.X.Min)
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

func saveTenants(path string, r Run) error {
	p := plot.New()
	p.Title.Text = "Per-tenant GPUs: guaranteed vs average used — " + r.Name
	p.Y.Label.Text = "GPUs"
	guar, used := make(plotter.Values, len(r.Tenants)), make(plotter.Values, len(r.Tenants))
	names := make([]string, len(r.Tenants))
	for i, t := range r.Tenants {
		guar[i], used[i], names[i] = t.Guaranteed, t.AvgUsed, t.Name
	}
	w := vg.Points(14)
	if len(r.Tenants) > 0 {
		g, err := plotter.NewBarChart(guar, w)
		if err != nil {
			return err
		}
		g.Color = color.RGBA{R: 170, G: 170, B: 170, A: 255}
		g.LineStyle.Width = 0
		g.Offset = -w / 2
		u, err := plotter.NewBarChart(used, w)
		if err != nil {
			return err
		}
		u.Color = plotutil.Color(0)
		u.LineStyle.Width = 0
		u.Offset = w / 2
		p.Add(g, u)
		p.Legend.Add("guaranteed", g)
		p.Legend.Add("average used", u)
		p.Legend.Top = true
		p.NominalX(names...)
	}
	return p.Save(9*vg.Inch, 4.5*vg.Inch, path)
}

type pageData struct {
	Title string
	Runs  []pageRun
}

type pageRun struct {
	Name       string
	TenantPlot string
	Figures    [][2]string
	Latency    []pageLatency
}

type pageLatency struct {
	Endpoint, Metric, Plot string
}

var indexPage = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; max-width: 1100px; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
td, th { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th { background: #f4f4f4; text-align: left; }
img { max-width: 100%; border: 1px solid #eee; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<h2>Utilisation over time</h2>
<img src="utilisation.png" alt="GPU utilisation over time, one line per run">
<h2>Queueing delay</h2>
<img src="queueing_cdf.png" alt="CDF of queueing delay, one line per run">
{{range .Runs}}
<h2>{{.Name}}</h2>
<table>
{{range .Figures}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}</table>
<img src="{{.TenantPlot}}" alt="per-tenant GPUs, guaranteed against average used, {{.Name}}">
{{range .Latency}}<h3>{{.Endpoint}}</h3>
<img src="{{.Plot}}" alt="p95 {{.Metric}} latency per minute against the SLO, {{.Endpoint}}">
{{end}}{{end}}
</body>
</html>
`))
