package api

import (
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/api/wire"
)

// A gateway's report body parses or is refused naming the part at fault;
// an accepted one keeps every latency it carried.
func FuzzGatewayReport(f *testing.F) {
	for _, s := range []string{
		`{"gateway":"gw","endpoints":[{"endpoint":"chat","replicas":[{"job":"j1","requests":3,"errors":1,"in_flight":2,"routed":true,"ready":true,"latency":[[10,2],[40,1]],"first_byte":[[5,3]]}]}]}`,
		`{"gateway":"gw","endpoints":[{"endpoint":"chat","replicas":[{"job":"j1","latency":[[300,1]]}]}]}`,
		`{"gateway":"gw","endpoints":[{"endpoint":"chat","replicas":[{"job":"j1","latency":[[3,1],[2,1]]}]}]}`,
		`{"gateway":"gw","endpoints":[{"endpoint":"chat","replicas":[{"job":"j1","first_byte":[[1,0]]}]}]}`,
		`{"gateway":"gw","extra":1}`, `{"endpoints":null}`, `[]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var req wire.GatewayReport
		if e := decodeStrict([]byte(body), &req); e != nil {
			checkError(t, e, e.Field) // a 4xx, naming the field of the wrong type when there is one
			return
		}
		rep, e := parseGatewayReport(req)
		if e != nil {
			if !strings.HasPrefix(e.Field, "endpoints[") || !(strings.HasSuffix(e.Field, ".latency") || strings.HasSuffix(e.Field, ".first_byte")) {
				t.Fatalf("error %+v names no latency field", e)
			}
			checkError(t, e, e.Field)
			return
		}
		for i, er := range req.Endpoints {
			for k, r := range er.Replicas {
				var n uint64
				for _, p := range r.Latency {
					n += p[1]
				}
				if got := rep.Endpoints[i].Replicas[k].Latency.Count(); got != n {
					t.Fatalf("replica %d/%d: %d latencies kept of %d", i, k, got, n)
				}
			}
		}
	})
}

// The after= and wait= of GET /v1/routes are checked before the server
// is asked.
func FuzzRoutesQuery(f *testing.F) {
	for _, s := range []string{"after=abc&wait=30s", "wait=-1s", "wait=x", "after=" + strings.Repeat("a", 65), ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		after, wait, e := parseRoutesQuery(raw)
		checkError(t, e, "after", "wait", "")
		if e == nil && (len(after) > maxRouteVersion || wait < 0 || wait > MaxWait) {
			t.Fatalf("accepted after %q, wait %s", after, wait)
		}
	})
}
