package openb

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadPods(t *testing.T) {
	const head = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	tests := []struct {
		name    string
		in      string
		want    []Pod
		wantErr string // substring; empty means success
	}{
		{
			name: "full row",
			in:   head + "p0,12000,16384,1,460,P100|T4,LS,Running,1,2,3\n",
			want: []Pod{{Name: "p0", CPUMilli: 12000, MemoryMiB: 16384, GPUs: 1, GPUMilli: 460,
				Models: []string{"P100", "T4"}, QoS: "LS", Phase: "Running", CreationTime: 1, DeletionTime: 2, ScheduledTime: 3}},
		},
		{
			name: "five columns, reordered",
			in:   "gpu_milli,name,num_gpu,cpu_milli,memory_mib\n1000,p1,8,64000,1024\n\n0,p2,0,500,1\n",
			want: []Pod{
				{Name: "p1", CPUMilli: 64000, MemoryMiB: 1024, GPUs: 8, GPUMilli: 1000},
				{Name: "p2", CPUMilli: 500, MemoryMiB: 1},
			},
		},
		{name: "empty file", in: "", wantErr: "pods.csv:1:1: openb: bad trace file: missing header"},
		{name: "missing column", in: "name,cpu_milli\n", wantErr: `pods.csv:1:1: openb: bad trace file: missing column "memory_mib"`},
		{name: "not a number", in: head + "p0,12000,16384,1,460,,,,,,\np1,x,1,1,1000,,,,,,\n", wantErr: `pods.csv:3:4: column cpu_milli: openb: bad trace file: "x" is not an integer`},
		{name: "negative", in: head + "p0,-1,16384,1,460,,,,,,\n", wantErr: "pods.csv:2:4: column cpu_milli: openb: bad trace file: -1 is negative"},
		{name: "milli above a GPU", in: head + "p0,1,1,1,1001,,,,,,\n", wantErr: "pods.csv:2:10: column gpu_milli: openb: bad trace file: 1001 is above 1000"},
		{name: "shared multi-GPU", in: head + "p0,1,1,2,500,,,,,,\n", wantErr: "column gpu_milli"},
		{name: "short row", in: head + "p0,1,1\n", wantErr: "pods.csv:2:7: column num_gpu: openb: bad trace file: row has 3 fields, want at least 4"},
		{name: "empty name", in: head + ",1,1,0,0,,,,,,\n", wantErr: "pods.csv:2:1: column name: openb: bad trace file: empty"},
		{name: "bad quote", in: head + "\"p0,1,1,0,0\n", wantErr: "pods.csv:2:13: openb: bad trace file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadPods(strings.NewReader(tt.in), "pods.csv")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				if !errors.Is(err, ErrFormat) {
					t.Errorf("err = %v, want errors.Is ErrFormat", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("pods (-want +got):\n%s", d)
			}
		})
	}
}

func TestReadNodes(t *testing.T) {
	const head = "sn,cpu_milli,memory_mib,gpu,model\n"
	tests := []struct {
		name    string
		in      string
		want    []Node
		wantErr string
	}{
		{name: "gpu and cpu nodes", in: head + "n0,64000,262144,2,P100\nn1,32000,1,0,\n",
			want: []Node{{Name: "n0", CPUMilli: 64000, MemoryMiB: 262144, GPUs: 2, Model: "P100"}, {Name: "n1", CPUMilli: 32000, MemoryMiB: 1}}},
		{name: "gpus without model", in: head + "n0,64000,1,2,\n", wantErr: "nodes.csv:2:14: column model"},
		{name: "too many gpus", in: head + "n0,64000,1,99999,A\n", wantErr: "nodes.csv:2:12: column gpu"},
		{name: "missing column", in: "sn,cpu_milli,memory_mib,gpu\n", wantErr: `missing column "model"`},
		{name: "duplicate column", in: "sn,sn,cpu_milli,memory_mib,gpu,model\n", wantErr: `column "sn" appears twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadNodes(strings.NewReader(tt.in), "nodes.csv")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("nodes (-want +got):\n%s", d)
			}
		})
	}
}

// TestReadShippedTraces reads every openb file of data/traces.
func TestReadShippedTraces(t *testing.T) {
	const dir = "../../../data/traces/openb/"
	nodes, err := ReadNodesFile(dir + "openb_node_list_gpu_node.csv")
	if err != nil {
		t.Fatalf("the traces the repository ships (data/traces): %v", err)
	}
	gpus := 0
	for _, n := range nodes {
		gpus += n.GPUs
	}
	if len(nodes) != 1213 || gpus != 6212 {
		t.Errorf("gpu node list: %d nodes, %d GPUs; want 1213, 6212", len(nodes), gpus)
	}
	for _, w := range []string{"default", "cpu050", "gpushare20", "gpushare40", "gpuspec05", "multigpu20"} {
		pods, err := ReadPodsFile(dir + "openb_pod_list_" + w + ".csv")
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) < 7000 {
			t.Errorf("%s: %d pods", w, len(pods))
		}
	}
}
