package azurellm

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReadRequests(t *testing.T) {
	const head = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	tests := []struct {
		name    string
		in      string
		want    []Request
		wantErr string // substring; empty means success
	}{
		{
			name: "rows, CRLF, blank lines, no final newline",
			in: head + "2023-11-16 18:17:03.9799600,4808,10\r\n\r\n2023-11-16 18:17:04.0319600,3180,0\r\n" +
				"2023-11-16 18:17:04.0319600,1,8",
			want: []Request{
				{At: 0, Context: 4808, Generated: 10},
				{At: 52 * time.Millisecond, Context: 3180, Generated: 0},
				{At: 52 * time.Millisecond, Context: 1, Generated: 8},
			},
		},
		{
			name: "reordered and extra columns, 1 and 9 fractional digits",
			in:   "GeneratedTokens,Model,TIMESTAMP,ContextTokens\n5,m,2023-11-16 23:59:59.5,7\n6,m,2023-11-17 00:00:00.000000001,8\n",
			want: []Request{
				{At: 0, Context: 7, Generated: 5},
				{At: 500*time.Millisecond + 1, Context: 8, Generated: 6},
			},
		},
		{name: "empty", in: "", wantErr: "t.csv:1:1: azurellm: bad trace file: missing header"},
		{name: "header only", in: head, wantErr: "t.csv:1:1: azurellm: bad trace file: no requests"},
		{name: "header and blank lines", in: head + "\n\r\n\n", wantErr: "t.csv:1:1: azurellm: bad trace file: no requests"},
		{name: "missing column", in: "TIMESTAMP,ContextTokens\n2023-11-16 18:17:03.9,1\n", wantErr: `t.csv:1:1: azurellm: bad trace file: missing column "GeneratedTokens"`},
		{name: "bad timestamp", in: head + "2023-11-16T18:17:03.9,1,1\n", wantErr: `t.csv:2:1: column TIMESTAMP: azurellm: bad trace file: "2023-11-16T18:17:03.9" is not a time`},
		{name: "no fraction", in: head + "2023-11-16 18:17:03,1,1\n", wantErr: `t.csv:2:1: column TIMESTAMP: azurellm: bad trace file: "2023-11-16 18:17:03" is not a time`},
		{name: "ten fractional digits", in: head + "2023-11-16 18:17:03.0123456789,1,1\n", wantErr: `t.csv:2:1: column TIMESTAMP`},
		{name: "comma fraction", in: head + "\"2023-11-16 18:17:03,5\",1,1\n", wantErr: `t.csv:2:1: column TIMESTAMP`},
		{name: "empty timestamp", in: head + ",1,1\n", wantErr: "t.csv:2:1: column TIMESTAMP: azurellm: bad trace file: empty"},
		{name: "out of order", in: head + "2023-11-16 18:17:03.5,1,1\n\n2023-11-16 18:17:03.4,1,1\n", wantErr: "t.csv:4:1: column TIMESTAMP: azurellm: bad trace file: 2023-11-16 18:17:03.4 is before 2023-11-16 18:17:03.5 on line 2"},
		{name: "negative context", in: head + "2023-11-16 18:17:03.5,-3,1\n", wantErr: "t.csv:2:23: column ContextTokens: azurellm: bad trace file: -3 is negative"},
		{name: "zero context", in: head + "2023-11-16 18:17:03.5,0,1\n", wantErr: "t.csv:2:23: column ContextTokens: azurellm: bad trace file: 0 is not positive"},
		{name: "negative generated", in: head + "2023-11-16 18:17:03.5,1,-1\n", wantErr: "t.csv:2:25: column GeneratedTokens: azurellm: bad trace file: -1 is negative"},
		{name: "fractional tokens", in: head + "2023-11-16 18:17:03.5,1.5,1\n", wantErr: `t.csv:2:23: column ContextTokens: azurellm: bad trace file: "1.5" is not an integer`},
		{name: "too many tokens", in: head + "2023-11-16 18:17:03.5,99999999999,1\n", wantErr: "t.csv:2:23: column ContextTokens: azurellm: bad trace file: 99999999999 is above 16777216"},
		{name: "short row", in: head + "2023-11-16 18:17:03.5,1\n", wantErr: "t.csv:2:24: column GeneratedTokens: azurellm: bad trace file: row has 2 fields, want at least 3"},
		{name: "too far apart", in: head + "0001-01-01 00:00:00.0,1,1\n9999-12-31 23:59:59.9,1,1\n", wantErr: "t.csv:3:1: column TIMESTAMP: azurellm: bad trace file: 9999-12-31 23:59:59.9 is too far"},
		{name: "bad quote", in: head + "\"2023,1,1\n", wantErr: "t.csv:2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadRequests(strings.NewReader(tt.in), "t.csv")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				if !errors.Is(err, ErrFormat) {
					t.Fatalf("error %v does not wrap ErrFormat", err)
				}
				if got != nil {
					t.Fatalf("requests and error both returned")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestReadRequestsFileMissing(t *testing.T) {
	if _, err := ReadRequestsFile("no/such/file.csv"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("error = %v, want one wrapping os.ErrNotExist", err)
	}
}

// TestShippedTraces checks the facts data/traces/SOURCES.md states about
// the two files the repository ships.
func TestShippedTraces(t *testing.T) {
	const dir = "../../../data/traces/azure-llm/"
	tests := []struct {
		file                     string
		requests                 int
		minutes                  float64
		medContext, medGenerated int
	}{
		{"AzureLLMInferenceTrace_code.csv", 8819, 57, 1469, 13},
		{"AzureLLMInferenceTrace_conv.csv", 19366, 58, 1020, 129},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			reqs, err := ReadRequestsFile(dir + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) != tt.requests {
				t.Fatalf("got %d requests, want %d", len(reqs), tt.requests)
			}
			span := reqs[len(reqs)-1].At - reqs[0].At
			if m := span.Minutes(); m < tt.minutes-0.5 || m >= tt.minutes+0.5 {
				t.Errorf("span %v, want about %g minutes", span, tt.minutes)
			}
			ctx, gen := make([]int, len(reqs)), make([]int, len(reqs))
			for i, r := range reqs {
				ctx[i], gen[i] = r.Context, r.Generated
			}
			if got := median(ctx); got != tt.medContext {
				t.Errorf("context median %d, want %d", got, tt.medContext)
			}
			if got := median(gen); got != tt.medGenerated {
				t.Errorf("generated median %d, want %d", got, tt.medGenerated)
			}
		})
	}
}

// median is the middle of xs; both middles agree on the shipped files.
func median(xs []int) int {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
