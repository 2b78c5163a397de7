package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNodeList(t *testing.T) {
	body := `{"nodes":[{"name":"eastus-t4x1-01","sku":"NC4-T4x1","region":"eastus","cluster":"c1","leaf":"","rack":"r1",
"health":"Ready","gpus":1,"gpu_model":"T4","free_gpu_milli":750,"jobs":["j-2"]}]}`
	runCases(t, []commandCase{
		{name: "table", args: []string{"node", "list"},
			ex:      exchange{method: "GET", path: "/v1/nodes", status: 200, body: body},
			wantOut: []string{"HEALTH", "eastus-t4x1-01", "Ready", "1 T4", "0.75", "j-2"}},
		{name: "many jobs keep to a line", args: []string{"node", "list"},
			ex: exchange{method: "GET", path: "/v1/nodes", status: 200,
				body: strings.Replace(body, `"jobs":["j-2"]`, `"jobs":["j-1","j-2","j-3","j-4","j-5"]`, 1)},
			wantOut: []string{"j-1,j-2,j-3 +2 more"}},
		{name: "every job in json", args: []string{"node", "list", "-o", "json"},
			ex: exchange{method: "GET", path: "/v1/nodes", status: 200,
				body: strings.Replace(body, `"jobs":["j-2"]`, `"jobs":["j-1","j-2","j-3","j-4","j-5"]`, 1)},
			wantOut: []string{`"j-5"`}},
		{name: "tenant token", args: []string{"node", "list"},
			ex:       exchange{method: "GET", path: "/v1/nodes", status: 403, body: `{"code":"Forbidden","message":"nodes are admin-only"}`},
			wantCode: ExitFailure, wantErr: []string{"allot: Forbidden: nodes are admin-only"}},
	})
}

func TestNodeDrainResume(t *testing.T) {
	drained := `{"name":"eastus-t4x1-01","sku":"NC4-T4x1","region":"eastus","cluster":"c1","leaf":"","rack":"r1",
"health":"Draining","gpus":1,"gpu_model":"T4","free_gpu_milli":0,"jobs":["j-2"],
"drain":{"reason":"XID 79","by":"admin","at":"2026-06-01T12:00:00Z"}}`
	runCases(t, []commandCase{
		{name: "drain", args: []string{"node", "drain", "eastus-t4x1-01", "--reason", "XID 79"},
			ex: exchange{method: "POST", path: "/v1/nodes/eastus-t4x1-01/drain", status: 200,
				checkBody: func(t *testing.T, b []byte) {
					if string(b) != `{"reason":"XID 79"}` {
						t.Errorf("body %s", b)
					}
				}, body: drained},
			wantOut: []string{"Draining", "j-2", "XID 79 (admin, 2026-06-01T12:00:00Z)"}},
		{name: "a refused reason", args: []string{"node", "drain", "eastus-t4x1-01", "--reason", " "},
			ex: exchange{method: "POST", path: "/v1/nodes/eastus-t4x1-01/drain", status: 400,
				body: `{"code":"InvalidSpec","message":"must not be empty: say why","field":"reason"}`},
			wantCode: ExitUsage, wantErr: []string{"allot: InvalidSpec: must not be empty: say why (field reason)"}},
		{name: "resume, json", args: []string{"node", "resume", "eastus-t4x1-01", "-o", "json"},
			ex:      exchange{method: "POST", path: "/v1/nodes/eastus-t4x1-01/resume", status: 200, body: strings.Replace(drained, `"health":"Draining"`, `"health":"Ready"`, 1)},
			wantOut: []string{`"name": "eastus-t4x1-01"`, `"health": "Ready"`}},
	})
}

