package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/store"
)

// receiver is a webhook receiver answering the statuses in turn (200 once
// they are spent) and recording each body.
type receiver struct {
	mu       sync.Mutex // guards statuses and bodies
	statuses []int
	bodies   [][]byte
}

// posts returns the bodies received so far.
func (r *receiver) posts() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bodies)
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, b)
	code := http.StatusOK
	if len(r.statuses) > 0 {
		code, r.statuses = r.statuses[0], r.statuses[1:]
	}
	if req.Header.Get("Content-Type") != "application/json" {
		code = http.StatusUnsupportedMediaType
	}
	w.WriteHeader(code)
}

// alertServer is a server whose nodes all wait for their agents, so
// AllotNodeNotReady holds for each, with a one-minute `for`.
func alertServer(t *testing.T, hook string) (*Server, *ManualClock) {
	t.Helper()
	fleet, ten := servertest.Lab(t)
	clock := NewManualClock(t0)
	srv, err := New(context.Background(), Config{Store: servertest.Store(t, t.TempDir()), Fleet: fleet, Tenancy: ten,
		Clock: clock, Nodes: Agents{Timeout: time.Minute}, AlertFor: time.Minute, AlertWebhook: hook})
	if err != nil {
		t.Fatal(err)
	}
	return srv, clock
}

func TestAlertsNodeNotReady(t *testing.T) {
	srv, clock := alertServer(t, "")
	nodes := len(srv.Nodes())
	if got := srv.EvaluateAlerts(); len(got) != 0 {
		t.Fatalf("transitions at the first evaluation: %+v", got)
	}
	all := srv.Alerts()
	if len(all) != nodes || all[0].State != "pending" || all[0].Name != "AllotNodeNotReady" {
		t.Fatalf("alerts %+v, want %d pending AllotNodeNotReady", all, nodes)
	}
	clock.Advance(time.Minute)
	fired := srv.EvaluateAlerts()
	if len(fired) != nodes {
		t.Fatalf("fired %d alerts, want %d", len(fired), nodes)
	}
	a := fired[0]
	if a.State != "firing" || a.Labels["node"] == "" || a.Labels["health"] != "NotReady" || a.FiredAt == nil ||
		!a.FiredAt.Equal(t0.Add(time.Minute)) || !a.Since.Equal(t0) || a.Severity != "warning" {
		t.Errorf("fired %+v", a)
	}
}

func TestAlertWebhookRetries(t *testing.T) {
	rec := &receiver{statuses: []int{http.StatusInternalServerError, http.StatusServiceUnavailable}}
	ts := httptest.NewServer(rec)
	defer ts.Close()
	srv, clock := alertServer(t, ts.URL)
	srv.alerts.hook.backoff = time.Millisecond
	srv.EvaluateAlerts()
	clock.Advance(time.Minute)
	fired := srv.EvaluateAlerts()

	var n wire.AlertNotice
	select {
	case n = <-srv.alerts.hook.queue:
	default:
		t.Fatal("no notice queued")
	}
	if err := srv.alerts.hook.deliver(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	bodies := rec.posts()
	if len(bodies) != 3 {
		t.Fatalf("%d POSTs, want 3 (500, 503, then 200)", len(bodies))
	}
	var got wire.AlertNotice
	if err := json.Unmarshal(bodies[2], &got); err != nil {
		t.Fatal(err)
	}
	if got.Version != 1 || got.Source != "allot" || !got.SentAt.Equal(t0.Add(time.Minute)) ||
		len(got.Alerts) != len(fired) || got.Alerts[0].Name != "AllotNodeNotReady" || got.Alerts[0].State != "firing" ||
		got.Alerts[0].Labels["node"] != fired[0].Labels["node"] {
		t.Errorf("payload %s", bodies[2])
	}
	// The raw payload names its fields as docs/alerts.md says.
	var raw struct {
		Alerts []map[string]any `json:"alerts"`
	}
	if err := json.Unmarshal(bodies[2], &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "severity", "state", "labels", "value", "summary", "since", "fired_at"} {
		if _, ok := raw.Alerts[0][k]; !ok {
			t.Errorf("payload alert has no %q: %v", k, raw.Alerts[0])
		}
	}
	if _, ok := raw.Alerts[0]["resolved_at"]; ok {
		t.Errorf("firing alert has resolved_at: %v", raw.Alerts[0])
	}
}

func TestAlertWebhookGivesUp(t *testing.T) {
	for _, tt := range []struct {
		name     string
		statuses []int
		posts    int
	}{
		{"client error is not retried", []int{http.StatusBadRequest}, 1},
		{"attempts are bounded", []int{500, 500, 500, 500, 500, 500, 500}, webhookAttempts},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &receiver{statuses: tt.statuses}
			ts := httptest.NewServer(rec)
			defer ts.Close()
			srv, _ := alertServer(t, ts.URL)
			srv.alerts.hook.backoff = time.Millisecond
			if err := srv.alerts.hook.deliver(context.Background(), wire.AlertNotice{Version: 1}); err == nil {
				t.Error("delivered")
			}
			if got := len(rec.posts()); got != tt.posts {
				t.Errorf("%d POSTs, want %d", got, tt.posts)
			}
		})
	}
}

func TestAlertWebhookNeverBlocks(t *testing.T) {
	srv, _ := alertServer(t, "http://127.0.0.1:1/never-drained")
	for range webhookQueue + 10 {
		srv.alerts.hook.enqueue(wire.AlertNotice{Version: 1}) // nothing drains the queue
	}
	if got := len(srv.alerts.hook.queue); got != webhookQueue {
		t.Errorf("queue holds %d, want %d", got, webhookQueue)
	}
}

