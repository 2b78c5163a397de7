package spec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

func TestEndpointAutoscale(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       model.EndpointAutoscale
		field      string // of the error, when one is expected
	}{
		{"absent: the defaults", ``, model.EndpointAutoscale{}, ""},
		{"all", `autoscale: {scale_in_after: 10s, scale_in_interval: 2s, lead_time: 10s, peak_window: 20s}`,
			model.EndpointAutoscale{ScaleInAfter: 10 * time.Second, ScaleInInterval: 2 * time.Second,
				LeadTime: 10 * time.Second, PeakWindow: 20 * time.Second}, ""},
		{"some", `autoscale: {scale_in_after: 5m}`, model.EndpointAutoscale{ScaleInAfter: 5 * time.Minute}, ""},
		{"negative", `autoscale: {lead_time: -1s}`, model.EndpointAutoscale{}, "autoscale.lead_time"},
		{"too long", `autoscale: {scale_in_after: 2h}`, model.EndpointAutoscale{}, "autoscale.scale_in_after"},
		{"unknown field", `autoscale: {scale_down: 1m}`, model.EndpointAutoscale{}, "autoscale.scale_down"},
		{"not a duration", `autoscale: {scale_in_interval: 3}`, model.EndpointAutoscale{}, "autoscale.scale_in_interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, ok := endpointWith(t, tc.body, tc.field); ok && s.Autoscale != tc.want {
				t.Errorf("autoscale %+v, want %+v", s.Autoscale, tc.want)
			}
		})
	}
}

// endpointWith parses an endpoint with body as its sixth line; with field
// set it wants an error about field on that line, and reports false.
func endpointWith(t *testing.T, body, field string) (model.EndpointSpec, bool) {
	t.Helper()
	doc := "name: e\ntenant: t\nmodel: m\nslo: {p95_ms: 100}\nthroughput: {T4: 10}\n" + body + "\n"
	specs, err := ParseEndpoints("e.yaml", []byte(doc))
	if field != "" {
		var se *Error
		if err == nil || !asError(err, &se) || se.Field != field || se.Line != 6 {
			t.Fatalf("err %v, want one about %s on line 6", err, field)
		}
		return model.EndpointSpec{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return specs[0], true
}

func TestEndpointRollout(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       model.EndpointRollout
		field      string // of the error, when one is expected
	}{
		{"absent: the default", ``, model.EndpointRollout{}, ""},
		{"in place", `rollout: {max_surge: 0, max_unavailable: 1}`, model.EndpointRollout{MaxUnavailable: 1}, ""},
		{"surge only", `rollout: {max_surge: 2}`, model.EndpointRollout{MaxSurge: 2}, ""},
		{"both zero", `rollout: {max_surge: 0}`, model.EndpointRollout{}, "rollout"},
		{"empty", `rollout: {}`, model.EndpointRollout{}, "rollout"},
		{"negative", `rollout: {max_surge: 1, max_unavailable: -1}`, model.EndpointRollout{}, "rollout.max_unavailable"},
		{"too many", `rollout: {max_surge: 5000}`, model.EndpointRollout{}, "rollout.max_surge"},
		{"a percentage", `rollout: {max_surge: 25%}`, model.EndpointRollout{}, "rollout.max_surge"},
		{"unknown field", `rollout: {strategy: recreate}`, model.EndpointRollout{}, "rollout.strategy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, ok := endpointWith(t, tc.body, tc.field); ok && s.Rollout != tc.want {
				t.Errorf("rollout %+v, want %+v", s.Rollout, tc.want)
			}
		})
	}
}

func asError(err error, se **Error) bool {
	e, ok := err.(*Error)
	*se = e
	return ok
}

// TestEndpointDocumentRoundTrip: an endpoint shown in document form reads
// back, as JSON, to the same spec.
func TestEndpointDocumentRoundTrip(t *testing.T) {
	docs := []string{chatEndpoint, chatEndpoint + "autoscale: {scale_in_after: 10s, lead_time: 1m30s}\n",
		chatEndpoint + "rollout: {max_surge: 0, max_unavailable: 1}\n",
		chatEndpoint + "image: ghcr.io/team/serve:2\nargs: [--port, \"8000\"]\nmounts: [/models/llama:/models:ro]\n", `
name: frac
tenant: t
model: m
command: python serve.py
resources: {gpu_milli: 250, gpu_models: [T4]}
priority: reserved
min_replicas: 2
max_replicas: 3
slo: {p95_ms: 12.5}
placement: {reservation: r1}
throughput: {T4: 25}
`}
	for _, doc := range docs {
		specs, err := ParseEndpoints("e.yaml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(EndpointDocumentOf(specs[0]))
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseEndpoints("e.json", data)
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if !reflect.DeepEqual(back[0], specs[0]) {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", strings.TrimSpace(doc), back[0], specs[0])
		}
	}
}

func TestParseEndpointsFor(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{name: e, model: m, slo: {p95_ms: 100}, throughput: {T4: 10}}`, "acme"},
		{`{"name": "e", "tenant": "globex", "model": "m", "slo": {"p95_ms": 100}, "throughput": {"T4": 10}}`, "globex"},
	} {
		specs, err := ParseEndpointsFor("e", []byte(tc.doc), "acme")
		if err != nil {
			t.Fatalf("%s: %v", tc.doc, err)
		}
		if specs[0].Tenant != tc.want {
			t.Errorf("%s: tenant %q, want %q", tc.doc, specs[0].Tenant, tc.want)
		}
	}
}