// drain --requeue drains first, then requeues each job the node runs, and
// says which could not be: exit status 1, the node drained all the same.
func TestNodeDrainRequeue(t *testing.T) {
	drained := `{"name":"n1","sku":"NC4-T4x1","region":"eastus","health":"Draining","gpus":4,"gpu_model":"T4",
"jobs":["j-1","j-2"],"drain":{"reason":"firmware","by":"admin","at":"2026-06-01T12:00:00Z"}}`
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/nodes/n1/drain":
			_, _ = w.Write([]byte(drained))
		case "/v1/jobs/j-1/requeue":
			_, _ = w.Write([]byte(`{"id":"j-1","name":"train","state":"Preempted","reason":"Requeued"}`))
		case "/v1/jobs/j-2/requeue":
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"code":"Conflict","message":"job j-2 is already stopping to be queued again"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	isolate(t)
	out, errOut, code := runCLI(t, "node", "drain", "n1", "--reason", "firmware", "--requeue", "--server", srv.URL)
	if want := "POST /v1/nodes/n1/drain POST /v1/jobs/j-1/requeue POST /v1/jobs/j-2/requeue"; strings.Join(asked, " ") != want {
		t.Errorf("asked %v, want %s", asked, want)
	}
	if code != ExitFailure || !strings.Contains(errOut, "n1 drained; 1 of 2 jobs on it could not be requeued") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"Draining", "firmware (admin", "j-1  train  Preempted", "j-2  -      -          Conflict: job j-2 is already stopping"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	asked = nil
	out, _, _ = runCLI(t, "node", "drain", "n1", "--reason", "firmware", "--requeue", "-o", "json", "--server", srv.URL)
	if !strings.Contains(out, `"node": {`) || !strings.Contains(out, `"state": "Preempted"`) {
		t.Errorf("json:\n%s", out)
	}
}

func TestNodeShow(t *testing.T) {
	body := `{"name":"eastus-t4x4-01","sku":"NC64-T4x4","region":"eastus","cluster":"eastus-eth1","leaf":"","rack":"r1",
"health":"Draining","gpus":2,"gpu_model":"T4","free_gpu_milli":750,"jobs":["j-1","j-2"],
"drain":{"reason":"fan","by":"admin","at":"2026-06-01T12:00:00Z"},"address":"10.0.0.7",
"health_since":"2026-06-01T11:00:00Z","last_heartbeat":null,
"gpu_list":[{"index":0,"uuid":"GPU-aa","model":"T4","memory_mib":15360,"used_milli":1000,"jobs":["j-1"]},
{"index":1,"uuid":"GPU-bb","model":"T4","memory_mib":15360,"used_milli":250,"jobs":["j-2"]}],
"failed_attempts":[{"job":"j-9","tenant":"acme","attempt":2,"exit_code":9,"at":"2026-06-01T11:30:00Z","detail":"attempt 2, rank 0 on eastus-t4x4-01 exited with code 9; retry 2 of 3"}]}`
	none := strings.Replace(body, `"failed_attempts":[{`, `"failed_attempts":[],"x":[{`, 1)
	reserved := strings.Replace(body, `"address":`, `"reservation":"acme-t4","address":`, 1)
	ahead := strings.Replace(body, `"address":`, `"reservation":"acme-t4","reservation_ahead":true,"address":`, 1)
	images := strings.Replace(body, `"address":`, `"images":["ghcr.io/acme/train:1","nvcr.io/nvidia/pytorch:24.05-py3"],"address":`, 1)
	runCases(t, []commandCase{
		{name: "show", args: []string{"node", "show", "eastus-t4x4-01"},
			ex: exchange{method: "GET", path: "/v1/nodes/eastus-t4x4-01", status: 200, body: body},
			wantOut: []string{"SKU:             NC64-T4x4 (2 T4)", "Where:           region eastus, cluster eastus-eth1, leaf -, rack r1",
				"Health:          Draining since 2026-06-01T11:00:00Z", "Drained:         fan (admin, 2026-06-01T12:00:00Z)",
				"Agent:           10.0.0.7", "Last heartbeat:  -", "Free:            0.75 GPUs", "Jobs:            j-1, j-2",
				"Failures:        2026-06-01T11:30:00Z j-9 #2 exit 9 (", "ago): attempt 2, rank 0 on eastus-t4x4-01 exited with code 9; retry 2 of 3\n",
				"GPU  MODEL  UUID    MEMORY     USED  JOBS", "0    T4     GPU-aa  15360 MiB  1     j-1", "1    T4     GPU-bb  15360 MiB  0.25  j-2"}},
		{name: "show a node without failures", args: []string{"node", "show", "eastus-t4x4-01"},
			ex:      exchange{method: "GET", path: "/v1/nodes/eastus-t4x4-01", status: 200, body: none},
			wantOut: []string{"Failures:        none known\n"}},
		{name: "show a reserved node", args: []string{"node", "show", "eastus-t4x4-01"},
			ex:      exchange{method: "GET", path: "/v1/nodes/eastus-t4x4-01", status: 200, body: reserved},
			wantOut: []string{"Reserved:        acme-t4\n"}},
		{name: "show a node kept for a reservation ahead", args: []string{"node", "show", "eastus-t4x4-01"},
			ex:      exchange{method: "GET", path: "/v1/nodes/eastus-t4x4-01", status: 200, body: ahead},
			wantOut: []string{"Reserved:        acme-t4 (kept for its start)\n"}},
		{name: "show the images a node holds", args: []string{"node", "show", "eastus-t4x4-01"},
			ex:      exchange{method: "GET", path: "/v1/nodes/eastus-t4x4-01", status: 200, body: images},
			wantOut: []string{"Images:          ghcr.io/acme/train:1, nvcr.io/nvidia/pytorch:24.05-py3\n"}},
		{name: "unknown", args: []string{"node", "show", "eastus-t4x4-9"},
			ex: exchange{method: "GET", path: "/v1/nodes/eastus-t4x4-9", status: 404,
				body: `{"code":"NotFound","message":"no node \"eastus-t4x4-9\" in the fleet (did you mean eastus-t4x4-01?)"}`},
			wantCode: ExitUsage, wantErr: []string{"did you mean eastus-t4x4-01?"}},
	})
}

