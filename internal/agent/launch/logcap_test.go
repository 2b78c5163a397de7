package launch

import (
	"os"
	"strings"
	"testing"
	"time"
)

// A job that writes far past its log limit runs to its end; its log holds
// the limit's worth, then the agent's note of where output was dropped and
// how much.
func TestLogLimit(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		limit        int64
		kept         int64
	}{
		{"lines", `i=0; while [ $i -lt 3000 ]; do echo "line $i of a job that talks too much"; i=$((i+1)); done; echo finished >&2`, 4096, 4096},
		{"one write", `head -c 300000 /dev/zero | tr '\0' x; echo finished >&2`, 10000, 10000},
		{"under", `echo short; echo finished >&2`, 1 << 20, int64(len("short\nfinished\n"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec(t, tc.script)
			s.LogLimit = tc.limit
			p, err := Start(s)
			if err != nil {
				t.Fatal(err)
			}
			if e := wait(t, p, 10*time.Second); e.Outcome != Exited || e.ExitCode != 0 {
				t.Fatalf("exit %+v: the job must run to its end", e)
			}
			b, err := os.ReadFile(s.LogPath)
			if err != nil {
				t.Fatal(err)
			}
			log := string(b)
			cut := strings.Index(log, "allot: this job's log reached its limit")
			if tc.kept < tc.limit {
				if cut >= 0 || !strings.HasSuffix(log, "finished\n") {
					t.Errorf("a log under its limit: %q", log)
				}
				return
			}
			if cut < 0 || !strings.Contains(log, "bytes of output dropped past the log limit") {
				t.Fatalf("no note of the limit in the log's end: %q", tail(log))
			}
			if kept := int64(len(strings.TrimSuffix(log[:cut], "\n"))); kept != tc.kept {
				t.Errorf("%d bytes of output kept, want %d", kept, tc.kept)
			}
			if strings.Contains(log[cut:], "finished") {
				t.Errorf("output past the limit reached the log: %q", tail(log))
			}
			if int64(len(log)) > tc.limit+512 {
				t.Errorf("log of %d bytes, limit %d", len(log), tc.limit)
			}
		})
	}
}

func tail(s string) string {
	if len(s) > 300 {
		return "…" + s[len(s)-300:]
	}
	return s
}

// An attempt of a job whose logs are full keeps none of its output; its
// log says so.
func TestLogLimitExhausted(t *testing.T) {
	s := spec(t, `echo one; echo two`)
	s.LogLimit = -1
	p, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, p, 10*time.Second)
	b, _ := os.ReadFile(s.LogPath)
	if log := string(b); !strings.HasPrefix(log, "allot: this job's log reached its limit") || strings.Contains(log, "one") ||
		!strings.Contains(log, "allot: 8 bytes of output dropped") {
		t.Errorf("log %q", log)
	}
}
