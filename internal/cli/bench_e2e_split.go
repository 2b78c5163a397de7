package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/server"
)

// Where the server's cycles spent their time during a bench e2e run: the
// server's allot_cycle_phase_seconds histograms (docs/metrics.md) read from
// its /metrics before and after the measured part, and the difference
// summarised per phase. The same scrapes give the server process's CPU time
// and resident memory, which a bench driving a server in another process
// cannot read from its own.

// phaseFigures summarise one phase over the cycles of a run.
type phaseFigures struct {
	// Count is how many cycle attempts reached the phase.
	Count uint64 `json:"count"`
	// MeanMs is exact (the histogram's sum over its count); P50Ms and
	// P99Ms are read from its buckets, interpolated within the bucket as
	// Prometheus' histogram_quantile does (buckets 1.5 times apart: within
	// about a quarter of the true figure).
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
}

// histogram is one series of a Prometheus histogram: cumulative counts by
// upper bound (ascending, +Inf last), sum and count.
type histogram struct {
	le, cum    []float64
	sum, count float64
}

// serverScrape is what bench e2e reads of one GET /metrics.
type serverScrape struct {
	phases       map[string]*histogram // allot_cycle_phase_seconds, by phase
	cycles       float64               // allot_cycle_duration_seconds_count
	cpuS, rssMiB float64               // process_cpu_seconds_total, process_resident_memory_bytes
	hasProcess   bool                  // the process_* series were there
}

