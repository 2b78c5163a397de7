package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/server/servertest"
)

// follower is an election this server never wins, whose leader the test
// moves.
type follower struct{ leaders chan string }

func (follower) Campaign(ctx context.Context, _ string) (server.Term, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (follower) Leader(context.Context) (string, error) {
	return "", errors.New("read through Observe only")
}

func (f follower) Observe(ctx context.Context) <-chan string {
	out := make(chan string)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case url := <-f.leaders:
				select {
				case out <- url:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// A follower passes a write to a leader that stalls (takes the request and
// never answers); when another server is elected the request ends at once
// with 502 LeaderFailed and Retry-After, which a keyed client retries,
// instead of at the client's timeout.
func TestForwardEndsWhenLeaderMoves(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer stalled.Close()
	defer close(release)

	fleet, ten := servertest.Example(t)
	el := follower{leaders: make(chan string)}
	srv, err := server.New(t.Context(), server.Config{Store: servertest.Store(t, t.TempDir()), Fleet: fleet, Tenancy: ten,
		URL: "http://follower.test", Election: el})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = srv.Run(ctx) }()
	el.leaders <- stalled.URL
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if url, _, _, _ := srv.LeaderURL(ctx); url == stalled.URL {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server never observed the leader")
		}
	}
	h := New(Config{Server: srv})

	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/jobs", strings.NewReader("name: x\n")))
		done <- rec
	}()
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the submit never reached the leader")
	}
	select {
	case rec := <-done:
		t.Fatalf("answered %d before leadership moved: %s", rec.Code, rec.Body)
	case <-time.After(100 * time.Millisecond):
	}
	el.leaders <- "http://next-leader.test"
	select {
	case rec := <-done:
		var body struct{ Code, Message string }
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != http.StatusBadGateway || body.Code != codeLeaderFailed || rec.Header().Get("Retry-After") == "" {
			t.Errorf("answered %d %s (Retry-After %q), want 502 %s with Retry-After",
				rec.Code, rec.Body, rec.Header().Get("Retry-After"), codeLeaderFailed)
		}
		if !strings.Contains(body.Message, "moved away from "+stalled.URL) {
			t.Errorf("message %q does not say leadership moved", body.Message)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the forwarded request still waits 5s after another leader was elected")
	}
}
