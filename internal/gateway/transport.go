package gateway

import (
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/allot-dev/allot/internal/latency"
)

// roundTripper sends a request to a replica of its endpoint: it picks the
// replica, retries a connection that failed before anything was sent on
// another one, and measures the request.
type roundTripper struct{ g *Gateway }

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	g := t.g
	st := stateOf(req)
	var tried []*replica
	for {
		start := time.Now()
		r, noneFree := g.pick(st.ep, tried, start.UnixNano())
		if r == nil {
			st.noneFree = noneFree
			return nil, errNoReplica
		}
		// The request and its URL are the proxy's own copies, made for
		// this request alone: pointing them at the replica costs no copy.
		req.URL.Host = r.addr
		r.inFlight.Add(1)
		r.m.inFlight.Inc()
		resp, err := g.base.RoundTrip(req)
		if err != nil {
			r.inFlight.Add(-1)
			r.m.inFlight.Dec()
			if notSent(err) && !st.tooLarge.Load() {
				// Nothing reached the replica: another may take the
				// request, and this one waits for its readiness check.
				r.down()
				g.log.Info("gateway: replica unreachable, trying another", "endpoint", r.endpoint, "replica", r.job, "err", err)
				tried = append(tried, r)
				if len(tried) <= g.cfg.Retries {
					continue
				}
			}
			if st.tooLarge.Load() {
				return nil, err // the caller's fault, not the replica's
			}
			if st.Err() != nil {
				// The caller left: what it waited counts as a latency it
				// saw, not as the replica's failure.
				r.finish(time.Since(start), 0, false)
				return nil, err
			}
			r.finish(time.Since(start), 0, true)
			st.replica = r
			return nil, err
		}
		st.out = measuredBody{rc: resp.Body, r: r, start: start, ttfb: time.Since(start), failed: resp.StatusCode >= 500, ctx: st}
		resp.Body = &st.out
		return resp, nil
	}
}

// notSent reports whether err says the connection failed before the
// request was written: the dial.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// down takes r out of rotation until its readiness check passes again.
func (r *replica) down() {
	r.downTill.Store(time.Now().Add(downFor).UnixNano())
	r.ready.Store(false)
}

// interval is what a replica did since the last report.
type interval struct {
	requests, errors uint64
	lat, ttfb        latency.Histogram
}

// finish counts one request that ended after whole (and its first byte
// after ttfb; 0 when it never came).
func (r *replica) finish(whole, ttfb time.Duration, failed bool) {
	r.mu.Lock()
	r.stats.requests++
	r.stats.lat.Add(whole)
	if ttfb > 0 {
		r.stats.ttfb.Add(ttfb)
	}
	if failed {
		r.stats.errors++
	}
	r.mu.Unlock()
	r.m.requests.Inc()
	if failed {
		r.m.errors.Inc()
	}
	r.m.latency.Observe(whole.Seconds())
	if ttfb > 0 {
		r.m.firstByte.Observe(ttfb.Seconds())
	}
}

// take returns the interval's counts and starts the next.
func (r *replica) take() interval {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.stats
	r.stats = interval{}
	return out
}

// measuredBody is a replica's response body: when the caller has read it
// (or the proxy closes it), the request ends.
type measuredBody struct {
	rc          io.ReadCloser
	r           *replica
	start       time.Time
	ttfb        time.Duration
	failed      bool
	closed      atomic.Bool
	readFailure bool
	ctx         context.Context // the request's: a read that failed because the caller left is not the replica's failure
}

func (b *measuredBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		b.readFailure = true
	}
	return n, err
}

func (b *measuredBody) Close() error {
	err := b.rc.Close()
	if b.closed.CompareAndSwap(false, true) {
		b.r.inFlight.Add(-1)
		b.r.m.inFlight.Dec()
		b.r.finish(time.Since(b.start), b.ttfb, b.failed || (b.readFailure && b.ctx.Err() == nil))
	}
	return err
}

// limitedBody is a request body that fails past its limit, marking the
// request too large so that the error handler answers 413.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
	st   *state
}

var errTooLarge = errors.New("gateway: request body over the limit")

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		b.st.tooLarge.Store(true)
		return 0, errTooLarge
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// slogLogger adapts the proxy's log to slog, at warn.
func slogLogger(l *slog.Logger) *log.Logger {
	return slog.NewLogLogger(l.Handler(), slog.LevelWarn)
}
