package philly

import (
	"errors"
	"strings"
	"testing"
)

func FuzzReadJobs(f *testing.F) {
	f.Add("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,11cb48\n\n")
	f.Add("cluster,num_gpus,duration,timestamp\nvc1,2,1.5,2017-09-04 10:30:41\n")
	f.Add("timestamp,duration,num_gpus,cluster\n\"x")
	f.Add("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,1e400,1,1,a\n")
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := ReadJobs(strings.NewReader(in), "f.csv")
		if err != nil {
			if jobs != nil {
				t.Fatalf("jobs and error both returned")
			}
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			if !strings.HasPrefix(err.Error(), "f.csv:") {
				t.Fatalf("error %v does not name the file", err)
			}
			return
		}
		for _, j := range jobs {
			if j.Duration <= 0 || j.GPUs < 1 || j.GPUs > MaxGPUs || j.VC == "" || j.GPUTime < 0 || j.Line < 2 {
				t.Fatalf("invalid job accepted: %+v", j)
			}
		}
	})
}

func FuzzReadVCs(f *testing.F) {
	f.Add("vc,node num\n6214e9,64\n")
	f.Add("vc,node num\na,1\na,2\n")
	f.Fuzz(func(t *testing.T, in string) {
		vcs, err := ReadVCs(strings.NewReader(in), "f.csv")
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		for _, v := range vcs {
			if v.Name == "" || v.Nodes < 0 || v.Nodes > MaxNodes {
				t.Fatalf("invalid VC accepted: %+v", v)
			}
		}
	})
}
