package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// job wait follows jobs through their states, writing each change to
// stderr, and exits 0 only when all succeeded: 1 when one did not (named
// with its detail) or the timeout passed first. job run --wait submits,
// prints the ID, then waits the same way.
func TestJobWait(t *testing.T) {
	old := jobPoll
	jobPoll = time.Millisecond
	t.Cleanup(func() { jobPoll = old })
	// Each job goes through its states, one per request, and stays in the last.
	states := map[string][]string{
		"ok-1":    {`"state":"Queued","reason":"InsufficientCapacity"`, `"state":"Running","allocations":[{"node":"n1","gpus":[0],"gpu_milli":1000}]`, `"state":"Succeeded","reason":"Completed"`},
		"bad-1":   {`"state":"Queued"`, `"state":"Failed","reason":"Failed","detail":"attempt 1, rank 0 on n1 exited with code 3; no retries left (max_retries 0)"`},
		"slow-1":  {`"state":"Running"`},
		"nightly": {`"state":"Queued","reason":"BeginTime"`, `"state":"Succeeded","reason":"Completed"`},
	}
	var mu sync.Mutex
	asked := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost && r.URL.Path == "/v1/jobs" {
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"id":"nightly","name":"nightly","state":"Queued"}`))
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/v1/jobs/")
		seq, ok := states[id]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":"NotFound","message":"no job ` + id + `"}`))
			return
		}
		n := min(asked[id], len(seq)-1)
		asked[id]++
		_, _ = w.Write([]byte(`{"id":"` + id + `","name":"` + id + `",` + seq[n] + `}`))
	}))
	defer srv.Close()
	isolate(t)

	out, errOut, code := runCLI(t, "job", "wait", "ok-1", "--server", srv.URL)
	if code != ExitOK || !strings.Contains(out, "ok-1  ok-1  Succeeded  Completed") {
		t.Errorf("wait for a job that succeeds: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"ok-1: Queued (InsufficientCapacity)\n", "ok-1: Running on n1\n", "ok-1: Succeeded (Completed)\n"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("progress lacks %q:\n%s", want, errOut)
		}
	}

	out, errOut, code = runCLI(t, "job", "wait", "bad-1", "ok-1", "-o", "json", "--server", srv.URL)
	var got struct {
		Jobs []struct{ ID, State string }
	}
	if code != ExitFailure || !strings.Contains(errOut, "1 of 2 jobs did not succeed: bad-1 Failed (attempt 1, rank 0 on n1 exited with code 3") ||
		json.Unmarshal([]byte(out), &got) != nil || len(got.Jobs) != 2 || got.Jobs[0].State != "Failed" {
		t.Errorf("wait for a job that fails: exit %d\n%s%s", code, out, errOut)
	}

	mu.Lock()
	asked["bad-1"] = 0
	mu.Unlock()
	if _, errOut, code = runCLI(t, "job", "wait", "bad-1", "--server", srv.URL); code != ExitFailure ||
		!strings.Contains(errOut, "job bad-1 did not succeed: Failed (attempt 1, rank 0 on n1 exited with code 3") ||
		!strings.Contains(errOut, "bad-1: Failed\n") {
		t.Errorf("wait for one job that fails: exit %d\n%s", code, errOut)
	}

	_, errOut, code = runCLI(t, "job", "wait", "slow-1", "--timeout", "20ms", "--server", srv.URL)
	if code != ExitFailure || !strings.Contains(errOut, "1 of 1 jobs have not ended after 20ms, and go on: slow-1 Running") {
		t.Errorf("timeout: exit %d\n%s", code, errOut)
	}
	if _, errOut, code = runCLI(t, "job", "wait", "none", "--server", srv.URL); code != ExitUsage || !strings.Contains(errOut, "NotFound") {
		t.Errorf("no such job: exit %d\n%s", code, errOut)
	}

	out, errOut, code = runCLI(t, "job", "run", "--server", srv.URL, "--wait", "--name", "nightly", "--", "x")
	if code != ExitOK || out != "nightly\n" || !strings.Contains(errOut, "nightly: Queued (BeginTime)") ||
		!strings.Contains(errOut, "nightly: Succeeded (Completed)") {
		t.Errorf("job run --wait: exit %d, stdout %q\n%s", code, out, errOut)
	}
}

