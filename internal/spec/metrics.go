package spec

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/allot-dev/allot/internal/model"
)

// MetricUtilization is the metric name of GPU utilisation in a recording.
const MetricUtilization = "gpu_utilization"

// Recording is a metrics file: series of samples a driver recorded (or a
// person wrote) to replay policies against.
type Recording struct {
	Series []RecordedSeries
}

// RecordedSeries is one series: gpu_utilization of a scope (values are
// fractions), or a latency percentile of an endpoint (values in seconds).
type RecordedSeries struct {
	Metric  string
	Key     string // the scope ("fleet", "region/eastus") or the endpoint
	Samples []RecordedSample
}

// RecordedSample is one value at one time.
type RecordedSample struct {
	At    time.Time
	Value float64
}

type recordingFile struct {
	Start  timestamp     `yaml:"start"`
	Step   duration      `yaml:"step"`
	Series []seriesEntry `yaml:"series"`
}

type seriesEntry struct {
	Metric   string    `yaml:"metric"`
	Scope    string    `yaml:"scope"`
	Endpoint string    `yaml:"endpoint"`
	Start    timestamp `yaml:"start"`
	Step     duration  `yaml:"step"`
	Values   rawValues `yaml:"values"`
}

// rawValues keeps the nodes of a list of values, read once the metric
// says what they are.
type rawValues []*yaml.Node

func (r *rawValues) decodeNode(d *decoder, n *yaml.Node, path string) error {
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("want a list of values, got %s", describe(n))
	}
	for _, c := range n.Content {
		if err := d.visit(c, path); err != nil {
			return err
		}
		*r = append(*r, resolve(c))
	}
	return nil
}

// ReadRecording reads the metrics file at path. See ParseRecording.
func ReadRecording(path string) (*Recording, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	return ParseRecording(path, data)
}

// ParseRecording reads a metrics file named name:
//
//	start: 2026-03-02T09:00:00Z   # the time of each series' first value
//	step: 1m                      # the time between two values
//	series:
//	  - {metric: gpu_utilization, scope: fleet, values: [70%, 86%, ~, 91%]}
//	  - {metric: p95_latency, endpoint: copilot-chat, values: [90ms, 180ms]}
//
// A series may set its own start and step. A value ~ (null) is a gap: no
// sample then. Utilisation values are percentages, latency values
// durations. Any error is an *Error.
func ParseRecording(name string, data []byte) (*Recording, error) {
	docs, err := parseDocuments(name, data)
	if err != nil {
		return nil, err
	}
	root, err := single(name, docs, "metrics (start: …, step: …, series: …)")
	if err != nil {
		return nil, err
	}
	d := newDecoder(name)
	var rf recordingFile
	if err := d.decode(root, "", reflect.ValueOf(&rf).Elem()); err != nil {
		return nil, err
	}
	rec := &Recording{}
	seen := map[[2]string]int{}
	for i, se := range rf.Series {
		fp := fmt.Sprintf("series[%d]", i)
		start, step := time.Time(se.Start), time.Duration(se.Step)
		if start.IsZero() {
			start = time.Time(rf.Start)
		}
		if step == 0 {
			step = time.Duration(rf.Step)
		}
		s := RecordedSeries{Metric: se.Metric}
		switch {
		case se.Metric == MetricUtilization:
			if se.Endpoint != "" {
				return nil, d.errorAtPath(root, fp+".endpoint", "gpu_utilization is of a scope, not of an endpoint")
			}
			sc, err := model.ParseScope(se.Scope)
			if err != nil {
				return nil, d.errorAtPath(root, fp+".scope", "%s", err)
			}
			s.Key = sc.String()
		case slices.Contains(model.LatencyMetrics, se.Metric):
			if se.Scope != "" {
				return nil, d.errorAtPath(root, fp+".scope", "%s is of an endpoint, not of a scope", se.Metric)
			}
			if se.Endpoint == "" {
				return nil, d.errorAtPath(root, fp, "endpoint: must name the endpoint of the latency")
			}
			if err := model.Printable("endpoint", se.Endpoint); err != nil {
				return nil, d.errorAtPath(root, fp+".endpoint", "%s", err.(*model.FieldError).Msg)
			}
			s.Key = se.Endpoint
		default:
			return nil, d.errorAtPath(root, fp+".metric", "unknown metric %q (known: %s, %v)", se.Metric, MetricUtilization, model.LatencyMetrics)
		}
		switch {
		case start.IsZero():
			return nil, d.errorAtPath(root, fp, "start: must be set, for the file or the series")
		case step <= 0:
			return nil, d.errorAtPath(root, fp, "step: must be a positive duration, for the file or the series")
		}
		if n := len(se.Values); n > 0 && step > maxDuration*time.Second/time.Duration(n) {
			return nil, d.errorAtPath(root, fp, "step: %d values %s apart span too long", n, step)
		}
		k := [2]string{s.Metric, s.Key}
		if first, dup := seen[k]; dup {
			return nil, d.errorAtPath(root, fp, "%s of %s is given twice (first in series[%d])", s.Metric, s.Key, first)
		}
		seen[k] = i
		for j, n := range se.Values {
			if isNull(n) {
				continue
			}
			vp := fmt.Sprintf("%s.values[%d]", fp, j)
			var v float64
			if s.Metric == MetricUtilization {
				v, err = parsePercent(n)
			} else {
				var lat duration
				err = lat.decodeNode(d, n, vp)
				v = time.Duration(lat).Seconds()
				if err == nil && v < 0 {
					err = fmt.Errorf("a latency must not be negative")
				}
			}
			if err != nil {
				return nil, d.errorAt(n, vp, "%s", err)
			}
			s.Samples = append(s.Samples, RecordedSample{At: start.Add(time.Duration(j) * step), Value: v})
		}
		rec.Series = append(rec.Series, s)
	}
	if len(rec.Series) == 0 {
		return nil, &Error{File: name, Msg: "no series: want series: [{metric: …, values: […]}]"}
	}
	return rec, nil
}
