package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/allot-dev/allot/internal/alert"
	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/store"
)

// DefaultAlertEvery is how often the built-in alerts are evaluated.
const DefaultAlertEvery = 15 * time.Second

// alertBook holds the built-in alerts' evaluator. The evaluator keeps the
// pending and firing alerts and the resolved ones of the last hour (at most
// alert.DefaultMaxResolved) in memory; the leader also stores them
// (keyAlerts) whenever an alert starts, fires or resolves, and a server
// that takes the lead, or restarts, goes on from what was stored: an alert
// that was firing is not fired, nor sent to the webhook, a second time.
type alertBook struct {
	mu    sync.Mutex // guards ev and saved
	ev    *alert.Evaluator
	hook  *webhook // nil without Config.AlertWebhook
	saved string   // the states last stored (alertStates)
}

// keyAlerts holds the built-in alerts as the leader last stored them.
const keyAlerts = "/alerts/state"

func newAlertBook(cfg Config, s *Server) *alertBook {
	b := &alertBook{ev: alert.New(alert.Rules, alert.Options{For: cfg.AlertFor})}
	if cfg.AlertWebhook != "" {
		b.hook = newWebhook(cfg.AlertWebhook, s.log)
	}
	return b
}

// EvaluateAlerts evaluates the built-in alerts over the values /metrics
// shows now, logs each alert that starts firing or resolves, and queues
// those for the webhook (never waiting for it). It returns the
// transitions.
func (s *Server) EvaluateAlerts() []wire.Alert {
	families, err := s.reg.Gather()
	if err != nil {
		s.log.Warn("gather metrics for alerts", "err", err) // a partial gather still evaluates
	}
	values := alertValues(families)
	now := s.clock.Now()
	s.alerts.mu.Lock()
	changed := s.alerts.ev.Evaluate(values, now)
	s.alerts.mu.Unlock()
	out := make([]wire.Alert, len(changed))
	for i, a := range changed {
		out[i] = wireAlert(a)
		attrs := []any{"alert", a.Name, "severity", a.Severity, "value", a.Value, "since", a.Since, "summary", a.Summary}
		for k, v := range a.Labels {
			attrs = append(attrs, k, v)
		}
		if a.State == alert.Firing {
			s.log.Warn("alert firing", attrs...)
		} else {
			s.log.Info("alert resolved", attrs...)
		}
	}
	if len(out) > 0 && s.alerts.hook != nil {
		s.alerts.hook.enqueue(wire.AlertNotice{Version: 1, Source: "allot", URL: s.cfg.URL, SentAt: now, Alerts: out})
	}
	return out
}

// Alerts returns the firing and pending built-in alerts, then those
// resolved in the last hour, newest first.
func (s *Server) Alerts() []wire.Alert {
	s.alerts.mu.Lock()
	all := s.alerts.ev.Alerts()
	s.alerts.mu.Unlock()
	out := make([]wire.Alert, len(all))
	for i, a := range all {
		out[i] = wireAlert(a)
	}
	return out
}

// evaluateAlertsEvery goes on from the stored alerts, then evaluates the
// alerts every Config.AlertEvery, storing them when one starts, fires or
// resolves, and delivers webhook notices, until ctx ends.
func (s *Server) evaluateAlertsEvery(ctx context.Context) {
	if s.alerts.hook != nil {
		go s.alerts.hook.run(ctx)
	}
	if err := s.restoreAlerts(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn("stored alerts not read; evaluating afresh", "err", err)
	}
	t := time.NewTicker(s.cfg.AlertEvery)
	defer t.Stop()
	for {
		s.EvaluateAlerts()
		if err := s.saveAlerts(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("alerts not stored", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// restoreAlerts sets the evaluator's alerts to those stored; none stored
// leaves it as it is.
func (s *Server) restoreAlerts(ctx context.Context) error {
	kv, err := s.st.Get(ctx, keyAlerts)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var alerts []alert.Alert
	if err := json.Unmarshal(kv.Value, &alerts); err != nil {
		return fmt.Errorf("decode %s: %w", keyAlerts, err)
	}
	s.alerts.mu.Lock()
	defer s.alerts.mu.Unlock()
	s.alerts.ev.Restore(alerts)
	s.alerts.saved = alertStates(alerts)
	return nil
}

// saveAlerts stores the alerts when one started, fired or resolved since
// they were last stored, in the current term (planStore): after the term
// ended it writes nothing and fails.
func (s *Server) saveAlerts(ctx context.Context) error {
	s.alerts.mu.Lock()
	alerts, saved := s.alerts.ev.Alerts(), s.alerts.saved
	s.alerts.mu.Unlock()
	states := alertStates(alerts)
	if states == saved {
		return nil
	}
	val, err := json.Marshal(alerts)
	if err != nil {
		return fmt.Errorf("encode alerts: %w", err)
	}
	// Fenced on the term: a server whose lease ran out while it evaluated
	// must not overwrite what the next leader stored.
	st, err := s.planStore()
	if err != nil {
		return err
	}
	if _, err := st.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp(keyAlerts, val)}}); err != nil {
		return err
	}
	s.alerts.mu.Lock()
	s.alerts.saved = states
	s.alerts.mu.Unlock()
	return nil
}

// alertStates is what of alerts makes them worth storing again: each
// alert's name, labels, state and times, not the values that change at
// every evaluation.
func alertStates(alerts []alert.Alert) string {
	var b strings.Builder
	for _, a := range alerts {
		fmt.Fprintf(&b, "%s %v %s %d %d %d\n", a.Name, a.Labels, a.State, a.Since.UnixNano(), a.FiredAt.UnixNano(), a.ResolvedAt.UnixNano())
	}
	return b.String()
}

func wireAlert(a alert.Alert) wire.Alert {
	w := wire.Alert{Name: a.Name, Severity: a.Severity, State: string(a.State), Labels: a.Labels, Value: a.Value,
		Summary: a.Summary, Since: a.Since.UTC()}
	if !a.FiredAt.IsZero() {
		t := a.FiredAt.UTC()
		w.FiredAt = &t
	}
	if !a.ResolvedAt.IsZero() {
		t := a.ResolvedAt.UTC()
		w.ResolvedAt = &t
	}
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	return w
}

// alertValues flattens gathered metric families into the alert package's
// Values, as /metrics would print them: a histogram becomes NAME_bucket
// (cumulative, with "le" up to "+Inf"), NAME_count and NAME_sum.
func alertValues(families []*dto.MetricFamily) alert.Values {
	v := alert.Values{}
	for _, f := range families {
		name := f.GetName()
		for _, m := range f.GetMetric() {
			labels := make([]string, 0, 2*len(m.GetLabel())+2)
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName(), l.GetValue())
			}
			switch {
			case m.Gauge != nil:
				v.Add(name, m.GetGauge().GetValue(), labels...)
			case m.Counter != nil:
				v.Add(name, m.GetCounter().GetValue(), labels...)
			case m.Untyped != nil:
				v.Add(name, m.GetUntyped().GetValue(), labels...)
			case m.Histogram != nil:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					if math.IsInf(b.GetUpperBound(), 1) {
						continue // added below from the count
					}
					v.Add(name+"_bucket", float64(b.GetCumulativeCount()), append(labels, "le", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64))...)
				}
				v.Add(name+"_bucket", float64(h.GetSampleCount()), append(labels, "le", "+Inf")...)
				v.Add(name+"_count", float64(h.GetSampleCount()), labels...)
				v.Add(name+"_sum", h.GetSampleSum(), labels...)
			}
		}
	}
	return v
}