// submit --dry-run asks about a file's jobs together, in one batch dry
// run, and submits nothing; a batch the server would refuse makes the
// command fail with status 2, every refusal on stderr. One job is asked
// about alone. --dry-run and --wait exclude each other.
func TestJobSubmitDryRun(t *testing.T) {
	two := writeJob(t, "name: good\ntenant: acme\nresources: {gpus_per_instance: 1}\n---\nname: next\ntenant: acme\nresources: {gpus_per_instance: 1}\n")
	withBad := writeJob(t, "name: good\ntenant: acme\nresources: {gpus_per_instance: 1}\n---\nname: bad\ntenant: acme\nresources: {gpus_per_instance: 1}\n")
	one := writeJob(t, "name: good\ntenant: acme\nresources: {gpus_per_instance: 1}\n")
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		asked = append(asked, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/jobs":
			_, _ = w.Write([]byte(`{"id":"good-1","state":"Queued","detail":"would start now on n1[0]","estimated_start":"2026-12-03T00:00:00Z"}`))
		case strings.Contains(string(body), `"bad"`):
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"code":"QuotaExceeded","message":"1 of 2 jobs refused","errors":[{"index":1,"name":"bad","code":"QuotaExceeded","message":"tenant acme: quota","field":"tenant"}]}`))
		default:
			_, _ = w.Write([]byte(`{"jobs":[{"id":"good-1","state":"Queued","detail":"would start now on n1[0]","estimated_start":"2026-12-03T00:00:00Z"},` +
				`{"id":"next-1","state":"Queued","reason":"InsufficientCapacity","detail":"room for 0 of 1 instances"}]}`))
		}
	}))
	defer srv.Close()
	isolate(t)
	out, errOut, code := runCLI(t, "job", "submit", "-f", two, "--dry-run", "--server", srv.URL)
	if code != ExitOK || !strings.Contains(out, "would start now on n1[0]") || !strings.Contains(out, "next-1 (dry run: not submitted)") ||
		!strings.Contains(out, "InsufficientCapacity") {
		t.Errorf("two jobs: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "job", "submit", "-f", withBad, "--dry-run", "--server", srv.URL)
	if code != ExitUsage || strings.Contains(out, "would start") ||
		!strings.Contains(errOut, "allot: job 1 bad: QuotaExceeded: tenant acme: quota (field tenant)") ||
		!strings.Contains(errOut, "1 problems in 2 jobs; none would be submitted") {
		t.Errorf("a refused job: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if out, errOut, code := runCLI(t, "job", "submit", "-f", one, "--dry-run", "--server", srv.URL); code != ExitOK ||
		!strings.Contains(out, "good-1 (dry run: not submitted)") {
		t.Errorf("one job: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if want := "POST /v1/jobs/batch?dry_run=true POST /v1/jobs/batch?dry_run=true POST /v1/jobs?dry_run=true"; strings.Join(asked, " ") != want {
		t.Errorf("asked %v, want %s", asked, want)
	}
	if _, errOut, code := runCLI(t, "job", "submit", "-f", two, "--dry-run", "--wait", "--server", srv.URL); code != ExitUsage ||
		!strings.Contains(errOut, "dry-run") {
		t.Errorf("--dry-run --wait: exit %d %s", code, errOut)
	}
}

// job run --attach prints each attempt's log as it runs, says on stderr how
// a failed attempt ended, waits for the retry to start, and exits 0 once
// the job succeeded; its ID goes to stderr, so stdout is the job's own. An
// attempt that ran and ended between two looks is printed whole.
func TestJobRunAttach(t *testing.T) {
	old := jobPoll
	jobPoll = time.Millisecond
	t.Cleanup(func() { jobPoll = old })
	job := func(state, history string) string {
		return `{"id":"e-1","name":"eval","state":"` + state + `","attempt_history":[` + history + `]}`
	}
	failed := `{"number":1,"ended":"2026-12-03T00:00:00Z","reason":"Failed","detail":"attempt 1, rank 0 on n1 exited with code 3; retry 1 of 1"}`
	done := `{"number":2,"ended":"2026-12-03T00:01:00Z","reason":"Completed","detail":"every instance of attempt 2 exited 0"}`
	for _, quick := range []bool{false, true} { // quick: attempt 2 starts and ends between two looks
		var mu sync.Mutex
		polls, served := 0, false // polls: 404s of attempt 2's log before it starts
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			switch {
			case r.Method == http.MethodPost:
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte(job("Queued", "")))
			case r.URL.Path == "/v1/jobs/e-1/logs" && r.URL.Query().Get("attempt") == "1":
				_, _ = w.Write([]byte("try 1\n"))
			case r.URL.Path == "/v1/jobs/e-1/logs" && polls < 3:
				polls++
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"code":"NotFound","field":"attempt","message":"attempt 2 has not started"}`))
			case r.URL.Path == "/v1/jobs/e-1/logs":
				served = true
				_, _ = w.Write([]byte("try 2\nhello\n"))
			case served || quick && polls == 3:
				_, _ = w.Write([]byte(job("Succeeded", failed+","+done)))
			default:
				_, _ = w.Write([]byte(job("Queued", failed)))
			}
		}))
		isolate(t)
		out, errOut, code := runCLI(t, "job", "run", "--server", srv.URL, "--attach", "--name", "eval", "--", "python", "eval.py")
		if code != ExitOK || out != "try 1\ntry 2\nhello\n" || !strings.Contains(errOut, "allot: job e-1 submitted") ||
			!strings.Contains(errOut, "# attempt 1: Failed: attempt 1, rank 0 on n1 exited with code 3; retry 1 of 1") ||
			strings.Contains(errOut, "# attempt 2") {
			t.Errorf("quick %v: exit %d\nstdout %q\nstderr %s", quick, code, out, errOut)
		}
		if _, errOut, code := runCLI(t, "job", "run", "--server", srv.URL, "--attach", "--array", "0-1", "--", "x"); code != ExitUsage ||
			!strings.Contains(errOut, "--attach follows one job, and these are 2") {
			t.Errorf("--attach with an array: exit %d %s", code, errOut)
		}
		srv.Close()
	}
}

