package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// submitter is one bench e2e client: it submits the run's job again and
// again and returns each new job's ID.
type submitter interface {
	submit(ctx context.Context) (id string, err error)
	close()
}

// newSubmitter returns a client for the server at base: over plain http, a
// connection of its own (rawSubmitter); over https, net/http's client.
func newSubmitter(base, token string, body []byte, c *http.Client) (submitter, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("server URL %q: %w", base, err)
	}
	if u.Scheme != "http" {
		return httpSubmitter{c: c, url: base, token: token, body: body}, nil
	}
	head := fmt.Sprintf("POST %s/v1/jobs HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", strings.TrimSuffix(u.EscapedPath(), "/"), u.Host, token, len(body))
	return &rawSubmitter{addr: u.Host, req: append([]byte(head), body...)}, nil
}

// rawSubmitter submits over one kept-alive HTTP/1.1 connection of its own:
// the request is written whole from bytes built once, the answer read with
// net/http's ReadResponse. That spares the bench the client machinery it
// does not need (a transport's pool and its two goroutines a connection),
// so that on a machine the server shares the bench takes less of the CPU.
// It dials again after the server closed the connection (an answer that
// says so: --conn-max-age) or the connection failed; a submit whose
// connection failed is not sent again (it may have been stored), and
// counts as failed.
type rawSubmitter struct {
	addr string
	req  []byte
	conn net.Conn
	br   *bufio.Reader
}

func (s *rawSubmitter) submit(ctx context.Context) (string, error) {
	if s.conn == nil {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", s.addr)
		if err != nil {
			return "", err
		}
		s.conn, s.br = c, bufio.NewReaderSize(c, 16<<10)
	}
	id, err := s.roundTrip(ctx)
	if err != nil {
		s.close()
	}
	return id, err
}

// statusError is an answer other than 201.
type statusError struct{ msg string }

func (e *statusError) Error() string { return e.msg }

func (s *rawSubmitter) roundTrip(ctx context.Context) (string, error) {
	deadline := time.Now().Add(time.Minute)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := s.conn.SetDeadline(deadline); err != nil {
		return "", err
	}
	if _, err := s.conn.Write(s.req); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(s.br, nil)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close() // the connection is closed: the rest of the body is not read
		return "", &statusError{fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(b)))}
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return "", err
	}
	if resp.Close {
		s.close()
	}
	return strings.TrimPrefix(resp.Header.Get("Location"), "/v1/jobs/"), nil
}

func (s *rawSubmitter) close() {
	if s.conn != nil {
		s.conn.Close()
		s.conn, s.br = nil, nil
	}
}

// httpSubmitter submits with net/http's client (https).
type httpSubmitter struct {
	c          *http.Client
	url, token string
	body       []byte
}

func (s httpSubmitter) submit(ctx context.Context) (string, error) {
	return submitE2EJob(ctx, s.c, s.url, s.token, s.body)
}

func (httpSubmitter) close() {}
