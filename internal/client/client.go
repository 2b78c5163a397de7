package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// maxResponse bounds the body read from the server.
const maxResponse = 64 << 20

// Client calls allot servers: one, or several that share a store (one
// leads, the others pass it what they do not answer themselves). Its zero
// value is not usable; use New.
type Client struct {
	bases []*url.URL
	cur   atomic.Int32 // index in bases of the server answering lately
	token string
	// HTTP sends the requests; New sets one with a 30 s timeout.
	HTTP *http.Client
	// NoLeaderWait bounds how long a request answered 503 NoLeader (the
	// servers are electing a leader) is retried; New sets 15 s.
	NoLeaderWait time.Duration
	// OnWarning, when set, is given the text of each Warning header of a
	// successful answer: the server did what was asked and has something
	// to tell whoever asked (a reservation that promises GPUs promised to
	// others already, say).
	OnWarning func(text string)
}

// New returns a client of the server at base ("http://127.0.0.1:8080"),
// or of the servers at a comma-separated list of such URLs, that
// authenticates with token; an empty token sends no Authorization header.
// A request that cannot connect to one server goes to the next; after a
// request that got no answer (a timeout), the next request starts with
// the next server.
func New(base, token string) (*Client, error) {
	c := &Client{token: token, HTTP: &http.Client{Timeout: 30 * time.Second}, NoLeaderWait: 15 * time.Second}
	for _, b := range strings.Split(base, ",") {
		u, err := url.Parse(strings.TrimRight(strings.TrimSpace(b), "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("server %q: want a URL such as http://127.0.0.1:8080, or several separated by commas", b)
		}
		c.bases = append(c.bases, u)
	}
	return c, nil
}

// Server returns the base URL of the server the client talks to now.
func (c *Client) Server() string { return c.base().String() }

func (c *Client) base() *url.URL { return c.bases[int(c.cur.Load())%len(c.bases)] }

// unreachable reports whether err means the request never reached the
// server (it could not connect), so that another server may take it.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// send sends a request built by build for a base URL to the current
// server, and to each other one in turn while none can be connected to;
// it retries, within NoLeaderWait, while servers answer 503 NoLeader.
// A safe request (one that carries an idempotency key, or one the server
// answers alike when repeated: request.repeatable) is also sent again
// when it got no answer or an answer saying it may or may not have been
// carried out (502 LeaderFailed, 503 StoreUnavailable): the server
// carries it out at most once. build must return a new request each time
// (bodies are read once).
func (c *Client) send(ctx context.Context, hc *http.Client, safe bool, build func(base string) (*http.Request, error)) (*http.Response, error) {
	deadline := time.Now().Add(c.NoLeaderWait)
	for {
		var resp *http.Response
		var err error
		first := int(c.cur.Load())
		for i := range c.bases {
			at := (first + i) % len(c.bases)
			var req *http.Request
			if req, err = build(c.bases[at].String()); err != nil {
				return nil, err
			}
			resp, err = hc.Do(req)
			if err == nil || !unreachable(err) || ctx.Err() != nil {
				c.cur.Store(int32(at))
				break
			}
		}
		retry := time.Now().Before(deadline)
		if err != nil {
			if !errors.Is(ctx.Err(), context.Canceled) {
				// Sent, and no answer (a timeout, the caller's deadline, a
				// reset): the request may have been carried out, so it is
				// sent again only when safe, but the next one goes to
				// another server first.
				c.cur.Add(1)
			}
			if !safe || !retry || ctx.Err() != nil {
				return nil, err
			}
		} else {
			if !retry || (resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusBadGateway) {
				return resp, nil
			}
			data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
			resp.Body.Close()
			var e struct {
				Code string `json:"code"`
			}
			_ = json.Unmarshal(data, &e)
			switch {
			case e.Code == "NoLeader" && resp.Header.Get("Retry-After") != "":
			case safe && (e.Code == "LeaderFailed" || e.Code == "StoreUnavailable"):
			default:
				resp.Body = io.NopCloser(bytes.NewReader(data))
				return resp, nil
			}
			c.cur.Add(1) // ask another server next
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// request describes one call: path is escaped already; out, if not nil,
// receives the decoded body of a 2xx answer (the contract's 200, 201 or
// 204).
type request struct {
	method, path string
	query        url.Values
	body         []byte
	contentType  string
	out          any
	// key is the request's idempotency key ("" for none): the request is
	// sent with an Idempotency-Key header, and sent again when it may or
	// may not have been carried out (see send).
	key string
	// repeatable marks a request whose repeat the server answers as it
	// did the first (agents' reports: a heartbeat, an event, a log chunk
	// at an offset): sent again, as a keyed one is, when it may or may
	// not have been carried out. GETs always are.
	repeatable bool
}

func (c *Client) do(ctx context.Context, r request) error {
	pathQuery := r.path
	if len(r.query) > 0 {
		pathQuery += "?" + r.query.Encode()
	}
	target := c.base().String() + pathQuery
	safe := r.key != "" || r.repeatable
	resp, err := c.send(ctx, c.HTTP, safe, func(base string) (*http.Request, error) {
		target = base + pathQuery
		var body io.Reader
		if r.body != nil {
			body = bytes.NewReader(r.body)
		}
		req, err := http.NewRequestWithContext(ctx, r.method, target, body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
		}
		if r.body != nil {
			req.Header.Set("Content-Type", r.contentType)
		}
		if r.key != "" {
			req.Header.Set("Idempotency-Key", r.key)
		}
		req.Header.Set("Accept", "application/json")
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		return req, nil
	})
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // it repeats the method and URL
		}
		return fmt.Errorf("%s %s: %w", r.method, target, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return fmt.Errorf("%s %s: read response: %w", r.method, r.path, err)
	}
	if resp.StatusCode/100 != 2 {
		return decodeError(resp, data)
	}
	if c.OnWarning != nil {
		for _, v := range resp.Header.Values("Warning") {
			c.OnWarning(warningText(v))
		}
	}
	if r.out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(data, r.out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", r.method, r.path, err)
	}
	return nil
}

// warningText is the text of a Warning header value, 299 - "text" (RFC
// 7234, section 5.5), with its quoted-pair escapes undone; a value of
// another form is returned whole.
func warningText(v string) string {
	rest, ok := strings.CutPrefix(v, `299 - "`)
	if !ok || !strings.HasSuffix(rest, `"`) {
		return v
	}
	rest = rest[:len(rest)-1]
	var b strings.Builder
	for i := 0; i < len(rest); i++ {
		if rest[i] == '\\' && i+1 < len(rest) {
			i++
		}
		b.WriteByte(rest[i])
	}
	return b.String()
}

// seg escapes a user-given path segment, so that a job ID "a/b" stays one
// segment.
func seg(s string) string { return url.PathEscape(s) }