// TestAlertsFromMetrics drives the range rules through the server's own
// counters and histogram, as /metrics exports them.
func TestAlertsFromMetrics(t *testing.T) {
	srv, clock := alertServer(t, "")
	srv.EvaluateAlerts()
	srv.m.panics.Inc()
	for range 100 {
		srv.m.cycle.Observe(3) // seconds: over the 1 s bound
	}
	clock.Advance(15 * time.Second)
	var panicked bool
	for _, a := range srv.EvaluateAlerts() {
		panicked = panicked || a.Name == "AllotCyclePanicked" && a.State == "firing" && a.Value == 1
	}
	if !panicked {
		t.Errorf("no AllotCyclePanicked firing: %+v", srv.Alerts())
	}
	var slow *wire.Alert
	for _, a := range srv.Alerts() {
		if a.Name == "AllotCycleSlow" {
			slow = &a
		}
	}
	if slow == nil || slow.State != "pending" || slow.Value <= 2 || slow.Value > 5 {
		t.Errorf("AllotCycleSlow %+v, want pending with a p99 in the (2 s, 5 s] bucket", slow)
	}
}

// TestAlertsGoOnAfterFailover: the leader stores its alerts when one
// starts or fires; a server that takes over on the same store goes on from
// them: the firing alerts keep their times and are not fired (nor sent to
// the webhook) again, and one whose condition no longer holds resolves.
func TestAlertsGoOnAfterFailover(t *testing.T) {
	srv, clock := alertServer(t, "")
	ctx := t.Context()
	nodes := len(srv.Nodes())
	srv.EvaluateAlerts()
	if err := srv.saveAlerts(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if fired := srv.EvaluateAlerts(); len(fired) != nodes {
		t.Fatalf("fired %d, want %d", len(fired), nodes)
	}
	if err := srv.saveAlerts(ctx); err != nil {
		t.Fatal(err)
	}
	before := srv.Alerts()

	cfg := srv.cfg
	cfg.Registry = nil
	next, err := New(ctx, cfg) // another server on the same store
	if err != nil {
		t.Fatal(err)
	}
	if err := next.restoreAlerts(ctx); err != nil {
		t.Fatal(err)
	}
	if got := next.Alerts(); len(got) != nodes || got[0].State != "firing" || !got[0].FiredAt.Equal(*before[0].FiredAt) ||
		!got[0].Since.Equal(before[0].Since) {
		t.Fatalf("after the takeover: %+v\nwant %+v", got, before)
	}
	clock.Advance(15 * time.Second)
	if again := next.EvaluateAlerts(); len(again) != 0 {
		t.Fatalf("the new leader fired again: %+v", again)
	}
	// A node comes back while no server evaluates: the new leader
	// resolves its alert at its first evaluation.
	name := before[0].Labels["node"]
	if err := next.RegisterNode(ctx, name, h100s(8), "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	if got := next.EvaluateAlerts(); len(got) != 1 || got[0].State != "resolved" || got[0].Labels["node"] != name {
		t.Fatalf("after %s came back: %+v, want it resolved", name, got)
	}
}

// endedTerm is a leadership term whose lease has run out: its store
// refuses every Txn, as package etcd's fenced store does.
type endedTerm struct{ st store.Store }

type fencedStore struct{ store.Store }

func (fencedStore) Txn(context.Context, store.Txn) (int64, error) { return 0, store.ErrFenced }

func (t endedTerm) Store() store.Store                           { return fencedStore{t.st} }
func (endedTerm) Done() <-chan struct{}                          { return nil }
func (endedTerm) Rev() int64                                     { return 1 }
func (endedTerm) Resign(context.Context) error                   { return nil }
func (endedTerm) String() string                                 { return "ended term" }
func (endedTerm) Campaign(context.Context, string) (Term, error) { return nil, errors.New("not used") }
func (endedTerm) Leader(context.Context) (string, error)         { return "", nil }
func (endedTerm) Observe(context.Context) <-chan string          { return nil }

// TestAlertsStoredInTerm: a server whose term ended while it evaluated
// does not overwrite the alerts the next leader stored.
func TestAlertsStoredInTerm(t *testing.T) {
	srv, clock := alertServer(t, "")
	ctx := t.Context()
	srv.EvaluateAlerts()
	if err := srv.saveAlerts(ctx); err != nil {
		t.Fatal(err)
	}
	stored := func() string {
		kv, err := srv.st.Get(ctx, keyAlerts)
		if err != nil {
			t.Fatal(err)
		}
		return string(kv.Value)
	}
	pending := stored()

	term := Term(endedTerm{srv.st})
	srv.cfg.Election = endedTerm{srv.st}
	clock.Advance(time.Minute)
	if fired := srv.EvaluateAlerts(); len(fired) == 0 {
		t.Fatal("nothing fired")
	}
	if err := srv.saveAlerts(ctx); !errors.Is(err, errNotLeading) {
		t.Errorf("save without a term: %v, want %v", err, errNotLeading)
	}
	srv.term.Store(&term)
	if err := srv.saveAlerts(ctx); !errors.Is(err, store.ErrFenced) {
		t.Errorf("save in an ended term: %v, want %v", err, store.ErrFenced)
	}
	if got := stored(); got != pending {
		t.Errorf("an ended term overwrote the stored alerts:\n%s\nwant\n%s", got, pending)
	}
}