// scrapeServer reads GET url/metrics with token.
func scrapeServer(ctx context.Context, c *http.Client, url, token string) (serverScrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	if err != nil {
		return serverScrape{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return serverScrape{}, fmt.Errorf("read /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return serverScrape{}, fmt.Errorf("read /metrics: %s", resp.Status)
	}
	s, err := readScrape(resp.Body)
	if err != nil {
		return serverScrape{}, fmt.Errorf("read /metrics: %w", err)
	}
	return s, nil
}

// readScrape reads the series bench e2e needs from Prometheus' text
// format and ignores the rest.
func readScrape(r io.Reader) (serverScrape, error) {
	const phases = "allot_cycle_phase_seconds"
	s := serverScrape{phases: map[string]*histogram{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.HasPrefix(line, phases) && !strings.HasPrefix(line, "allot_cycle_duration_seconds_count") &&
			!strings.HasPrefix(line, "process_") {
			continue
		}
		name, labels, v, err := parseSample(line)
		if err != nil {
			return serverScrape{}, fmt.Errorf("line %d: %w", n, err)
		}
		switch name {
		case "allot_cycle_duration_seconds_count":
			s.cycles = v
		case "process_cpu_seconds_total":
			s.cpuS, s.hasProcess = v, true
		case "process_resident_memory_bytes":
			s.rssMiB = v / (1 << 20)
		case phases + "_bucket", phases + "_sum", phases + "_count":
			h := s.phases[labels["phase"]]
			if h == nil {
				h = &histogram{}
				s.phases[labels["phase"]] = h
			}
			switch name {
			case phases + "_sum":
				h.sum = v
			case phases + "_count":
				h.count = v
			default:
				le, err := strconv.ParseFloat(labels["le"], 64)
				if err != nil {
					return serverScrape{}, fmt.Errorf("line %d: bucket bound %q: %w", n, labels["le"], err)
				}
				h.le, h.cum = append(h.le, le), append(h.cum, v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return serverScrape{}, err
	}
	for p, h := range s.phases {
		if !sort.Float64sAreSorted(h.le) || len(h.le) == 0 || !math.IsInf(h.le[len(h.le)-1], 1) {
			return serverScrape{}, fmt.Errorf("phase %s: buckets not ascending to +Inf", p)
		}
	}
	return s, nil
}

// cycleSplit returns, for each phase of server.CyclePhases, what the
// cycles between the two scrapes spent in it; an error when the server
// exports no phases (one older than the bench).
func cycleSplit(before, after serverScrape) (map[string]phaseFigures, error) {
	out := make(map[string]phaseFigures, len(server.CyclePhases))
	for _, p := range server.CyclePhases {
		a, b := after.phases[p], before.phases[p]
		if a == nil {
			return nil, fmt.Errorf("the server's /metrics has no allot_cycle_phase_seconds{phase=%q}", p)
		}
		d := histogram{le: a.le, cum: slices.Clone(a.cum), sum: a.sum, count: a.count}
		if b != nil {
			if len(b.le) != len(a.le) {
				return nil, fmt.Errorf("phase %s: the buckets changed between scrapes", p)
			}
			for i := range d.cum {
				d.cum[i] -= b.cum[i]
			}
			d.sum, d.count = d.sum-b.sum, d.count-b.count
		}
		f := phaseFigures{Count: uint64(max(d.count, 0))}
		if d.count > 0 {
			f.MeanMs = round3(d.sum / d.count * 1000)
			f.P50Ms, f.P99Ms = round3(d.quantile(0.50)*1000), round3(d.quantile(0.99)*1000)
		}
		out[p] = f
	}
	return out, nil
}

// quantile estimates the q-quantile of h's observations: linear within
// the bucket that holds it; the highest finite bound when it falls in the
// +Inf bucket.
func (h *histogram) quantile(q float64) float64 {
	total := h.cum[len(h.cum)-1]
	if total <= 0 {
		return 0
	}
	rank := q * total
	i := sort.Search(len(h.cum), func(i int) bool { return h.cum[i] >= rank })
	if i >= len(h.le)-1 { // the +Inf bucket
		if len(h.le) < 2 {
			return 0
		}
		return h.le[len(h.le)-2]
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = h.le[i-1], h.cum[i-1]
	}
	in := h.cum[i] - below
	if in <= 0 {
		return h.le[i]
	}
	return lower + (h.le[i]-lower)*(rank-below)/in
}

// parseSample reads one sample line of Prometheus' text format: the metric
// name, its labels and its value (a timestamp after the value is ignored).
func parseSample(line string) (name string, labels map[string]string, value float64, err error) {
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return "", nil, 0, fmt.Errorf("no metric name in %q", clipText(line))
	}
	name, rest := line[:i], line[i:]
	labels = map[string]string{}
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " ,")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			k, v, ok := strings.Cut(rest, `="`)
			if !ok || k == "" || strings.ContainsAny(k, `{}," `) {
				return "", nil, 0, fmt.Errorf("bad label in %q", clipText(line))
			}
			var val strings.Builder
			j := 0
			for ; j < len(v) && v[j] != '"'; j++ {
				if v[j] == '\\' && j+1 < len(v) {
					j++
					switch v[j] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(v[j])
					}
					continue
				}
				val.WriteByte(v[j])
			}
			if j >= len(v) {
				return "", nil, 0, fmt.Errorf("unterminated label value in %q", clipText(line))
			}
			labels[k] = val.String()
			rest = v[j+1:]
		}
	}
	fields := strings.Fields(rest)
	if len(fields) < 1 || len(fields) > 2 {
		return "", nil, 0, fmt.Errorf("want a value after the name in %q", clipText(line))
	}
	value, err = strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", nil, 0, errors.Join(fmt.Errorf("value of %s", name), err)
	}
	return name, labels, value, nil
}

func clipText(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:80] + "…"
}

// round3 rounds to three decimals (microseconds of a figure in ms).
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// settledScrape scrapes url until the cycles that committed since before
// have ended, for at most two seconds: the jobs a cycle commits are seen
// running (through the watch) before the cycle publishes and is counted,
// and a scrape between the two would split a cycle that is not over.
func settledScrape(ctx context.Context, c *http.Client, url, token string, before serverScrape) (serverScrape, error) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		s, err := scrapeServer(ctx, c, url, token)
		if err != nil || cyclesEnded(before, s) || time.Now().After(deadline) {
			return s, err
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// cyclesEnded reports whether every cycle that committed by after had
// published, and one that committed since before was counted as ended.
func cyclesEnded(before, after serverScrape) bool {
	count := func(s serverScrape, phase string) float64 {
		if h := s.phases[phase]; h != nil {
			return h.count
		}
		return 0
	}
	committed := count(after, "commit")
	if count(after, "publish") < committed {
		return false
	}
	return committed == count(before, "commit") || after.cycles > before.cycles
}
