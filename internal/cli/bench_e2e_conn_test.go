package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// The bench's own connection submits over one kept-alive connection, dials
// again when the server closed it (after an answer that says so) or it
// failed, and reports an answer other than 201, and a submit on a
// connection the server dropped, as errors without sending them again.
func TestRawSubmitter(t *testing.T) {
	var n, conns atomic.Int64
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/base/v1/jobs" || r.Header.Get("Authorization") != "Bearer tok" ||
			string(body) != `{"name":"x"}` {
			http.Error(w, fmt.Sprintf("bad request %s %s %q", r.Method, r.URL.Path, body), http.StatusBadRequest)
			return
		}
		i := n.Add(1)
		switch {
		case i == 7:
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		case i%3 == 0:
			w.Header().Set("Connection", "close")
		}
		w.Header().Set("Location", fmt.Sprintf("/v1/jobs/job-%d", i))
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":"job-%d"}`, i)
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	defer ts.Close()
	sub, err := newSubmitter(ts.URL+"/base", "tok", []byte(`{"name":"x"}`), ts.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.close()
	if _, ok := sub.(*rawSubmitter); !ok {
		t.Fatalf("an http server gets %T", sub)
	}
	ctx := context.Background()
	var ids []string
	for i := range 10 {
		if i == 8 {
			ts.CloseClientConnections() // the server drops the kept-alive connection between requests
		}
		id, err := sub.submit(ctx)
		var status *statusError
		switch {
		case i == 6:
			if !errors.As(err, &status) || !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), "slow down") {
				t.Fatalf("submit %d: %q, %v; want the 429", i, id, err)
			}
		case i == 8:
			if err == nil || errors.As(err, &status) {
				t.Fatalf("submit %d on a dropped connection: %q, %v; want a connection error", i, id, err)
			}
		case err != nil:
			t.Fatalf("submit %d: %v", i, err)
		default:
			ids = append(ids, id)
		}
	}
	want := "job-1 job-2 job-3 job-4 job-5 job-6 job-8 job-9"
	if got := strings.Join(ids, " "); got != want {
		t.Fatalf("ids %s, want %s", got, want)
	}
	// A new connection after each close: after 3, 6 and the 429 (7), and
	// after the dropped one.
	if c := conns.Load(); c != 5 {
		t.Fatalf("%d connections, want 5", c)
	}
	if _, err := newSubmitter("http://[::1", "t", nil, nil); err == nil {
		t.Fatal("a bad URL was taken")
	}
	tls := httptest.NewTLSServer(http.NotFoundHandler())
	defer tls.Close()
	if sub, err := newSubmitter(tls.URL, "t", nil, tls.Client()); err != nil {
		t.Fatal(err)
	} else if _, ok := sub.(httpSubmitter); !ok {
		t.Fatalf("an https server gets %T", sub)
	}
}
