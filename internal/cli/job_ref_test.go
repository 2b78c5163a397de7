package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// show, why and logs take a job's ID, or its name when exactly one job
// has it; several of that name are listed for the person to pick, and a
// name no job has is the server's NotFound, with the ID escaped in the
// path.
func TestJobByName(t *testing.T) {
	jobs := []map[string]string{
		{"id": "train-2", "name": "train", "state": "Running"},
		{"id": "train-1", "name": "train", "state": "Failed"},
		{"id": "eval-big-1", "name": "eval-big", "state": "Queued"},
		{"id": "eval-1", "name": "eval", "state": "Succeeded"},
	}
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.EscapedPath()+"?"+r.URL.RawQuery)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/jobs" { // the name is a substring, as the server matches it
			var out []map[string]string
			for _, j := range jobs {
				if strings.Contains(j["name"], r.URL.Query().Get("name")) {
					out = append(out, j)
				}
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"jobs": out})
			return
		}
		id, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/jobs/"), "/")
		id, _ = url.PathUnescape(id)
		for _, j := range jobs {
			if j["id"] != id {
				continue
			}
			switch rest {
			case "":
				_ = json.NewEncoder(w).Encode(j)
			case "why":
				_ = json.NewEncoder(w).Encode(map[string]string{"id": id, "state": j["state"], "reason": "Completed"})
			case "logs":
				w.Header().Set("Content-Type", "text/plain")
				_, _ = w.Write([]byte("log of " + id + "\n"))
			}
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"code":"NotFound","message":"no job ` + id + `"}`))
	}))
	defer srv.Close()
	isolate(t)
	for _, tc := range []struct {
		args      []string
		code      int
		out, err  string
		requested []string
	}{
		{args: []string{"job", "show", "eval-1"}, out: "eval-1", requested: []string{"/v1/jobs/eval-1?"}},
		{args: []string{"job", "show", "eval"}, out: "Succeeded",
			requested: []string{"/v1/jobs/eval?", "/v1/jobs?name=eval", "/v1/jobs/eval-1?"}},
		{args: []string{"job", "why", "eval"}, out: "Completed",
			requested: []string{"/v1/jobs/eval/why?", "/v1/jobs?name=eval", "/v1/jobs/eval-1/why?"}},
		{args: []string{"job", "logs", "eval-big"}, out: "log of eval-big-1",
			requested: []string{"/v1/jobs/eval-big?", "/v1/jobs?name=eval-big", "/v1/jobs/eval-big-1?", "/v1/jobs/eval-big-1/logs?"}},
		{args: []string{"job", "why", "train"}, code: ExitUsage,
			err: `no job has the ID "train", and 2 jobs are named so: train-2 (Running), train-1 (Failed); give the ID of one (allot job list --name train)`},
		{args: []string{"job", "show", "a/b"}, code: ExitUsage, err: "allot: NotFound: no job a/b\n",
			requested: []string{"/v1/jobs/a%2Fb?", "/v1/jobs?name=a%2Fb"}},
	} {
		mu.Lock()
		asked = nil
		mu.Unlock()
		out, errOut, code := runCLI(t, append(tc.args, "--server", srv.URL)...)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.err) {
			t.Errorf("%v: exit %d, out %q, err %q; want %d, %q, %q", tc.args, code, out, errOut, tc.code, tc.out, tc.err)
		}
		mu.Lock()
		if tc.requested != nil && strings.Join(asked, " ") != strings.Join(tc.requested, " ") {
			t.Errorf("%v asked %v, want %v", tc.args, asked, tc.requested)
		}
		mu.Unlock()
	}
}
