package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Transport is an http.RoundTripper of HTTP/1.1 (see the package
// documentation). Its methods may be called from several goroutines.
type Transport struct {
	cfg Config

	mu   sync.Mutex
	idle map[string][]*conn // by host:port, the most recently used last
}

// Config is a Transport's.
type Config struct {
	// Dial opens a connection; nil is a net.Dialer's with a timeout of
	// 2 s. A failed dial is its error as Dial returned it (a
	// *net.OpError of Op "dial" for net.Dialer's), so that a caller can
	// tell that nothing was sent.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxIdlePerHost is how many idle connections are kept per host;
	// 0 means 64.
	MaxIdlePerHost int
	// IdleTimeout closes a connection idle for longer; 0 means 90 s.
	IdleTimeout time.Duration
	// Fallback carries what this Transport does not (TLS, protocol
	// upgrades, Expect: 100-continue); nil is an http.Transport that
	// never goes through $HTTP_PROXY and asks for no compression.
	Fallback http.RoundTripper
}

// New returns a Transport of cfg, its zero fields set to their defaults.
func New(cfg Config) *Transport {
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	if cfg.MaxIdlePerHost <= 0 {
		cfg.MaxIdlePerHost = 64
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 90 * time.Second
	}
	if cfg.Fallback == nil {
		cfg.Fallback = &http.Transport{
			DialContext:         cfg.Dial,
			MaxIdleConnsPerHost: cfg.MaxIdlePerHost,
			IdleConnTimeout:     cfg.IdleTimeout,
			DisableCompression:  true,
		}
	}
	return &Transport{cfg: cfg, idle: map[string][]*conn{}}
}

// conn is one kept-alive connection.
type conn struct {
	c      net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	host   string
	idleAt time.Time
}

const bufferSize = 4 << 10

// ErrStale is a request on a reused connection that the server closed
// before it answered anything, which could not be sent again (its body
// is gone): the server may or may not have seen it.
var ErrStale = errors.New("h1: kept-alive connection closed by the server before it answered")

func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" || req.Header.Get("Upgrade") != "" || strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		return t.cfg.Fallback.RoundTrip(req)
	}
	ctx := req.Context()
	for {
		c, reused, err := t.get(ctx, req.URL.Host)
		if err != nil {
			return nil, err
		}
		resp, err := t.exchange(ctx, c, req)
		if errors.Is(err, ErrStale) && reused && replayable(req) {
			if req.GetBody != nil {
				if req.Body, err = req.GetBody(); err != nil {
					return nil, err
				}
			}
			continue // on another connection, a new one when none is idle
		}
		return resp, err
	}
}

// replayable reports whether req may be sent again, as http.Transport
// decides: its method is idempotent (or it carries an idempotency key) and
// it has no body to lose. The server may have acted on it before the
// connection went.
func replayable(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
	default:
		if _, ok := req.Header["Idempotency-Key"]; !ok {
			return false
		}
	}
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// exchange sends req on c and reads the head of its answer; the answer's
// body owns c from then on. A failure closes c.
func (t *Transport) exchange(ctx context.Context, c *conn, req *http.Request) (*http.Response, error) {
	// The caller leaving ends the exchange: a deadline in the past fails
	// whatever waits on the connection.
	stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		c.c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if err := req.Write(c.bw); err != nil {
		return fail(err)
	}
	if err := c.bw.Flush(); err != nil {
		return fail(err)
	}
	// Not a byte of an answer came: the connection was gone (a partial
	// answer is an error of its own, never sent again).
	if _, err := c.br.Peek(1); err != nil && (err == io.EOF || isReset(err)) {
		return fail(ErrStale)
	}
	for {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return fail(err)
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			resp.Body.Close() // an interim answer (103 Early Hints): the final one follows
			continue
		}
		empty := resp.Body == http.NoBody || resp.ContentLength == 0
		resp.Body = &body{rc: resp.Body, c: c, t: t, stop: stop, keep: !resp.Close && !req.Close, eof: empty}
		return resp, nil
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "read"
}

// get returns an idle connection to host that is still open, or a new
// one (reused false).
func (t *Transport) get(ctx context.Context, host string) (c *conn, reused bool, err error) {
	now := time.Now()
	for {
		t.mu.Lock()
		list := t.idle[host]
		if len(list) == 0 {
			t.mu.Unlock()
			break
		}
		c = list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[host] = list[:len(list)-1]
		t.mu.Unlock()
		if now.Sub(c.idleAt) <= t.cfg.IdleTimeout && c.br.Buffered() == 0 && alive(c.c) {
			return c, true, nil
		}
		c.c.Close()
	}
	nc, err := t.cfg.Dial(ctx, "tcp", host)
	if err != nil {
		return nil, false, err
	}
	return &conn{c: nc, br: bufio.NewReaderSize(nc, bufferSize), bw: bufio.NewWriterSize(nc, bufferSize), host: host}, false, nil
}

// put keeps c for the next request to its host, or closes it when enough
// are kept.
func (t *Transport) put(c *conn) {
	c.idleAt = time.Now()
	t.mu.Lock()
	if list := t.idle[c.host]; len(list) < t.cfg.MaxIdlePerHost {
		t.idle[c.host] = append(list, c)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	c.c.Close()
}

// CloseIdleConnections closes the connections kept idle, as
// http.Transport's does.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	all := t.idle
	t.idle = map[string][]*conn{}
	t.mu.Unlock()
	for _, list := range all {
		for _, c := range list {
			c.c.Close()
		}
	}
	if f, ok := t.cfg.Fallback.(interface{ CloseIdleConnections() }); ok {
		f.CloseIdleConnections()
	}
}

// body is an answer's body. Read to its end, its connection goes back
// to the transport; closed before, the connection is closed (reading the
// rest of a stream the caller no longer wants could take forever).
type body struct {
	rc   io.ReadCloser
	c    *conn
	t    *Transport
	stop func() bool
	keep bool // the connection may carry another request
	eof  bool
	done bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.done {
		return 0, errors.New("h1: read of a closed body")
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *body) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	// stop is false when the caller left and the deadline already struck:
	// the connection is spoiled.
	if stopped := b.stop(); b.eof && b.keep && stopped {
		b.t.put(b.c)
		return nil
	}
	return b.c.c.Close()
}
