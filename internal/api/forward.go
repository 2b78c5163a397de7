package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
)

// codeNoLeader: a server that does not lead cannot reach one (an
// election in progress); retry after Retry-After.
const codeNoLeader = "NoLeader"

// codeLeaderFailed: the leader failed while answering a forwarded request,
// which it may have carried out.
const codeLeaderFailed = "LeaderFailed"

// forwardedHeader marks a request a follower passed to the leader, so that
// it is never passed on twice (two servers that each think the other
// leads).
const forwardedHeader = "X-Allot-Forwarded"

// servedByFollower reports whether a server that does not lead answers r
// itself, from its watch-fed cache: reads, except those of what only the
// leader holds in memory (logs shipped by agents, agents' long polls,
// alert state, a node's last heartbeat, a reservation's nodes).
// Everything else goes to the leader.
func servedByFollower(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/v1/jobs/") && strings.HasSuffix(p, "/logs"),
		strings.HasPrefix(p, "/v1/nodes/") && strings.HasSuffix(p, "/assignments"),
		strings.HasPrefix(p, "/v1/nodes/") && !strings.Contains(p[len("/v1/nodes/"):], "/"),
		strings.HasPrefix(p, "/v1/reservations/"), // the nodes the leader's last cycle gave it
		p == "/v1/alerts":
		return false
	}
	return true
}

// forwarder passes requests a follower does not answer to the leader's
// API, streaming both ways (long polls and followed logs included); the
// leader checks the token again.
type forwarder struct {
	transport http.RoundTripper // nil: http.DefaultTransport
	mu        sync.Mutex
	proxies   map[string]*httputil.ReverseProxy // by leader URL
}

func (f *forwarder) proxy(leader string) (*httputil.ReverseProxy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.proxies[leader]; ok {
		return p, nil
	}
	target, err := url.Parse(leader)
	if err != nil {
		return nil, err
	}
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Header.Set(forwardedHeader, "1")
		},
		Transport:     f.transport,
		FlushInterval: -1, // followed logs and long polls flush at once
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(context.Cause(r.Context()), errLeaderMoved) {
				// Sent, and perhaps carried out before the leader
				// stalled: a keyed request is safe to send again.
				w.Header().Set("Retry-After", "1")
				writeError(w, codeLeaderFailed, "", "leadership moved away from "+leader+
					" while it was answering (it may have carried the request out); retry")
				return
			}
			var op *net.OpError
			if errors.As(err, &op) && op.Op == "dial" {
				// Never sent: safe to retry, wherever the leader is now.
				w.Header().Set("Retry-After", "1")
				writeError(w, codeNoLeader, "", "the leader at "+leader+" cannot be reached ("+err.Error()+"); retry")
				return
			}
			// Sent, and perhaps carried out: only the caller can tell
			// whether to retry (list jobs before submitting again).
			writeError(w, codeLeaderFailed, "", "the leader at "+leader+" failed while answering: "+err.Error())
		},
	}
	if f.proxies == nil {
		f.proxies = map[string]*httputil.ReverseProxy{}
	}
	if len(f.proxies) > 16 { // leaders come and go; keep the map small
		clear(f.proxies)
	}
	f.proxies[leader] = p
	return p, nil
}

// forward wraps next: a server that leads (or has no election) answers
// everything; one that does not answers what servedByFollower allows and
// passes the rest to the leader.
func (h *handler) forward(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.srv.Leads() || servedByFollower(r) {
			next.ServeHTTP(w, r)
			return
		}
		leader, self, moved, err := h.srv.LeaderURL(r.Context())
		switch {
		case self:
			next.ServeHTTP(w, r)
			return
		case err != nil || leader == "":
			w.Header().Set("Retry-After", "1")
			writeError(w, codeNoLeader, "", "no server leads at the moment (an election is under way); retry")
			return
		case r.Header.Get(forwardedHeader) != "":
			w.Header().Set("Retry-After", "1")
			writeError(w, codeNoLeader, "", "forwarded here by a server that thought this one leads; leadership is changing, retry")
			return
		}
		p, err := h.fwd.proxy(leader)
		if err != nil {
			writeError(w, codeNoLeader, "", "the leader's URL "+leader+" is not valid: "+err.Error())
			return
		}
		if moved != nil {
			// A leader that stalls accepts and never answers; once
			// another is elected, end the request rather than hold it
			// to the client's timeout.
			ctx, cancel := context.WithCancelCause(r.Context())
			defer cancel(nil)
			go func() {
				select {
				case <-moved:
					cancel(errLeaderMoved)
				case <-ctx.Done():
				}
			}()
			r = r.WithContext(ctx)
		}
		p.ServeHTTP(w, r)
	})
}

// errLeaderMoved ends a forwarded request when another server (or none)
// leads in place of the one it went to.
var errLeaderMoved = errors.New("leadership moved")
