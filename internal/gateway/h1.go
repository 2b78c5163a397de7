package gateway

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

// h1Transport speaks HTTP/1.1 to the replicas on kept-alive connections,
// each request in the goroutine that sends it: it writes the request,
// reads the answer's head and hands the connection to the answer's body,
// which puts it back when read to its end.
//
// Why not http.Transport: a connection of http.Transport has a goroutine
// that writes and one that reads, and a request passes between them and
// the caller over channels, three hand-overs that each wake a goroutine
// (often a thread) per request. On the two cores `allot bench gateway`
// measures, those wake-ups were a quarter of the gateway's CPU and what
// its tail waited for. Requests this transport does not carry the common
// way go to http.Transport (fallback): TLS, protocol upgrades and
// Expect: 100-continue.
//
// What http.Transport's reader also gave, this one does itself: a
// connection the replica closed while idle is found before it is reused
// (alive), and a request on a reused connection that the replica closed
// before answering anything is sent again on a new one when that is safe
// (no body, or one it can get again).
type h1Transport struct {
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle     int           // idle connections kept per replica
	idleTimeout time.Duration // an idle connection older than this is closed
	fallback    http.RoundTripper

	mu   sync.Mutex
	idle map[string][]*h1Conn // by host:port, the most recently used last
}

// h1Conn is one connection to a replica.
type h1Conn struct {
	c      net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	host   string
	idleAt time.Time
}

const h1Buffer = 4 << 10

func newH1Transport(maxIdle int, idleTimeout time.Duration, dial func(ctx context.Context, network, addr string) (net.Conn, error), fallback http.RoundTripper) *h1Transport {
	return &h1Transport{dial: dial, maxIdle: maxIdle, idleTimeout: idleTimeout, fallback: fallback, idle: map[string][]*h1Conn{}}
}

// errStale is a reused connection that the replica had closed: nothing of
// an answer came.
var errStale = errors.New("gateway: kept-alive connection closed by the replica before it answered")

func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" || req.Header.Get("Upgrade") != "" || strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		return t.fallback.RoundTrip(req)
	}
	ctx := req.Context()
	for {
		c, reused, err := t.conn(ctx, req.URL.Host)
		if err != nil {
			return nil, err
		}
		resp, err := t.exchange(ctx, c, req)
		if errors.Is(err, errStale) && reused && replayable(req) {
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

// replayable reports whether req may be sent again: it has no body to
// lose.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// exchange sends req on c and reads the head of its answer; the answer's
// body owns c from then on. A failure closes c.
func (t *h1Transport) exchange(ctx context.Context, c *h1Conn, req *http.Request) (*http.Response, error) {
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
	for {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			if (err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err)) && c.br.Buffered() == 0 {
				return fail(errStale)
			}
			return fail(err)
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			resp.Body.Close() // an interim answer (103 Early Hints): the final one follows
			continue
		}
		empty := resp.Body == http.NoBody || resp.ContentLength == 0
		resp.Body = &h1Body{rc: resp.Body, c: c, t: t, stop: stop, keep: !resp.Close && !req.Close, eof: empty}
		return resp, nil
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "read"
}

// conn returns an idle connection to host that is still open, or a new
// one (reused false).
func (t *h1Transport) conn(ctx context.Context, host string) (c *h1Conn, reused bool, err error) {
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
		if now.Sub(c.idleAt) <= t.idleTimeout && c.br.Buffered() == 0 && alive(c.c) {
			return c, true, nil
		}
		c.c.Close()
	}
	nc, err := t.dial(ctx, "tcp", host)
	if err != nil {
		return nil, false, err
	}
	return &h1Conn{c: nc, br: bufio.NewReaderSize(nc, h1Buffer), bw: bufio.NewWriterSize(nc, h1Buffer), host: host}, false, nil
}

// put keeps c for the next request to its host, or closes it when enough
// are kept.
func (t *h1Transport) put(c *h1Conn) {
	c.idleAt = time.Now()
	t.mu.Lock()
	if list := t.idle[c.host]; len(list) < t.maxIdle {
		t.idle[c.host] = append(list, c)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	c.c.Close()
}

// CloseIdleConnections closes the connections kept idle, as
// http.Transport's does.
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	all := t.idle
	t.idle = map[string][]*h1Conn{}
	t.mu.Unlock()
	for _, list := range all {
		for _, c := range list {
			c.c.Close()
		}
	}
	if f, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		f.CloseIdleConnections()
	}
}

// h1Body is an answer's body. Read to its end, its connection goes back
// to the transport; closed before, the connection is closed (reading the
// rest of a stream the caller no longer wants could take forever).
type h1Body struct {
	rc   io.ReadCloser
	c    *h1Conn
	t    *h1Transport
	stop func() bool
	keep bool // the connection may carry another request
	eof  bool
	done bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.done {
		return 0, errors.New("gateway: read of a closed body")
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *h1Body) Close() error {
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
