package api

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Connections. The server holds at most Limits.MaxConns of them. One is
// anonymous until a request on it carries a valid token, and one source
// address (an IPv4 address or an IPv6 /64) holds at most
// Limits.MaxConnsPerAddr anonymous connections. A connection that waits for
// its client (accepted with no request yet, idle between requests, or
// refused and about to close) may be evicted; one that serves a request may
// not. A new connection that finds its address at the cap takes the place
// of that address's anonymous connection that has waited longest; one that
// finds the server full takes the place of the connection that has waited
// longest, an anonymous one before an authenticated one, and one of the
// address holding the most anonymous connections first. Only when none
// waits is the new connection closed at once. So idle keep-alive
// connections, however many, never lock a new client out, and the agents
// of `allot up`, which share 127.0.0.1 with everything on the host, keep
// their connections once their first request is in: those no longer count
// against the address's cap and are evicted last.
//
// Requests do not keep a connection for ever either: once it is
// Limits.MaxConnAge old, its next response closes it (count, api.go).

// connTable tracks the open connections of one listener.
type connTable struct {
	net.Listener
	max, perAddr int
	now          func() time.Time

	mu    sync.Mutex                           // guards conns, anon and every trackedConn's fields marked so
	conns map[*trackedConn]struct{}            // every open connection
	anon  map[string]map[*trackedConn]struct{} // anonymous ones by source address

	open     prometheus.Gauge
	rejected prometheus.Counter
	evicted  prometheus.Counter
}

// trackedConn is one accepted connection.
type trackedConn struct {
	net.Conn
	t      *connTable
	addr   string    // source address, as the per-address cap counts it
	opened time.Time // when it was accepted
	once   sync.Once // gives the slot back

	// Guarded by t.mu:
	waiting bool      // no request is being served on it: it may be evicted
	since   time.Time // when it began to wait
	authed  bool      // a request on it carried a valid token
}

func newConnTable(ln net.Listener, l Limits, reg *prometheus.Registry) *connTable {
	return &connTable{Listener: ln, max: l.MaxConns, perAddr: l.MaxConnsPerAddr, now: time.Now,
		conns: map[*trackedConn]struct{}{}, anon: map[string]map[*trackedConn]struct{}{},
		open: register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "allot_http_connections_open",
			Help: "HTTP connections open now.",
		})),
		rejected: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "allot_http_connections_rejected_total",
			Help: "HTTP connections closed at once because --max-conns (or --max-conns-per-addr of their address) were open and serving requests.",
		})),
		evicted: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "allot_http_connections_evicted_total",
			Help: "Waiting HTTP connections closed to make room for a new one (--max-conns, --max-conns-per-addr).",
		}))}
}

// Accept returns the next connection there is room for, evicting a
// waiting one to make it; it closes at once those there is no room for.
func (t *connTable) Accept() (net.Conn, error) {
	for {
		c, err := t.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc := t.admit(c); tc != nil {
			return tc, nil
		}
		t.rejected.Inc()
		_ = c.Close()
	}
}

// admit tracks c, evicting a waiting connection when c's address is at its
// cap or the table is full; it returns nil when there is no room.
func (t *connTable) admit(c net.Conn) *trackedConn {
	now := t.now()
	tc := &trackedConn{Conn: c, t: t, addr: addrOf(c.RemoteAddr()), opened: now, waiting: true, since: now}
	t.mu.Lock()
	var victim *trackedConn
	switch {
	case len(t.anon[tc.addr]) >= t.perAddr:
		if victim = longestWaiting(t.anon[tc.addr], nil); victim == nil {
			t.mu.Unlock()
			return nil
		}
	case len(t.conns) >= t.max:
		victim = longestWaiting(t.anon[t.busiest()], nil)
		if victim == nil {
			victim = longestWaiting(t.conns, func(c *trackedConn) bool { return !c.authed })
		}
		if victim == nil {
			victim = longestWaiting(t.conns, nil)
		}
		if victim == nil {
			t.mu.Unlock()
			return nil
		}
	}
	if victim != nil {
		t.forget(victim)
	}
	t.conns[tc] = struct{}{}
	if t.anon[tc.addr] == nil {
		t.anon[tc.addr] = map[*trackedConn]struct{}{}
	}
	t.anon[tc.addr][tc] = struct{}{}
	t.mu.Unlock()
	t.open.Inc()
	if victim != nil {
		t.evicted.Inc()
		_ = victim.Close()
	}
	return tc
}

// longestWaiting returns the connection of set, among those ok accepts
// (nil: all), that has waited longest, or nil when none waits. t.mu held.
func longestWaiting(set map[*trackedConn]struct{}, ok func(*trackedConn) bool) *trackedConn {
	var best *trackedConn
	for c := range set {
		if c.waiting && (ok == nil || ok(c)) && (best == nil || c.since.Before(best.since)) {
			best = c
		}
	}
	return best
}

// busiest returns the address that holds the most anonymous connections.
// t.mu held.
func (t *connTable) busiest() string {
	addr, most := "", 0
	for a, set := range t.anon {
		if len(set) > most {
			addr, most = a, len(set)
		}
	}
	return addr
}

// forget takes c out of the table: its slot is free. t.mu held.
func (t *connTable) forget(c *trackedConn) {
	delete(t.conns, c)
	if m := t.anon[c.addr]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(t.anon, c.addr)
		}
	}
}

// Close closes the connection and gives its slot back.
func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.t.mu.Lock()
		c.t.forget(c)
		c.t.mu.Unlock()
		c.t.open.Dec()
	})
	return err
}

// CloseWrite lets net/http half-close the connection before it closes it
// after a refused body, as it does with a bare TCP connection.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// setWaiting notes whether c waits for its client (and so may be evicted).
func (c *trackedConn) setWaiting(waiting bool) {
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	if waiting && !c.waiting {
		c.since = c.t.now()
	}
	c.waiting = waiting
}

// authenticated notes that a request on c carried a valid token: c no
// longer counts against its address's cap and is evicted after the
// anonymous ones.
func (c *trackedConn) authenticated() {
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	if c.authed {
		return
	}
	c.authed = true
	if m := c.t.anon[c.addr]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(c.t.anon, c.addr)
		}
	}
}

// connState follows net/http's view of each connection: idle ones wait
// for their client, active ones serve a request.
func connState(c net.Conn, s http.ConnState) {
	tc := tracked(c)
	if tc == nil {
		return
	}
	switch s {
	case http.StateActive, http.StateHijacked:
		tc.setWaiting(false)
	case http.StateIdle:
		tc.setWaiting(true)
	}
}

// tracked returns the trackedConn under c (a TLS connection wraps it), or
// nil when there is none (httptest, or a listener not made by NewServer).
func tracked(c net.Conn) *trackedConn {
	for c != nil {
		switch v := c.(type) {
		case *trackedConn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

type connKey struct{}

// withConn puts the connection a request arrives on into its context
// (http.Server.ConnContext).
func withConn(ctx context.Context, c net.Conn) context.Context {
	if tc := tracked(c); tc != nil {
		return context.WithValue(ctx, connKey{}, tc)
	}
	return ctx
}

// connOf returns the connection r arrived on, or nil when it is not known.
func connOf(r *http.Request) *trackedConn {
	tc, _ := r.Context().Value(connKey{}).(*trackedConn)
	return tc
}

// addrOf is the source address a connection counts against: its IP
// address, or the /64 of an IPv6 address (one host's share).
func addrOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	return hostKey(a.String())
}

// hostKey is the address key of host:port (or of a bare host).
func hostKey(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
