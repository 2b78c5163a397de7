package demo

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Report is what a replica of the demo server measures over one report
// interval, and the JSON body it POSTs to the report URL (with
// "Authorization: Bearer TOKEN" when it has a token):
//
//	{"requests_per_sec": 212.5, "p95_ms": 48.2, "utilisation": 0.66, "replica": "ep-1.3"}
//
// The autoscaler's Sample is the sum of the replicas' rates, the largest of
// their p95s (or better, a p95 over all their requests) and the mean of
// their utilisations.
type Report struct {
	// RequestsPerSec is the requests that arrived in the interval, per
	// second: the offered load, not the completions, so that an overloaded
	// replica does not under-report its load.
	RequestsPerSec float64 `json:"requests_per_sec"`
	// P95Ms is the 95th percentile of the latency (queueing and service)
	// of the requests completed in the interval, in milliseconds; 0 when
	// none completed.
	P95Ms float64 `json:"p95_ms"`
	// Utilisation is the share of the slots' time spent serving, 0 to 1.
	Utilisation float64 `json:"utilisation"`
	// Replica names the replica: the job ID and attempt it runs as.
	Replica string `json:"replica"`
	// Port is the TCP port the server listens on, so that allot's
	// gateways can route to it (on its node's address); 0 when unknown.
	Port int `json:"port,omitempty"`
}

// maxLatencies bounds the latencies kept per interval; beyond it the
// interval's p95 is over its first maxLatencies requests.
const maxLatencies = 1 << 20

// ServeConfig is the demo server's behaviour.
type ServeConfig struct {
	ServiceTime time.Duration // what one request takes on a slot
	Concurrency int           // requests served at once; the rest queue
	Replica     string        // the name in reports
	// ReportURL, when set, receives a Report every ReportEvery, with
	// ReportToken as a bearer token when that is set.
	ReportURL   string
	ReportToken string
	ReportEvery time.Duration
	// ReportCA, when set, is the PEM of the certificates an https report
	// URL's certificate must chain to, instead of the system's roots.
	ReportCA string
	// Tokens, when set, turns a request's token counts (query context= and
	// generated=, as allot demo load --trace sends them) into its service
	// time, the batch being Concurrency; a request without them takes
	// ServiceTime.
	Tokens func(context, generated float64, batch int) time.Duration
}

// MaxTokens bounds the context= and generated= of a request.
const MaxTokens = 1 << 20

// Server is the demo inference server: an http.Handler answering
// /healthz and / (the "inference": a wait for a free slot, then the
// service time on it).
type Server struct {
	cfg    ServeConfig
	slots  chan struct{}
	client *http.Client // posts the reports

	port int // the port Run listens on, in reports

	mu        sync.Mutex // guards the measurements of the current interval below
	since     time.Time  // start of the interval
	arrivals  int
	latencies []float64     // of completed requests, ms
	busy      time.Duration // slot time spent serving
}

// NewServer returns a server for cfg.
func NewServer(cfg ServeConfig) (*Server, error) {
	switch {
	case cfg.ServiceTime < 0:
		return nil, errors.New("service time must not be negative")
	case cfg.Concurrency < 1:
		return nil, fmt.Errorf("concurrency must be at least 1, got %d", cfg.Concurrency)
	case cfg.ReportURL != "" && cfg.ReportEvery <= 0:
		return nil, errors.New("a report URL needs a report interval above 0")
	}
	s := &Server{cfg: cfg, slots: make(chan struct{}, cfg.Concurrency), since: time.Now(),
		client: &http.Client{Timeout: max(time.Second, cfg.ReportEvery)}}
	if cfg.ReportCA != "" {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM([]byte(cfg.ReportCA)) {
			return nil, errors.New("the report CA holds no PEM certificate")
		}
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		s.client.Transport = t
	}
	return s, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	case "/":
		s.infer(w, r)
	default:
		http.NotFound(w, r)
	}
}

