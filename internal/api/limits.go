package api

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Limits bound what one client can make the server hold: memory, time and
// connections (docs/api.md, "Limits"). A zero field takes its default.
type Limits struct {
	// MaxBody is the largest request body, in bytes (--max-body).
	MaxBody int64
	// BodyTimeout is how long a client may take to send a request's body
	// (--body-timeout). It runs from when the headers are read, only for
	// requests with a body: a long-poll GET is not cut short.
	BodyTimeout time.Duration
	// HeaderTimeout is how long a client may take to send a request's
	// headers (--header-timeout).
	HeaderTimeout time.Duration
	// IdleTimeout is how long a kept-alive connection may wait for its next
	// request (--idle-timeout).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header lines (--max-header-bytes).
	MaxHeaderBytes int
	// MaxConns caps the connections open at once (--max-conns); zero means
	// DefaultMaxConns or half the process's open-file limit, whichever is
	// lower.
	MaxConns int
	// UnauthRate is the sustained rate, per second, of requests with a
	// missing or unknown token from one source address (an IPv4 address or
	// an IPv6 /64) (--unauth-rate); negative means no limit.
	UnauthRate float64
	// UnauthBurst is how many such requests one address may make at once
	// (--unauth-burst).
	UnauthBurst int
}

// Defaults of Limits.
const (
	DefaultMaxBody        = 1 << 20
	DefaultBodyTimeout    = 30 * time.Second
	DefaultHeaderTimeout  = 5 * time.Second
	DefaultIdleTimeout    = 60 * time.Second
	DefaultMaxHeaderBytes = 32 << 10
	DefaultMaxConns       = 4096
	DefaultUnauthRate     = 5
	DefaultUnauthBurst    = 20
)

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	if l.MaxBody <= 0 {
		l.MaxBody = DefaultMaxBody
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = DefaultBodyTimeout
	}
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = DefaultHeaderTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
		if n := openFileLimit(); n > 0 {
			l.MaxConns = max(1, min(l.MaxConns, n/2))
		}
	}
	if l.UnauthRate == 0 {
		l.UnauthRate = DefaultUnauthRate
	}
	if l.UnauthBurst <= 0 {
		l.UnauthBurst = DefaultUnauthBurst
	}
	return l
}

// NewServer returns the HTTP server of the API (New(cfg)) with cfg.Limits
// applied, and ln wrapped so that at most Limits.MaxConns connections are
// open at once: a connection over the cap is closed as soon as it is
// accepted and counted in allot_http_connections_rejected_total. Serve the
// returned server on the returned listener.
func NewServer(cfg Config, ln net.Listener) (*http.Server, net.Listener) {
	cfg.Limits = cfg.Limits.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	l := cfg.Limits
	cl := &capListener{Listener: ln, slots: make(chan struct{}, l.MaxConns),
		open: register(cfg.Server.Registry(), prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "allot_http_connections_open",
			Help: "HTTP connections open now.",
		})),
		rejected: register(cfg.Server.Registry(), prometheus.NewCounter(prometheus.CounterOpts{
			Name: "allot_http_connections_rejected_total",
			Help: "HTTP connections closed at once because --max-conns were open.",
		}))}
	hs := &http.Server{
		Handler:           New(cfg),
		ReadHeaderTimeout: l.HeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	cfg.Logger.Info("api limits", "max_conns", l.MaxConns, "max_body", l.MaxBody, "body_timeout", l.BodyTimeout,
		"header_timeout", l.HeaderTimeout, "idle_timeout", l.IdleTimeout, "max_header_bytes", l.MaxHeaderBytes,
		"unauth_rate", l.UnauthRate, "unauth_burst", l.UnauthBurst)
	return hs, cl
}

// register registers c in reg, or returns the collector registered there
// before under the same name (a second API on one server).
func register[C prometheus.Collector](reg *prometheus.Registry, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(C); ok {
				return old
			}
		}
	}
	return c
}

// capListener accepts at most cap(slots) connections open at once; it
// closes any more as soon as it accepts them, so that a flood of
// connections cannot use up the process's file descriptors.
type capListener struct {
	net.Listener
	slots    chan struct{} // one element per open connection
	open     prometheus.Gauge
	rejected prometheus.Counter
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			l.open.Inc()
			return &cappedConn{Conn: c, l: l}, nil
		default:
			l.rejected.Inc()
			_ = c.Close()
		}
	}
}

// cappedConn gives its slot back when it is closed.
type cappedConn struct {
	net.Conn
	l    *capListener
	once sync.Once
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		<-c.l.slots
		c.l.open.Dec()
	})
	return err
}

// CloseWrite lets net/http half-close the connection before it closes it
// after a refused body, as it does with a bare TCP connection.
func (c *cappedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// source is where a request came from, for the limit on unauthenticated
// requests: its IP address, or the /64 of an IPv6 address (one host's
// share).
func source(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
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
