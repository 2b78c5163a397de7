package endpoint

import (
	"errors"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/latency"
	"github.com/allot-dev/allot/internal/refusal"
)

// Whatever counts a gateway sends, validate answers nil or an
// InvalidSpec naming the field; what it accepts is consistent.
func FuzzGatewayReportValidate(f *testing.F) {
	f.Add("gw", "chat", "j1", uint64(10), uint64(1), 2, uint64(10))
	f.Add("", "chat", "j1", uint64(1), uint64(2), -1, uint64(3))
	f.Add("gw\x00", "no/such", "", uint64(0), uint64(0), 1<<31, uint64(0))
	f.Fuzz(func(t *testing.T, gw, endpoint, job string, requests, errs uint64, inFlight int, latencies uint64) {
		var lat latency.Histogram
		for range min(latencies, 100) {
			lat.Add(time.Millisecond)
		}
		r := GatewayReport{Gateway: gw, Endpoints: []GatewayEndpointReport{{Endpoint: endpoint,
			Replicas: []GatewayReplicaReport{{Job: job, Requests: requests, Errors: errs, InFlight: inFlight, Latency: lat}}}}}
		err := r.validate()
		if err != nil {
			var se *refusal.Error
			if !errors.As(err, &se) || se.Code != refusal.InvalidSpec || se.Field == "" {
				t.Fatalf("validate: %v, want InvalidSpec naming a field", err)
			}
			return
		}
		if errs > requests || inFlight < 0 || lat.Count() > requests || gw == "" || job == "" {
			t.Fatalf("accepted %+v", r)
		}
	})
}
