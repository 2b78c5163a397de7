package server

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/allot-dev/allot/internal/alert"
	"github.com/allot-dev/allot/internal/api/wire"
)

// DefaultAlertEvery is how often the built-in alerts are evaluated.
const DefaultAlertEvery = 15 * time.Second

// alertBook holds the built-in alerts' evaluator. The evaluator keeps the
// pending and firing alerts and the resolved ones of the last hour (at most
// alert.DefaultMaxResolved) in memory only: a restart forgets them, and a
// condition that still holds is pending again from the restart.
type alertBook struct {
	mu   sync.Mutex // guards ev
	ev   *alert.Evaluator
	hook *webhook // nil without Config.AlertWebhook
}

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

// evaluateAlertsEvery evaluates the alerts every Config.AlertEvery, and
// delivers webhook notices, until ctx ends.
func (s *Server) evaluateAlertsEvery(ctx context.Context) {
	if s.alerts.hook != nil {
		go s.alerts.hook.run(ctx)
	}
	t := time.NewTicker(s.cfg.AlertEvery)
	defer t.Stop()
	s.EvaluateAlerts()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.EvaluateAlerts()
		}
	}
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
