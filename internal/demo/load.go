package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// LoadConfig is a load test: requests to URL arriving as a Poisson process
// of rate RPS for Duration.
type LoadConfig struct {
	URL      string
	RPS      float64
	Duration time.Duration
	// Timeout bounds one request; zero means 10 s.
	Timeout time.Duration
	// MaxInFlight bounds the requests outstanding at once; an arrival
	// beyond it is counted as dropped rather than waited for, which would
	// turn the open loop into a closed one. Zero means 10,000.
	MaxInFlight int
	Seed        uint64 // of the arrival times
	// Trace, when not empty, replaces the Poisson arrivals: request i
	// arrives Trace[i].Gap after the one before and carries its token
	// counts in the query (context=, generated=), which allot demo serve
	// --gpu turns into its service time; the trace repeats until Duration
	// ends. RPS is then not read.
	Trace []TraceRequest
}

// TraceRequest is one request of a replayed trace.
type TraceRequest struct {
	Gap                time.Duration // since the request before
	Context, Generated int
}

// url is the URL of the i-th arrival.
func (cfg LoadConfig) url(i int) string {
	if len(cfg.Trace) == 0 {
		return cfg.URL
	}
	r := cfg.Trace[i%len(cfg.Trace)]
	sep := "?"
	if strings.Contains(cfg.URL, "?") {
		sep = "&"
	}
	return fmt.Sprintf("%s%scontext=%d&generated=%d", cfg.URL, sep, r.Context, r.Generated)
}

// LoadResult is what a load test measured.
type LoadResult struct {
	Sent, OK, Failed, Dropped int
	// AchievedRPS is the requests sent per second of the test's duration.
	AchievedRPS float64
	// Latencies of the requests answered 2xx.
	P50, P90, P95, P99, Max time.Duration
	FirstError              string // of the failed requests, if any
}

func (r LoadResult) String() string {
	s := fmt.Sprintf("sent %d (%.1f requests/s), ok %d, failed %d, dropped %d\nlatency p50 %s  p90 %s  p95 %s  p99 %s  max %s",
		r.Sent, r.AchievedRPS, r.OK, r.Failed, r.Dropped, ms(r.P50), ms(r.P90), ms(r.P95), ms(r.P99), ms(r.Max))
	if r.FirstError != "" {
		s += "\nfirst error: " + r.FirstError
	}
	return s
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

// Load runs the load test: open-loop arrivals, each a GET of cfg.URL that
// does not wait for the previous ones, so a slow server sees the queue grow
// as it would in production. It returns when the last arrival's request
// has ended (or timed out), or when ctx is done.
func Load(ctx context.Context, cfg LoadConfig) (LoadResult, error) {
	res, _, err := LoadLatencies(ctx, cfg)
	return res, err
}

// LoadLatencies is Load that also returns the latency of every request
// answered 2xx, in the order they ended.
func LoadLatencies(ctx context.Context, cfg LoadConfig) (LoadResult, []time.Duration, error) {
	switch {
	case cfg.URL == "":
		return LoadResult{}, nil, errors.New("no URL")
	case len(cfg.Trace) == 0 && (!(cfg.RPS > 0) || cfg.RPS > 1e6):
		return LoadResult{}, nil, fmt.Errorf("rate must be above 0 and at most 1,000,000 requests/s, got %g", cfg.RPS)
	case cfg.Duration <= 0:
		return LoadResult{}, nil, errors.New("duration must be above 0")
	}
	var span time.Duration
	for _, r := range cfg.Trace {
		if r.Gap < 0 {
			return LoadResult{}, nil, fmt.Errorf("trace: a gap of %s; want gaps of 0 or more", r.Gap)
		}
		span += r.Gap
	}
	if len(cfg.Trace) > 0 && span <= 0 {
		return LoadResult{}, nil, errors.New("trace: every request arrives at once; want a trace that spans some time")
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	maxInFlight := cfg.MaxInFlight
	if maxInFlight <= 0 {
		maxInFlight = 10_000
	}
	transport := &http.Transport{MaxIdleConns: maxInFlight, MaxIdleConnsPerHost: maxInFlight, IdleConnTimeout: 30 * time.Second}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: timeout}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex // guards res and lat
		res      LoadResult
		lat      []float64
		inFlight = make(chan struct{}, maxInFlight)
	)
	get := func(url string) {
		defer wg.Done()
		defer func() { <-inFlight }()
		start := time.Now()
		err := fetch(ctx, client, url)
		d := time.Since(start)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			res.Failed++
			if res.FirstError == "" {
				res.FirstError = err.Error()
			}
			return
		}
		res.OK++
		lat = append(lat, float64(d))
	}

	start := time.Now()
	end := start.Add(cfg.Duration)
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	next := start
	arrival := 0
loop:
	for ; ; arrival++ {
		if len(cfg.Trace) > 0 {
			next = next.Add(cfg.Trace[arrival%len(cfg.Trace)].Gap)
		} else {
			next = next.Add(time.Duration(rng.ExpFloat64() / cfg.RPS * float64(time.Second)))
		}
		if next.After(end) {
			break
		}
		if wait := time.Until(next); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				break loop
			}
		}
		select {
		case inFlight <- struct{}{}:
			mu.Lock()
			res.Sent++
			mu.Unlock()
			wg.Add(1)
			go get(cfg.url(arrival))
		default:
			mu.Lock()
			res.Dropped++
			mu.Unlock()
		}
	}
	wg.Wait()
	out := make([]time.Duration, len(lat))
	for i, v := range lat {
		out[i] = time.Duration(v)
	}
	return Combine([]LoadResult{res}, out, cfg.Duration), out, ctx.Err()
}

// Combine is the result of runs rs of a load together, lasting d in all:
// their counts added, the first error, and the percentiles of lat, the
// latencies of all their answered requests.
func Combine(rs []LoadResult, lat []time.Duration, d time.Duration) LoadResult {
	var out LoadResult
	for _, r := range rs {
		out.Sent += r.Sent
		out.OK += r.OK
		out.Failed += r.Failed
		out.Dropped += r.Dropped
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
	}
	if d > 0 {
		out.AchievedRPS = float64(out.Sent) / d.Seconds()
	}
	v := make([]float64, len(lat))
	for i, l := range lat {
		v[i] = float64(l)
	}
	q := func(p float64) time.Duration { return time.Duration(percentile(v, p)) }
	out.P50, out.P90, out.P95, out.P99, out.Max = q(0.50), q(0.90), q(0.95), q(0.99), q(1)
	return out
}

// fetch GETs url and reads the answer, failing on a status other than 2xx.
func fetch(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)); err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}