// infer waits for a slot, holds it for the service time and answers with
// how long each part took.
func (s *Server) infer(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	service, err := s.serviceTime(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.arrivals++
	s.mu.Unlock()
	select {
	case s.slots <- struct{}{}:
	case <-r.Context().Done():
		return // the client left while queued
	}
	started := time.Now()
	if service > 0 { // a timer of 0 would still park the request until the timer fires
		t := time.NewTimer(service)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}
	<-s.slots
	done := time.Now()
	s.mu.Lock()
	s.busy += done.Sub(started)
	if len(s.latencies) < maxLatencies {
		s.latencies = append(s.latencies, float64(done.Sub(arrived))/float64(time.Millisecond))
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "{\"replica\":%q,\"queue_ms\":%.3f,\"service_ms\":%.3f}\n", s.cfg.Replica,
		float64(started.Sub(arrived))/float64(time.Millisecond), float64(done.Sub(started))/float64(time.Millisecond))
}

// serviceTime is what request r takes on a slot: ServiceTime, or what its
// token counts cost under cfg.Tokens. A count that is not an integer from 0
// to MaxTokens is an error naming it.
func (s *Server) serviceTime(r *http.Request) (time.Duration, error) {
	q := r.URL.Query()
	if s.cfg.Tokens == nil || (!q.Has("context") && !q.Has("generated")) {
		return s.cfg.ServiceTime, nil
	}
	var n [2]float64
	for i, name := range []string{"context", "generated"} {
		v, err := strconv.Atoi(q.Get(name))
		if err != nil || v < 0 || v > MaxTokens {
			return 0, fmt.Errorf("%s=%q: want a token count from 0 to %d", name, q.Get(name), MaxTokens)
		}
		n[i] = float64(v)
	}
	return s.cfg.Tokens(n[0], n[1], s.cfg.Concurrency), nil
}

// Measure returns the report of the interval since the last Measure (or
// NewServer) and starts the next one.
func (s *Server) Measure() Report {
	s.mu.Lock()
	now := time.Now()
	elapsed := now.Sub(s.since)
	arrivals, lat, busy := s.arrivals, s.latencies, s.busy
	s.since, s.arrivals, s.latencies, s.busy = now, 0, nil, 0
	s.mu.Unlock()
	rep := Report{Replica: s.cfg.Replica, P95Ms: percentile(lat, 0.95), Port: s.port}
	if sec := elapsed.Seconds(); sec > 0 {
		rep.RequestsPerSec = float64(arrivals) / sec
		rep.Utilisation = min(1, busy.Seconds()/(sec*float64(s.cfg.Concurrency)))
	}
	return rep
}

// percentile returns the q-quantile of v (nearest rank), 0 for none; it
// sorts v.
func percentile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[max(0, min(i, len(v)-1))]
}

// Run serves on ln until ctx is done, printing a Report every
// cfg.ReportEvery to out and posting it to cfg.ReportURL when set. A failed
// post is printed and the next one tried; the server goes on serving.
//
// The first report goes out at once, before any request: it tells the
// server the port, so that a gateway can route to the replica without
// waiting a whole interval.
func (s *Server) Run(ctx context.Context, ln net.Listener, out io.Writer) error {
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		s.port = a.Port
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if s.cfg.ReportURL != "" {
		if err := s.post(ctx, Report{Replica: s.cfg.Replica, Port: s.port}); err != nil {
			fmt.Fprintf(out, "report to %s: %v\n", s.cfg.ReportURL, err)
		}
	}
	var tick <-chan time.Time
	if s.cfg.ReportEvery > 0 {
		t := time.NewTicker(s.cfg.ReportEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case err := <-errc:
			return fmt.Errorf("serve: %w", err)
		case <-ctx.Done():
			shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(shut)
		case <-tick:
			rep := s.Measure()
			fmt.Fprintf(out, "requests/s %.1f  p95 %.1f ms  utilisation %.2f\n", rep.RequestsPerSec, rep.P95Ms, rep.Utilisation)
			if s.cfg.ReportURL != "" {
				if err := s.post(ctx, rep); err != nil {
					fmt.Fprintf(out, "report to %s: %v\n", s.cfg.ReportURL, err)
				}
			}
		}
	}
}

// post sends rep to the report URL as JSON.
func (s *Server) post(ctx context.Context, rep Report) error {
	body, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.ReportURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.cfg.ReportToken != "" {
		req.Header.Set("Authorization", "Bearer "+s.cfg.ReportToken)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}
