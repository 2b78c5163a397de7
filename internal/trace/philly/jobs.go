package philly

import (
	"github.com/allot-dev/allot/internal/trace/csvtable"

	"io"
	"math"
	"strconv"
	"time"
)

// TimeLayout is the layout of the timestamp column (UTC).
const TimeLayout = "2006-01-02 15:04:05"

// MaxGPUs bounds the GPUs of one job, so a typo cannot ask for millions.
const MaxGPUs = 4096

// Job is one row of philly_jobs.csv.
type Job struct {
	Line     int       // line in the file, for messages
	Submit   time.Time // UTC
	Duration float64   // run time in seconds, > 0
	GPUs     int       // 1..MaxGPUs
	GPUTime  float64   // GPU-seconds as recorded; not used for scheduling
	VC       string    // virtual cluster (tenant)
}

// ReadJobs reads a jobs file; file names the input in errors.
func ReadJobs(r io.Reader, file string) ([]Job, error) {
	t, err := csvtable.Open(r, file, []string{"timestamp", "duration", "num_gpus", "cluster"}, ErrFormat)
	if err != nil {
		return nil, err
	}
	hasGPUTime := t.Has("gpu_time")
	var out []Job
	for {
		ok, err := t.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		j := Job{Line: t.Line()}
		s, err := t.Field("timestamp")
		if err != nil {
			return nil, err
		}
		if j.Submit, err = time.Parse(TimeLayout, s); err != nil {
			return nil, t.Errorf("timestamp", "%q is not a time like %q", s, TimeLayout)
		}
		if j.Duration, err = float(t, "duration"); err != nil {
			return nil, err
		}
		if j.Duration <= 0 {
			return nil, t.Errorf("duration", "%g is not positive", j.Duration)
		}
		if s, err = t.Field("num_gpus"); err != nil {
			return nil, err
		}
		g, perr := strconv.Atoi(s)
		switch {
		case perr != nil:
			return nil, t.Errorf("num_gpus", "%q is not an integer", s)
		case g < 1 || g > MaxGPUs:
			return nil, t.Errorf("num_gpus", "%d is outside 1..%d", g, MaxGPUs)
		}
		j.GPUs = g
		if hasGPUTime {
			if j.GPUTime, err = float(t, "gpu_time"); err != nil {
				return nil, err
			}
			if j.GPUTime < 0 {
				return nil, t.Errorf("gpu_time", "%g is negative", j.GPUTime)
			}
		}
		if j.VC, err = t.Field("cluster"); err != nil {
			return nil, err
		}
		if j.VC == "" {
			return nil, t.Errorf("cluster", "empty")
		}
		out = append(out, j)
	}
}

// float reads a finite number from the named column.
func float(t *csvtable.Table, name string) (float64, error) {
	s, err := t.Field(name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, t.Errorf(name, "%q is not a finite number", s)
	}
	return v, nil
}

// ReadJobsFile reads the jobs file at path.
func ReadJobsFile(path string) ([]Job, error) { return csvtable.ReadFile(path, ReadJobs) }
