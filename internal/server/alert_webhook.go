package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	neturl "net/url"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
)

// Webhook delivery: each notice is one POST with a JSON wire.AlertNotice,
// tried up to webhookAttempts times with a timeout each and a doubling
// back-off between them. Notices wait in a bounded queue that one
// goroutine drains in order; when it is full a notice is dropped and
// logged, so a slow or dead receiver never holds up an evaluation, and
// evaluations never hold up a scheduling cycle.
const (
	webhookAttempts = 5
	webhookTimeout  = 10 * time.Second
	webhookBackoff  = time.Second // doubles after each failed attempt
	webhookQueue    = 64
)

type webhook struct {
	url     string
	shown   string // url without its query, for logs: a receiver's secret may sit there
	client  *http.Client
	log     *slog.Logger
	queue   chan wire.AlertNotice
	backoff time.Duration // first pause between attempts
}

func newWebhook(url string, log *slog.Logger) *webhook {
	shown := url
	if u, err := neturl.Parse(url); err == nil {
		shown = (&neturl.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	}
	return &webhook{url: url, shown: shown, client: &http.Client{Timeout: webhookTimeout}, log: log,
		queue: make(chan wire.AlertNotice, webhookQueue), backoff: webhookBackoff}
}

// enqueue queues n without waiting; a full queue drops it.
func (w *webhook) enqueue(n wire.AlertNotice) {
	select {
	case w.queue <- n:
	default:
		w.log.Error("alert webhook queue full; notice dropped", "alerts", len(n.Alerts))
	}
}

// run delivers queued notices until ctx ends.
func (w *webhook) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-w.queue:
			if err := w.deliver(ctx, n); err != nil && ctx.Err() == nil {
				w.log.Error("alert webhook failed; notice dropped", "url", w.shown, "alerts", len(n.Alerts), "err", err)
			}
		}
	}
}

// deliver POSTs n until the receiver answers 2xx, it answers a 4xx other
// than 408 and 429 (a retry would get the same answer), or the attempts
// are spent.
func (w *webhook) deliver(ctx context.Context, n wire.AlertNotice) error {
	body, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode alert notice: %w", err)
	}
	pause := w.backoff
	for attempt := 1; ; attempt++ {
		retry, err := w.post(ctx, body)
		if err == nil {
			w.log.Debug("alert webhook delivered", "url", w.shown, "alerts", len(n.Alerts), "attempt", attempt)
			return nil
		}
		if !retry || attempt == webhookAttempts {
			return fmt.Errorf("attempt %d: %w", attempt, err)
		}
		w.log.Warn("alert webhook attempt failed; retrying", "url", w.shown, "attempt", attempt, "in", pause, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause *= 2
	}
}

// post makes one attempt; retry says whether another may succeed.
func (w *webhook) post(ctx context.Context, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "allot-alerts/1")
	resp, err := w.client.Do(req)
	if err != nil {
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = fmt.Errorf("POST %s: %w", w.shown, ue.Err) // not ue's message, which has the query
		}
		return true, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return false, nil
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return true, fmt.Errorf("%s answered %s", w.shown, resp.Status)
	default:
		return false, fmt.Errorf("%s answered %s", w.shown, resp.Status)
	}
}
