package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/server"
)

// jobFiles asks POST /v1/nodes/{node}/job-files of the scope lab as
// principal.
func (lab *scopeLab) jobFiles(principal, node string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "http://allot/v1/nodes/"+node+"/job-files", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+lab.tokens[principal])
	rec := httptest.NewRecorder()
	lab.h.ServeHTTP(rec, req)
	return rec
}

// A node keeps the files of the jobs that have not ended and ran on it;
// only its own token (or the admin's) may ask, about at most 10,000 jobs.
func TestJobFilesRoute(t *testing.T) {
	lab := newScopeLab(t)
	admin := server.Principal{Admin: true}
	var here, elsewhere []string
	for _, j := range mustJobs(t, lab.srv, admin, server.JobFilter{}) {
		if n := lastNodes(j); len(n) == 1 && n[0] == lab.nodes[0] {
			here = append(here, j.ID)
		} else {
			elsewhere = append(elsewhere, j.ID)
		}
	}
	if len(here) != 1 {
		t.Fatalf("jobs on %s: %v, want one", lab.nodes[0], here)
	}
	body, _ := json.Marshal(JobFilesRequest{Jobs: append(append([]string{"no-such-job"}, here...), elsewhere...)})
	for _, who := range []string{"node:" + lab.nodes[0], "admin"} {
		rec := lab.jobFiles(who, lab.nodes[0], body)
		if got := decode[JobFiles](t, rec); rec.Code != http.StatusOK || !slices.Equal(got.Keep, here) {
			t.Errorf("as %s: %d %s, want %v kept", who, rec.Code, rec.Body, here)
		}
	}
	for _, tc := range []struct {
		who, node, body string
		code            int
		field           string
	}{
		{"node:" + lab.nodes[1], lab.nodes[0], `{"jobs":[]}`, http.StatusForbidden, ""},
		{"copilot", lab.nodes[0], `{"jobs":[]}`, http.StatusForbidden, ""},
		{"admin", "nope", `{"jobs":[]}`, http.StatusNotFound, ""},
		{"admin", lab.nodes[0], `{"jobs":"x"}`, http.StatusBadRequest, "jobs"},
		{"admin", lab.nodes[0], `{"jobs":[],"all":true}`, http.StatusBadRequest, "all"},
		{"admin", lab.nodes[0], `{"jobs":[` + strings.Repeat(`"j",`, 10000) + `"j"]}`, http.StatusBadRequest, "jobs"},
	} {
		rec := lab.jobFiles(tc.who, tc.node, []byte(tc.body))
		if e := decode[Error](t, rec); rec.Code != tc.code || e.Field != tc.field {
			t.Errorf("%s on %s with %.40s: %d %+v, want %d on %q", tc.who, tc.node, tc.body, rec.Code, e, tc.code, tc.field)
		}
	}
}

// Any body, from a node's token or the admin's, is a 200 keeping only jobs
// it named that have not ended and ran on the node, or a 4xx with an error
// body; the store does not change.
func FuzzJobFiles(f *testing.F) {
	lab := newScopeLab(f)
	admin := server.Principal{Admin: true}
	var ids []string
	for _, j := range mustJobs(f, lab.srv, admin, server.JobFilter{}) {
		ids = append(ids, j.ID)
	}
	all, _ := json.Marshal(JobFilesRequest{Jobs: ids})
	for _, b := range []string{string(all), `{"jobs":[]}`, `{"jobs":null}`, `{}`, `[]`, `{"jobs":[1]}`, "", `{"jobs":["a","a"]}`} {
		f.Add(uint8(0), false, []byte(b))
		f.Add(uint8(1), true, []byte(b))
	}
	f.Fuzz(func(t *testing.T, which uint8, asAdmin bool, body []byte) {
		node := append(lab.nodes, "nope")[int(which)%3]
		who := "node:" + lab.nodes[int(which)%2]
		if asAdmin {
			who = "admin"
		}
		before := lab.world()
		rec := lab.jobFiles(who, node, body)
		if after := lab.world(); len(after.kvs) != len(before.kvs) {
			t.Fatalf("the store changed: %d keys, was %d", len(after.kvs), len(before.kvs))
		}
		if rec.Code >= 300 {
			if e := decode[Error](t, rec); rec.Code >= 500 || e.Code == "" {
				t.Fatalf("%s on %s with %q: %d %s", who, node, body, rec.Code, rec.Body)
			}
			return
		}
		var asked JobFilesRequest
		if err := json.Unmarshal(body, &asked); err != nil {
			t.Fatalf("%q was answered %d, yet it is not a request: %v", body, rec.Code, err)
		}
		for _, id := range decode[JobFiles](t, rec).Keep {
			j := before.jobs[id]
			if !slices.Contains(asked.Jobs, id) || j == nil || j.Status.State.Terminal() || !slices.Contains(lastNodes(j), node) {
				t.Fatalf("%s on %s with %q: keeps %s, which it did not name, has ended, or never ran there", who, node, body, id)
			}
		}
	})
}

// A JSON body is one value and nothing after it but white space: a stray
// '}' or ']' (which json.Decoder.More does not see) is refused too.
func TestDecodeStrictRefusesTrailingData(t *testing.T) {
	for body, ok := range map[string]bool{`{"jobs":[]}`: true, "{\"jobs\":[]} \n\t": true, `null`: true,
		`null}`: false, `{"jobs":[]}]`: false, `{"jobs":[]} {}`: false, `{"jobs":[]} x`: false, `{"jobs":[]},`: false} {
		var v JobFilesRequest
		if e := decodeStrict([]byte(body), &v); (e == nil) != ok {
			t.Errorf("%q: %v, want accepted %v", body, e, ok)
		}
	}
}