// drain --requeue --wait waits until the node holds no job and the
// requeued job's processes stopped, saying what it waits for; past the
// limit it fails, the node drained all the same.
func TestNodeDrainWait(t *testing.T) {
	old := jobPoll
	jobPoll = time.Millisecond
	t.Cleanup(func() { jobPoll = old })
	for _, tc := range []struct {
		stops   int // GETs of j-1 that still find it stopping
		wait    string
		code    int
		wantErr string
	}{
		{stops: 3, wait: "5s", code: ExitOK, wantErr: "n1: empty"},
		{stops: 1 << 30, wait: "30ms", code: ExitFailure, wantErr: "n1 is not empty after 30ms: j-1 (stopping)"},
	} {
		var mu sync.Mutex
		gets := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			switch r.Method + " " + r.URL.Path {
			case "POST /v1/nodes/n1/drain":
				_, _ = w.Write([]byte(`{"name":"n1","health":"Draining","jobs":["j-1"]}`))
			case "POST /v1/jobs/j-1/requeue":
				_, _ = w.Write([]byte(`{"id":"j-1","name":"train","state":"Preempted","reason":"Requeued"}`))
			case "GET /v1/nodes/n1":
				_, _ = w.Write([]byte(`{"name":"n1","health":"Draining","jobs":[],"gpu_list":[]}`))
			case "GET /v1/jobs/j-1":
				state := "Queued"
				if gets++; gets <= tc.stops {
					state = "Preempted"
				}
				_, _ = w.Write([]byte(`{"id":"j-1","name":"train","state":"` + state + `"}`))
			default:
				http.NotFound(w, r)
			}
		}))
		isolate(t)
		_, errOut, code := runCLI(t, "node", "drain", "n1", "--reason", "fw", "--requeue", "--wait", tc.wait, "--server", srv.URL)
		if code != tc.code || !strings.Contains(errOut, "n1: waiting for j-1 (stopping)") || !strings.Contains(errOut, tc.wantErr) {
			t.Errorf("--wait %s: exit %d\n%s", tc.wait, code, errOut)
		}
		srv.Close()
	}
}
