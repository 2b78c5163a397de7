package h1

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// FuzzAnswer feeds whatever a server might write into a Transport: the
// request ends with an answer whose body reads to its end or with an
// error, never a panic or a hang.
func FuzzAnswer(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\nshort"))
	f.Add([]byte("garbage\r\n\r\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, answer []byte) {
		tr := New(Config{Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			client, server := net.Pipe()
			go func() {
				defer server.Close()
				_ = server.SetDeadline(time.Now().Add(time.Second))
				buf := make([]byte, 4096)
				_, _ = server.Read(buf) // the request
				_, _ = server.Write(answer)
			}()
			return client, nil
		}})
		defer tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://fuzz/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if ctx.Err() != nil {
			t.Fatalf("the exchange outlived its context on %q", answer)
		}
	})
}
