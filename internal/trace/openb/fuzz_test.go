package openb

import (
	"errors"
	"strings"
	"testing"
)

func FuzzReadPods(f *testing.F) {
	f.Add("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np0,12000,16384,1,460,P100|T4\n")
	f.Add("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1,1,8,1000\n\n")
	f.Add("gpu_milli,name\n\"x")
	f.Fuzz(func(t *testing.T, in string) {
		pods, err := ReadPods(strings.NewReader(in), "f.csv")
		if err != nil {
			if pods != nil {
				t.Fatalf("pods and error both returned")
			}
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		for _, p := range pods {
			if p.GPUMilli < 0 || p.GPUMilli > MilliPerGPU || p.CPUMilli < 0 || p.GPUs < 0 {
				t.Fatalf("invalid pod accepted: %+v", p)
			}
		}
	})
}

func FuzzReadNodes(f *testing.F) {
	f.Add("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\n")
	f.Add("sn,cpu_milli,memory_mib,gpu,model\nn1,32000,1,0,\n")
	f.Fuzz(func(t *testing.T, in string) {
		nodes, err := ReadNodes(strings.NewReader(in), "f.csv")
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		for _, n := range nodes {
			if n.GPUs < 0 || n.GPUs > maxGPUs || (n.GPUs > 0 && n.Model == "") {
				t.Fatalf("invalid node accepted: %+v", n)
			}
		}
	})
}
