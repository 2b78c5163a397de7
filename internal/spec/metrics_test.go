package spec

import (
	"strings"
	"testing"
	"time"
)

func TestParseRecording(t *testing.T) {
	rec, err := ReadRecording("../../examples/metrics/busy-hour.yaml")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	if len(rec.Series) != 4 {
		t.Fatalf("%d series, want 4", len(rec.Series))
	}
	u := rec.Series[0]
	if u.Metric != MetricUtilization || u.Key != "fleet" || len(u.Samples) != 30 ||
		u.Samples[7] != (RecordedSample{start.Add(7 * time.Minute), 0.85}) {
		t.Errorf("utilisation series = %+v", u)
	}
	l := rec.Series[2]
	if l.Metric != "p95_latency" || l.Key != "copilot-chat" || l.Samples[12] != (RecordedSample{start.Add(12 * time.Minute), 0.160}) {
		t.Errorf("latency series = %+v", l)
	}
	rec, err = ParseRecording("m.yaml", doc(`
step: 30s
series:
  - {metric: p99_latency, endpoint: e, start: 2026-01-01T00:00:00Z, values: [1s, ~, 2s]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if s := rec.Series[0].Samples; len(s) != 2 || !s[1].At.Equal(time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)) || s[1].Value != 2 {
		t.Errorf("a gap: samples %+v", s)
	}
	for _, tc := range []struct{ name, file, want string }{
		{"unknown metric", "start: 2026-01-01\nstep: 1m\nseries: [{metric: qps, endpoint: e, values: [1]}]\n", "series[0].metric: unknown metric \"qps\""},
		{"percent for latency", "start: 2026-01-01\nstep: 1m\nseries: [{metric: p95_latency, endpoint: e, values: [10%]}]\n", "m.yaml:3:54: series[0].values[0]: want a duration"},
		{"latency for utilisation", "start: 2026-01-01\nstep: 1m\nseries: [{metric: gpu_utilization, values: [10ms]}]\n", "series[0].values[0]: want a percentage"},
		{"no endpoint", "start: 2026-01-01\nstep: 1m\nseries: [{metric: p95_latency, values: [1s]}]\n", "series[0]: endpoint: must name"},
		{"no step", "start: 2026-01-01\nseries: [{metric: gpu_utilization, values: [1%]}]\n", "step: must be a positive duration"},
		{"no start", "step: 1m\nseries: [{metric: gpu_utilization, values: [1%]}]\n", "start: must be set"},
		{"twice", "start: 2026-01-01\nstep: 1m\nseries: [{metric: gpu_utilization, values: [1%]}, {metric: gpu_utilization, scope: fleet, values: [2%]}]\n", "given twice"},
		{"too long", "start: 2026-01-01\nstep: 900000h\nseries: [{metric: gpu_utilization, values: [1%, 2%, 3%, 4%, 5%, 6%, 7%, 8%, 9%, 10%, 11%, 12%, 13%, 14%, 15%, 16%, 17%, 18%, 19%, 20%, 21%, 22%, 23%, 24%, 25%, 26%, 27%, 28%, 29%, 30%, 31%, 32%, 33%, 34%, 35%, 36%, 37%, 38%, 39%, 40%, 41%, 42%, 43%, 44%, 45%, 46%, 47%, 48%, 49%, 50%, 51%, 52%, 53%, 54%, 55%, 56%, 57%, 58%, 59%, 60%, 61%, 62%, 63%, 64%, 65%, 66%, 67%, 68%, 69%, 70%, 71%, 72%, 73%, 74%, 75%, 76%, 77%, 78%, 79%, 80%, 81%, 82%, 83%, 84%, 85%, 86%, 87%, 88%, 89%, 90%, 91%, 92%, 93%, 94%, 95%, 96%, 97%, 98%, 99%, 100%, 1%, 2%, 3%, 4%, 5%, 6%, 7%, 8%, 9%, 10%, 11%, 12%, 13%, 14%, 15%, 16%, 17%, 18%, 19%, 20%, 21%, 22%, 23%, 24%, 25%, 26%, 27%, 28%, 29%, 30%, 31%, 32%, 33%, 34%, 35%, 36%, 37%, 38%, 39%, 40%]}]\n", "span too long"},
		{"empty", "", "file is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRecording("m.yaml", []byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %s", err, tc.want)
			}
		})
	}
}

func FuzzParseRecording(f *testing.F) {
	addFile(f, "../../examples/metrics/busy-hour.yaml")
	f.Add([]byte("start: 2026-01-01\nstep: 1s\nseries: [{metric: p50_latency, endpoint: e, step: 2m, values: [1ms, ~, 3h]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := ParseRecording("m.yaml", data)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		for _, s := range rec.Series {
			for i := 1; i < len(s.Samples); i++ {
				if !s.Samples[i].At.After(s.Samples[i-1].At) {
					t.Fatalf("series %s/%s: samples out of order: %+v", s.Metric, s.Key, s.Samples)
				}
			}
		}
	})
}
