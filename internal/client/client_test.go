package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"
)

// call is what the fake server saw of one request.
type call struct {
	method, path, rawQuery, auth, contentType, body string
}

// fake serves one canned response and records the request.
func fake(t *testing.T, status int, body string) (*Client, *call) {
	t.Helper()
	got := &call{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		*got = call{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b)}
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "7")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL+"/", "tok")
	if err != nil {
		t.Fatal(err)
	}
	return c, got
}

const jobJSON = `{"id":"j-1","name":"train","tenant":"acme","state":"Queued","reason":"InsufficientCapacity",
"detail":"eastus: 2 free","priority":"standard:10","spec":{"name":"train"},"submitted_at":"2026-06-01T12:00:00Z",
"started_at":null,"ended_at":"","allocations":[{"node":"n1","gpus":[0,1],"gpu_milli":1000}],"attempts":2,"preemptions":1}`

func TestMethods(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		status int
		body   string
		do     func(c *Client) (any, error)
		want   call
		check  func(t *testing.T, v any)
	}{
		{"Submit", 201, jobJSON, func(c *Client) (any, error) { return c.Submit(ctx, []byte(`{"name":"x"}`), "application/json") },
			call{method: "POST", path: "/v1/jobs", body: `{"name":"x"}`, contentType: "application/json"},
			func(t *testing.T, v any) {
				j := v.(Job)
				want := Job{ID: "j-1", Name: "train", Tenant: "acme", State: "Queued", Reason: "InsufficientCapacity",
					Detail: "eastus: 2 free", Priority: "standard:10", Spec: json.RawMessage(`{"name":"train"}`),
					SubmittedAt: Time{time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)},
					Allocations: []Allocation{{Node: "n1", GPUs: []int{0, 1}, GPUMilli: 1000}}, Attempts: 2, Preemptions: 1}
				if !reflect.DeepEqual(j, want) {
					t.Errorf("got %+v\nwant %+v", j, want)
				}
			}},
		{"ListJobs", 200, `{"jobs":[` + jobJSON + `]}`, func(c *Client) (any, error) {
			return c.ListJobs(ctx, JobFilter{State: "Queued", Tenant: "acme"})
		}, call{method: "GET", path: "/v1/jobs", rawQuery: "state=Queued&tenant=acme"},
			func(t *testing.T, v any) {
				if js := v.([]Job); len(js) != 1 || js[0].ID != "j-1" {
					t.Errorf("got %+v", js)
				}
			}},
		{"GetJob escapes the ID", 200, jobJSON, func(c *Client) (any, error) { return c.GetJob(ctx, "a/b") },
			call{method: "GET", path: "/v1/jobs/a%2Fb"}, nil},
		{"Cancel", 200, jobJSON, func(c *Client) (any, error) { return c.Cancel(ctx, "j-1") },
			call{method: "POST", path: "/v1/jobs/j-1/cancel"}, nil},
		{"Why", 200, `{"id":"j-1","state":"Queued","reason":"QuotaExceeded","detail":"d","estimated_start":null}`,
			func(c *Client) (any, error) { return c.Why(ctx, "j-1") },
			call{method: "GET", path: "/v1/jobs/j-1/why"},
			func(t *testing.T, v any) {
				if w := v.(Why); w.Reason != "QuotaExceeded" || !w.EstimatedStart.IsZero() {
					t.Errorf("got %+v", w)
				}
			}},
		{"Nodes", 200, `{"nodes":[{"name":"n1","gpus":8,"free_gpu_milli":3000,"jobs":["j-1"]}]}`,
			func(c *Client) (any, error) { return c.Nodes(ctx) }, call{method: "GET", path: "/v1/nodes"},
			func(t *testing.T, v any) {
				if ns := v.([]Node); len(ns) != 1 || ns[0].FreeGPUMilli != 3000 || ns[0].Jobs[0] != "j-1" {
					t.Errorf("got %+v", ns)
				}
			}},
		{"Alerts", 200, `{"alerts":[{"name":"AllotNodeNotReady","severity":"warning","state":"firing","labels":{"node":"n1"},"value":1,"summary":"s","since":"2026-01-01T00:00:00Z","fired_at":"2026-01-01T00:05:00Z"}]}`,
			func(c *Client) (any, error) { return c.Alerts(ctx) }, call{method: "GET", path: "/v1/alerts"},
			func(t *testing.T, v any) {
				if as := v.([]Alert); len(as) != 1 || as[0].Labels["node"] != "n1" || as[0].FiredAt == nil ||
					as[0].FiredAt.Minute() != 5 || as[0].ResolvedAt != nil {
					t.Errorf("got %+v", as)
				}
			}},
		{"SKUs", 200, `{"skus":[{"name":"ND96","free_gpus":16,"price_per_hour":98.32}]}`,
			func(c *Client) (any, error) { return c.SKUs(ctx, "eastus", "ND") },
			call{method: "GET", path: "/v1/skus", rawQuery: "region=eastus&series=ND"}, nil},
		{"Usage", 200, `{"usage":[{"tenant":"acme","region":"eastus","series":"ND","used_gpus":8,"quota_gpus":null}]}`,
			func(c *Client) (any, error) { return c.Usage(ctx, "eastus") },
			call{method: "GET", path: "/v1/usage", rawQuery: "region=eastus"},
			func(t *testing.T, v any) {
				if us := v.([]Usage); len(us) != 1 || us[0].UsedGPUs != 8 || us[0].QuotaGPUs != nil {
					t.Errorf("got %+v", us)
				}
			}},
		{"CreateReservation", 201, `{"name":"r1","owner":"acme","sku":"S","region":"eastus","count":2,"start":"2027-01-01T00:00:00Z","end":"2027-02-01T00:00:00Z"}`,
			func(c *Client) (any, error) {
				return c.CreateReservation(ctx, Reservation{SKU: "S", Region: "eastus", Count: 2})
			},
			call{method: "POST", path: "/v1/reservations", contentType: "application/json",
				body: `{"sku":"S","region":"eastus","count":2}`}, nil},
		{"ListReservations", 200, `{"reservations":[]}`, func(c *Client) (any, error) { return c.ListReservations(ctx) },
			call{method: "GET", path: "/v1/reservations"}, nil},
		{"DeleteReservation", 204, ``, func(c *Client) (any, error) { return nil, c.DeleteReservation(ctx, "r 1") },
			call{method: "DELETE", path: "/v1/reservations/r%201"}, nil},
		{"CreateToken", 201, `{"token":"secret","tenant":"acme"}`, func(c *Client) (any, error) { return c.CreateToken(ctx, "acme") },
			call{method: "POST", path: "/v1/tokens", contentType: "application/json", body: `{"tenant":"acme"}`},
			func(t *testing.T, v any) {
				if tk := v.(Token); tk.Token != "secret" || tk.Tenant != "acme" {
					t.Errorf("got %+v", tk)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, got := fake(t, tt.status, tt.body)
			v, err := tt.do(c)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.auth = "Bearer tok"
			if *got != tt.want {
				t.Errorf("request\n got %+v\nwant %+v", *got, tt.want)
			}
			if tt.check != nil {
				tt.check(t, v)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   APIError
		text   string
	}{
		{"contract body", 400, `{"code":"InvalidSpec","message":"must be between 0 and 64","field":"resources.gpus_per_instance"}`,
			APIError{Status: 400, Code: "InvalidSpec", Message: "must be between 0 and 64", Field: "resources.gpus_per_instance"},
			"InvalidSpec: must be between 0 and 64 (field resources.gpus_per_instance)"},
		{"no field", 404, `{"code":"NotFound","message":"no job j-9"}`,
			APIError{Status: 404, Code: "NotFound", Message: "no job j-9"}, "NotFound: no job j-9"},
		{"not JSON", 502, "<html>bad gateway</html>\nmore",
			APIError{Status: 502, Code: "Internal", Message: "<html>bad gateway</html>"}, "Internal: <html>bad gateway</html>"},
		{"Retry-After", 429, `{"code":"RateLimited","message":"slow down"}`,
			APIError{Status: 429, Code: "RateLimited", Message: "slow down", RetryAfter: 7 * time.Second}, "RateLimited: slow down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := fake(t, tt.status, tt.body)
			_, err := c.GetJob(context.Background(), "j")
			var e *APIError
			if !errors.As(err, &e) {
				t.Fatalf("want *APIError, got %T %v", err, err)
			}
			if !reflect.DeepEqual(*e, tt.want) {
				t.Errorf("got %+v, want %+v", *e, tt.want)
			}
			if e.Error() != tt.text {
				t.Errorf("Error() = %q, want %q", e.Error(), tt.text)
			}
		})
	}
}

func TestNoTokenSendsNoHeader(t *testing.T) {
	c, got := fake(t, 200, `{"jobs":[]}`)
	c.token = ""
	if _, err := c.ListJobs(context.Background(), JobFilter{}); err != nil {
		t.Fatal(err)
	}
	if got.auth != "" {
		t.Errorf("Authorization = %q, want none", got.auth)
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	for _, s := range []string{"", "127.0.0.1:8080", "ftp://x", "http://"} {
		if _, err := New(s, ""); err == nil {
			t.Errorf("New(%q) = nil error", s)
		}
	}
}

func TestDecodeVariants(t *testing.T) {
	var p struct {
		A, B, C, D Priority
		N, L       Count
		T          Time
	}
	in := `{"A":"spot","B":5,"C":{"class":"reserved","value":3},"D":{"class":"standard","value":0},"N":3,"L":[{},{}],"T":"0001-01-01T00:00:00Z"}`
	if err := json.Unmarshal([]byte(in), &p); err != nil {
		t.Fatal(err)
	}
	if p.A != "spot" || p.B != "5" || p.C != "reserved:3" || p.D != "standard" || p.N != 3 || p.L != 2 || !p.T.IsZero() {
		t.Errorf("got %+v", p)
	}
	out, _ := json.Marshal(p.T)
	if string(out) != "null" {
		t.Errorf("zero Time encodes as %s, want null", out)
	}
}

// A successful answer's Warning headers reach OnWarning, unquoted; a
// refusal's do not (its error says what happened).
func TestWarnings(t *testing.T) {
	status := http.StatusCreated
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Add("Warning", `299 - "pool \"H100\" promised twice, path C:\\x"`)
		w.Header().Add("Warning", `199 agent "not ours"`)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"code":"Conflict","message":"no"}`))
	}))
	defer srv.Close()
	c, err := New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	c.OnWarning = func(text string) { got = append(got, text) }
	if _, err := c.CreateReservation(context.Background(), Reservation{}); err != nil {
		t.Fatal(err)
	}
	want := []string{`pool "H100" promised twice, path C:\x`, `199 agent "not ours"`}
	if !slices.Equal(got, want) {
		t.Fatalf("warnings %q, want %q", got, want)
	}
	got, status = nil, http.StatusConflict
	if _, err := c.CreateReservation(context.Background(), Reservation{}); err == nil || len(got) != 0 {
		t.Fatalf("refused: err %v, warnings %q; want an error and no warning", err, got)
	}
}
