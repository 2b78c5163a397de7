package philly

import (
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
	t, err := openTable(r, file, []string{"timestamp", "duration", "num_gpus", "cluster"})
	if err != nil {
		return nil, err
	}
	_, hasGPUTime := t.col["gpu_time"]
	var out []Job
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		j := Job{Line: t.line()}
		s, err := t.field("timestamp")
		if err != nil {
			return nil, err
		}
		if j.Submit, err = time.Parse(TimeLayout, s); err != nil {
			return nil, t.errorf("timestamp", "%q is not a time like %q", s, TimeLayout)
		}
		if j.Duration, err = t.float("duration"); err != nil {
			return nil, err
		}
		if j.Duration <= 0 {
			return nil, t.errorf("duration", "%g is not positive", j.Duration)
		}
		if s, err = t.field("num_gpus"); err != nil {
			return nil, err
		}
		g, perr := strconv.Atoi(s)
		switch {
		case perr != nil:
			return nil, t.errorf("num_gpus", "%q is not an integer", s)
		case g < 1 || g > MaxGPUs:
			return nil, t.errorf("num_gpus", "%d is outside 1..%d", g, MaxGPUs)
		}
		j.GPUs = g
		if hasGPUTime {
			if j.GPUTime, err = t.float("gpu_time"); err != nil {
				return nil, err
			}
			if j.GPUTime < 0 {
				return nil, t.errorf("gpu_time", "%g is negative", j.GPUTime)
			}
		}
		if j.VC, err = t.field("cluster"); err != nil {
			return nil, err
		}
		if j.VC == "" {
			return nil, t.errorf("cluster", "empty")
		}
		out = append(out, j)
	}
}

// float reads a finite number from the named column.
func (t *table) float(name string) (float64, error) {
	s, err := t.field(name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, t.errorf(name, "%q is not a finite number", s)
	}
	return v, nil
}

// ReadJobsFile reads the jobs file at path.
func ReadJobsFile(path string) ([]Job, error) { return readFile(path, ReadJobs) }
