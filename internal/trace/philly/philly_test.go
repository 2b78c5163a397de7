package philly

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestReadJobs(t *testing.T) {
	const head = "timestamp,duration,num_gpus,gpu_time,cluster\n"
	tests := []struct {
		name    string
		in      string
		want    []Job
		wantErr string // substring; empty means success
	}{
		{
			name: "rows and trailing blank line",
			in:   head + "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n2017-10-07 01:11:39,193256.0,8,1546048.0,ee9e8c\n\n",
			want: []Job{
				{Line: 2, Submit: time.Date(2017, 10, 9, 7, 1, 55, 0, time.UTC), Duration: 66, GPUs: 1, GPUTime: 66, VC: "11cb48"},
				{Line: 3, Submit: time.Date(2017, 10, 7, 1, 11, 39, 0, time.UTC), Duration: 193256, GPUs: 8, GPUTime: 1546048, VC: "ee9e8c"},
			},
		},
		{
			name: "reordered, no gpu_time",
			in:   "cluster,num_gpus,duration,timestamp\nvc1,2,1.5,2017-09-04 10:30:41\n",
			want: []Job{{Line: 2, Submit: time.Date(2017, 9, 4, 10, 30, 41, 0, time.UTC), Duration: 1.5, GPUs: 2, VC: "vc1"}},
		},
		{name: "empty", in: "", wantErr: "jobs.csv:1:1: philly: bad trace file: missing header"},
		{name: "missing column", in: "timestamp,duration\n", wantErr: `jobs.csv:1:1: philly: bad trace file: missing column "num_gpus"`},
		{name: "bad time", in: head + "2017-10-09,66.0,1,66.0,a\n", wantErr: `jobs.csv:2:1: column timestamp: philly: bad trace file: "2017-10-09" is not a time`},
		{name: "bad duration", in: head + "2017-10-09 07:01:55,x,1,66.0,a\n", wantErr: `jobs.csv:2:21: column duration: philly: bad trace file: "x" is not a finite number`},
		{name: "zero duration", in: head + "2017-10-09 07:01:55,0,1,66.0,a\n", wantErr: "jobs.csv:2:21: column duration: philly: bad trace file: 0 is not positive"},
		{name: "bad gpus", in: head + "2017-10-09 07:01:55,1,1.5,66.0,a\n", wantErr: `jobs.csv:2:23: column num_gpus: philly: bad trace file: "1.5" is not an integer`},
		{name: "zero gpus", in: head + "2017-10-09 07:01:55,1,0,66.0,a\n", wantErr: "jobs.csv:2:23: column num_gpus: philly: bad trace file: 0 is outside 1..4096"},
		{name: "NaN gpu_time", in: head + "2017-10-09 07:01:55,1,1,NaN,a\n", wantErr: "column gpu_time"},
		{name: "empty cluster", in: head + "2017-10-09 07:01:55,1,1,1,\n", wantErr: "jobs.csv:2:27: column cluster: philly: bad trace file: empty"},
		{name: "short row", in: head + "2017-10-09 07:01:55,1\n", wantErr: "jobs.csv:2:22: column num_gpus: philly: bad trace file: row has 2 fields, want at least 3"},
		{name: "bad quote", in: head + "\"2017,1,1,1,a\n", wantErr: "jobs.csv:2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadJobs(strings.NewReader(tt.in), "jobs.csv")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				if !errors.Is(err, ErrFormat) {
					t.Fatalf("error %v does not wrap ErrFormat", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d jobs, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("job %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestReadVCs(t *testing.T) {
	got, err := ReadVCs(strings.NewReader("vc,node num\n6214e9,64\n\n7f04ca,32\n"), "vc.csv")
	if err != nil {
		t.Fatal(err)
	}
	if want := []VC{{"6214e9", 64}, {"7f04ca", 32}}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for _, tt := range []struct{ in, wantErr string }{
		{"vc,node num\na,x\n", `vc.csv:2:3: column node num: philly: bad trace file: "x" is not an integer`},
		{"vc,node num\na,1\na,2\n", `vc.csv:3:1: column vc: philly: bad trace file: "a" appears twice`},
		{"vc,node num\na,-1\n", "vc.csv:2:3: column node num: philly: bad trace file: -1 is outside"},
		{"vc\n", `missing column "node num"`},
	} {
		if _, err := ReadVCs(strings.NewReader(tt.in), "vc.csv"); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("ReadVCs(%q) error = %v, want %q", tt.in, err, tt.wantErr)
		}
	}
}

// TestSharedTrace reads the shipped trace when it is there.
func TestSharedTrace(t *testing.T) {
	const dir = "../../../data/traces/philly/"
	if _, err := os.Stat(dir + "philly_jobs.csv"); err != nil {
		t.Fatal("the traces the repository ships (data/traces) are missing")
	}
	jobs, err := ReadJobsFile(dir + "philly_jobs.csv")
	if err != nil {
		t.Fatal(err)
	}
	vcs, err := ReadVCsFile(dir + "philly_vc.csv")
	if err != nil {
		t.Fatal(err)
	}
	nodes := 0
	for _, v := range vcs {
		nodes += v.Nodes
	}
	if len(jobs) != 82247 || len(vcs) != 11 || nodes != 352 {
		t.Fatalf("got %d jobs, %d VCs, %d nodes; want 82247, 11, 352", len(jobs), len(vcs), nodes)
	}
}
