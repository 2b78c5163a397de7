package agent

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/allot-dev/allot/internal/client"
)

// logServer is the log endpoint as a server keeps it, per rank: it takes a
// chunk that starts at or before the end of what it has (keeping each byte
// once), or one marked skip; otherwise it answers how far it has the log.
// forget makes it lose everything, as a new leader does.
type logServer struct {
	mu   sync.Mutex
	data strings.Builder
	next int64
}

func (s *logServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	off, err := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	if err != nil {
		http.Error(w, "offset", http.StatusBadRequest)
		return
	}
	switch {
	case off > s.next && r.URL.Query().Get("skip") != "1":
	case off > s.next:
		s.data.WriteString("[gap]\n")
		s.data.Write(body)
		s.next = off + int64(len(body))
	default:
		s.data.Write(body[min(s.next-off, int64(len(body))):])
		s.next = max(s.next, off+int64(len(body)))
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"next":`+strconv.FormatInt(s.next, 10)+`}`)
}

func (s *logServer) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data.Reset()
	s.next = 0
}

func (s *logServer) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data.String()
}

// shipper is an agent whose client talks to h, enough to ship logs.
func shipper(t *testing.T, h http.Handler) *Agent {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	cl, err := client.New(hs.URL, "token")
	if err != nil {
		t.Fatal(err)
	}
	return &Agent{cfg: Config{Client: cl}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// TestShipAfterFailover: the agent ships a log in whole lines with their
// offsets; after the server loses what it had, the next shipment sends it
// again from the start (the final one even with nothing new), and a log
// longer than resendLimit comes back as its last resendLimit bytes after a
// gap.
func TestShipAfterFailover(t *testing.T) {
	srv := &logServer{}
	a := shipper(t, srv)
	path := filepath.Join(t.TempDir(), "log")
	write := func(s string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	k := key{job: "j", attempt: 1}
	write("one\ntwo\npart")
	off := a.ship(ctx, k, path, 0, false)
	if off != 8 || srv.log() != "one\ntwo\n" {
		t.Fatalf("first shipment: offset %d, server %q", off, srv.log())
	}
	srv.forget()
	write("ial\n")
	if off = a.ship(ctx, k, path, off, false); off != 16 || srv.log() != "one\ntwo\npartial\n" {
		t.Fatalf("after the server forgot: offset %d, server %q", off, srv.log())
	}

	// Silent since: the final shipment asks how far the server has it.
	srv.forget()
	if off = a.ship(ctx, k, path, off, false); srv.log() != "" {
		t.Fatalf("nothing new, not final: server %q, want nothing asked", srv.log())
	}
	if off = a.ship(ctx, k, path, off, true); off != 16 || srv.log() != "one\ntwo\npartial\n" {
		t.Fatalf("final shipment after the server forgot: offset %d, server %q", off, srv.log())
	}

	srv.forget()
	line := strings.Repeat("x", 1023) + "\n"
	write(strings.Repeat(line, resendLimit/1024+64))
	size := int64(16 + len(line)*(resendLimit/1024+64))
	write("last\n")
	size += 5
	if off = a.ship(ctx, k, path, off, true); off != size {
		t.Fatalf("long log: offset %d, want %d", off, size)
	}
	got := srv.log()
	if !strings.HasPrefix(got, "[gap]\n") || !strings.HasSuffix(got, line+"last\n") || len(got) > resendLimit+len("[gap]\n")+maxChunk {
		t.Fatalf("long log after the server forgot: %d bytes, starts %q", len(got), got[:min(len(got), 40)])
	}
}

// TestShipStopsAskingAServerThatLoops: a server that answers "from 0"
// whatever it is sent gets a bounded number of requests per shipment, and
// the offset stays where it was.
func TestShipStopsAskingAServerThatLoops(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	a := shipper(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"next":0}`)
	}))
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("a\nb\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if off := a.ship(context.Background(), key{job: "j", attempt: 1}, path, 2, true); off != 2 {
		t.Errorf("offset %d after a looping server, want 2 (unchanged)", off)
	}
	if calls > 4 {
		t.Errorf("%d requests in one shipment to a server that loops", calls)
	}
}
