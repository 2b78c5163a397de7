package azurellm

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/trace/csvtable"
)

// TimeLayout is the layout of the TIMESTAMP column as the files write it
// (UTC). The reader accepts 1 to 9 fractional digits.
const TimeLayout = "2006-01-02 15:04:05.0000000"

// MaxTokens bounds the tokens of one request, so a typo cannot ask for
// billions.
const MaxTokens = 1 << 24

// Column names in the header.
const (
	colTime      = "TIMESTAMP"
	colContext   = "ContextTokens"
	colGenerated = "GeneratedTokens"
)

// Request is one row of a trace file.
type Request struct {
	At        time.Duration // since the first request of the file; non-decreasing
	Context   int           // prompt tokens, 1..MaxTokens
	Generated int           // output tokens, 0..MaxTokens
}

// ReadRequests reads a trace file; file names the input in errors.
func ReadRequests(r io.Reader, file string) ([]Request, error) {
	t, err := csvtable.Open(r, file, []string{colTime, colContext, colGenerated}, ErrFormat)
	if err != nil {
		return nil, err
	}
	var (
		out         []Request
		first, prev time.Time
		prevText    string
		prevLine    int
	)
	for {
		ok, err := t.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		s, err := t.Need(colTime)
		if err != nil {
			return nil, err
		}
		at, ok := parseTime(s)
		if !ok {
			return nil, t.Errorf(colTime, "%q is not a time like %q", s, TimeLayout)
		}
		if len(out) == 0 {
			first = at
		} else if at.Before(prev) {
			return nil, t.Errorf(colTime, "%s is before %s on line %d: rows must be in time order",
				s, prevText, prevLine)
		}
		prev, prevText, prevLine = at, s, t.Line()
		req := Request{At: at.Sub(first)}
		if !first.Add(req.At).Equal(at) {
			return nil, t.Errorf(colTime, "%s is too far from the first request (%s)", s, first.Format(time.DateTime))
		}
		c, err := t.Int(colContext, true, MaxTokens)
		if err != nil {
			return nil, err
		}
		if c < 1 {
			return nil, t.Errorf(colContext, "%d is not positive", c)
		}
		g, err := t.Int(colGenerated, true, MaxTokens)
		if err != nil {
			return nil, err
		}
		req.Context, req.Generated = int(c), int(g)
		out = append(out, req)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s:1:1: %w: no requests after the header", file, ErrFormat)
	}
	return out, nil
}

// parseTime reads "2006-01-02 15:04:05.F" with 1 to 9 fractional digits, in
// UTC. time.Parse alone would also take a comma, no fraction, or more than
// 9 digits (truncated), which the trace format does not have.
func parseTime(s string) (time.Time, bool) {
	whole, frac, ok := strings.Cut(s, ".")
	if !ok || len(whole) != len(time.DateTime) || len(frac) < 1 || len(frac) > 9 {
		return time.Time{}, false
	}
	at, err := time.Parse(time.DateTime, whole)
	if err != nil {
		return time.Time{}, false
	}
	ns := 0
	for i := range 9 {
		ns *= 10
		if i < len(frac) {
			d := frac[i]
			if d < '0' || d > '9' {
				return time.Time{}, false
			}
			ns += int(d - '0')
		}
	}
	return at.Add(time.Duration(ns)), true
}

// ReadRequestsFile reads the trace file at path.
func ReadRequestsFile(path string) ([]Request, error) {
	return csvtable.ReadFile(path, ReadRequests)
}
