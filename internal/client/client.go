package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxResponse bounds the body read from the server.
const maxResponse = 64 << 20

// Client calls one allot server. Its zero value is not usable; use New.
type Client struct {
	base  *url.URL
	token string
	// HTTP sends the requests; New sets one with a 30 s timeout.
	HTTP *http.Client
}

// New returns a client of the server at base ("http://127.0.0.1:8080")
// that authenticates with token; an empty token sends no Authorization
// header.
func New(base, token string) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server %q: want a URL such as http://127.0.0.1:8080", base)
	}
	return &Client{base: u, token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}, nil
}

// Server returns the base URL the client talks to.
func (c *Client) Server() string { return c.base.String() }

// request describes one call: path is escaped already; out, if not nil,
// receives the decoded body of a 2xx answer (the contract's 200, 201 or
// 204).
type request struct {
	method, path string
	query        url.Values
	body         []byte
	contentType  string
	out          any
}

func (c *Client) do(ctx context.Context, r request) error {
	target := c.base.String() + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", r.contentType)
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.HTTP.Do(req)
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
	if r.out == nil {
		return nil
	}
	if err := json.Unmarshal(data, r.out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", r.method, r.path, err)
	}
	return nil
}

// seg escapes a user-given path segment, so that a job ID "a/b" stays one
// segment.
func seg(s string) string { return url.PathEscape(s) }
