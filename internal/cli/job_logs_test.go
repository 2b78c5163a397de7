package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// logs --rank N prints rank N's lines of a gang's log without their labels,
// and the agent's lines about that rank only; a rank the job does not have
// is a usage error that sends no log request.
func TestJobLogsRank(t *testing.T) {
	const log = "[rank 1] a\n[rank 0] b\n[rank 1] c\nallot: rank 1 on n2: exited 1\nallot: rank 0 on n1: killed\n[rank 0] d"
	logsAsked := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/jobs/g-1":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"g-1","state":"Running","spec":{"resources":{"instance_count":2}},"attempt_history":[{"number":1}]}`))
		case "/v1/jobs/g-1/logs":
			logsAsked++
			_, _ = w.Write([]byte(log))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	isolate(t)
	for _, tc := range []struct {
		rank, want string
	}{
		{"0", "b\nallot: rank 0 on n1: killed\nd"},
		{"1", "a\nc\nallot: rank 1 on n2: exited 1\n"},
	} {
		out, errOut, code := runCLI(t, "job", "logs", "g-1", "--rank", tc.rank, "--server", srv.URL)
		if code != ExitOK || out != tc.want {
			t.Errorf("--rank %s: exit %d, %q (%s), want %q", tc.rank, code, out, errOut, tc.want)
		}
	}
	if out, _, code := runCLI(t, "job", "logs", "g-1", "--server", srv.URL); code != ExitOK || out != log {
		t.Errorf("every rank: exit %d, %q, want the log as the server has it", code, out)
	}
	if _, errOut, code := runCLI(t, "job", "logs", "g-1", "--rank", "-2", "--server", srv.URL); code != ExitUsage || !strings.Contains(errOut, "want a rank") {
		t.Errorf("--rank -2: exit %d (%s)", code, errOut)
	}
	asked := logsAsked
	if _, errOut, code := runCLI(t, "job", "logs", "g-1", "--rank", "2", "--server", srv.URL); code != ExitUsage || logsAsked != asked {
		t.Errorf("--rank 2 of 2 instances: exit %d (%s), %d log requests", code, errOut, logsAsked-asked)
	}
}

func TestRankFilterAcrossWrites(t *testing.T) {
	var out bytes.Buffer
	f := &rankFilter{w: &out, rank: 3}
	for _, p := range []string{"[rank 3] he", "llo\n[rank 1", "] x\n[rank 3] bye\n"} {
		if _, err := f.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	f.flush()
	if out.String() != "hello\nbye\n" {
		t.Errorf("got %q", out.String())
	}
}