// job run --attach exits with the status the job's program exited with, as
// srun does: 3 for a program that exited 3; 1 when no program status is
// known (a job cancelled before it started).
func TestJobRunAttachPassesExitCode(t *testing.T) {
	old := jobPoll
	jobPoll = time.Millisecond
	t.Cleanup(func() { jobPoll = old })
	for _, tc := range []struct {
		history string
		state   string
		want    int
	}{
		{`{"number":1,"ended":"2026-12-03T00:00:00Z","reason":"Failed","exit_code":3,"detail":"attempt 1, rank 0 on n1 exited with code 3"}`, "Failed", 3},
		{`{"number":1,"ended":"2026-12-03T00:00:00Z","reason":"Canceled","exit_code":-1,"detail":"canceled by admin"}`, "Canceled", ExitFailure},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			switch {
			case r.Method == http.MethodPost:
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte(`{"id":"e-1","name":"eval","state":"Queued"}`))
			case r.URL.Path == "/v1/jobs/e-1/logs":
				_, _ = w.Write([]byte("bye\n"))
			default:
				_, _ = w.Write([]byte(`{"id":"e-1","name":"eval","state":"` + tc.state + `","attempt_history":[` + tc.history + `]}`))
			}
		}))
		isolate(t)
		out, errOut, code := runCLI(t, "job", "run", "--server", srv.URL, "--attach", "--name", "eval", "--", "sh", "-c", "exit 3")
		if code != tc.want || out != "bye\n" {
			t.Errorf("%s: exit %d, want %d\nstdout %q\nstderr %s", tc.state, code, tc.want, out, errOut)
		}
		srv.Close()
	}
}
