package api

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
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
	// MaxConnsPerAddr caps the anonymous connections (no request with a
	// valid token on them yet) of one source address
	// (--max-conns-per-addr); zero means half of MaxConns. conns.go says
	// how a new connection makes room.
	MaxConnsPerAddr int
	// MaxConnAge is how old a kept-alive connection may grow: the first
	// response after it closes the connection (--conn-max-age).
	MaxConnAge time.Duration
	// UnauthRate is the sustained rate, per second, of requests with a
	// missing or unknown token from one source address (an IPv4 address or
	// an IPv6 /64) (--unauth-rate); negative means no limit.
	UnauthRate float64
	// UnauthBurst is how many such requests one address may make at once
	// (--unauth-burst).
	UnauthBurst int
	// JobRate is the sustained rate, per second, of jobs one tenant (or
	// the admin) may send in batches, dry runs included (--job-rate): a
	// batch takes one from this budget per job, besides its request from
	// the request rate; negative means no limit.
	JobRate float64
	// JobBurst is how many jobs of batches a tenant may send at once
	// (--job-burst); a batch larger than it waits for a full budget.
	JobBurst int
	// AuditRate is the sustained rate, per second, of a tenant's requests
	// that each write an audit record (auditedWrites: reservations created
	// and deleted, quota requests) (--audit-rate); negative means no
	// limit.
	AuditRate float64
	// AuditBurst is how many such requests a tenant may make at once
	// (--audit-burst).
	AuditBurst int
	// MaxDryRuns caps the dry runs (dry_run=true, of a job or a batch) one
	// tenant may have running at once (--max-dry-runs).
	MaxDryRuns int
}

// Defaults of Limits.
const (
	DefaultMaxBody        = 1 << 20
	DefaultBodyTimeout    = 30 * time.Second
	DefaultHeaderTimeout  = 5 * time.Second
	DefaultIdleTimeout    = 60 * time.Second
	DefaultMaxHeaderBytes = 32 << 10
	DefaultMaxConns       = 4096
	DefaultMaxConnAge     = 10 * time.Minute
	DefaultUnauthRate     = 5
	DefaultUnauthBurst    = 20
	DefaultJobRate        = 100
	DefaultJobBurst       = 1000 // server.MaxBatch: a full batch when the budget is full
	DefaultMaxDryRuns     = 2
	DefaultAuditRate      = 1
	DefaultAuditBurst     = 20
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
	if l.MaxConnsPerAddr <= 0 {
		l.MaxConnsPerAddr = max(1, l.MaxConns/2)
	}
	l.MaxConnsPerAddr = min(l.MaxConnsPerAddr, l.MaxConns)
	if l.MaxConnAge <= 0 {
		l.MaxConnAge = DefaultMaxConnAge
	}
	if l.UnauthRate == 0 {
		l.UnauthRate = DefaultUnauthRate
	}
	if l.UnauthBurst <= 0 {
		l.UnauthBurst = DefaultUnauthBurst
	}
	if l.JobRate == 0 {
		l.JobRate = DefaultJobRate
	}
	if l.JobBurst <= 0 {
		l.JobBurst = DefaultJobBurst
	}
	if l.MaxDryRuns <= 0 {
		l.MaxDryRuns = DefaultMaxDryRuns
	}
	if l.AuditRate == 0 {
		l.AuditRate = DefaultAuditRate
	}
	if l.AuditBurst <= 0 {
		l.AuditBurst = DefaultAuditBurst
	}
	return l
}

// NewServer returns the HTTP server of the API (New(cfg)) with cfg.Limits
// applied, and ln wrapped so that at most Limits.MaxConns connections are
// open at once, and Limits.MaxConnsPerAddr anonymous ones of one address
// (conns.go): a new connection evicts one that waits for its client, or is
// closed as soon as it is accepted when none waits (counted in
// allot_http_connections_rejected_total). Serve the returned server on the
// returned listener.
func NewServer(cfg Config, ln net.Listener) (*http.Server, net.Listener) {
	cfg.Limits = cfg.Limits.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	l := cfg.Limits
	cl := newConnTable(ln, l, cfg.Server.Registry())
	hs := &http.Server{
		ConnState:         connState,
		ConnContext:       withConn,
		Handler:           New(cfg),
		ReadHeaderTimeout: l.HeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	cfg.Logger.Info("api limits", "max_conns", l.MaxConns, "max_conns_per_addr", l.MaxConnsPerAddr, "conn_max_age", l.MaxConnAge, "max_body", l.MaxBody, "body_timeout", l.BodyTimeout,
		"header_timeout", l.HeaderTimeout, "idle_timeout", l.IdleTimeout, "max_header_bytes", l.MaxHeaderBytes,
		"unauth_rate", l.UnauthRate, "unauth_burst", l.UnauthBurst, "job_rate", l.JobRate, "job_burst", l.JobBurst, "max_dry_runs", l.MaxDryRuns,
		"audit_rate", l.AuditRate, "audit_burst", l.AuditBurst)
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

// source is where a request came from, for the limit on unauthenticated
// requests: its IP address, or the /64 of an IPv6 address (one host's
// share).
func source(r *http.Request) string { return hostKey(r.RemoteAddr) }
