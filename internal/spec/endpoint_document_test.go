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
			doc := "{name: e, tenant: t, model: m, slo: {p95_ms: 100}, throughput: {T4: 10}}\n"
			if tc.body != "" {
				doc = "name: e\ntenant: t\nmodel: m\nslo: {p95_ms: 100}\nthroughput: {T4: 10}\n" + tc.body + "\n"
			}
			specs, err := ParseEndpoints("e.yaml", []byte(doc))
			if tc.field != "" {
				var se *Error
				if err == nil || !asError(err, &se) || se.Field != tc.field {
					t.Fatalf("err %v, want one about %s", err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if specs[0].Autoscale != tc.want {
				t.Errorf("autoscale %+v, want %+v", specs[0].Autoscale, tc.want)
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
	docs := []string{chatEndpoint, chatEndpoint + "autoscale: {scale_in_after: 10s, lead_time: 1m30s}\n", `
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
