package server

import (
	"context"
	"errors"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// Election chooses, among the servers that share one store, the one that
// schedules: package etcd's Election (etcd's concurrency.Election on a
// lease) behind an adapter. A server without one (Config.Election nil)
// always leads.
type Election interface {
	// Campaign waits until the candidate whose API is at url leads, or
	// ctx ends.
	Campaign(ctx context.Context, url string) (Term, error)
	// Leader returns the API URL of the current leader, "" when none.
	Leader(ctx context.Context) (string, error)
	// Observe sends the current leader's API URL ("" when none), then
	// each next one as it is elected, until ctx ends, when it closes the
	// channel. A reader that falls behind gets the latest.
	Observe(ctx context.Context) <-chan string
}

// leaderView is the leader as this server last observed it.
type leaderView struct {
	url   string        // "" while none leads
	moved chan struct{} // closed when another leader, or none, follows
}

// Term is one leadership, from a won Campaign until its lease is lost or
// it resigns.
type Term interface {
	// Store is the server's store with every Txn fenced on the term: a
	// Txn after the term ended writes nothing and fails with
	// store.ErrFenced.
	Store() store.Store
	// Done is closed when the term's lease is lost.
	Done() <-chan struct{}
	// Rev is the store revision the term began at.
	Rev() int64
	// Resign ends the term so that another candidate leads at once.
	Resign(ctx context.Context) error
}

// errNotLeading fails a cycle of a server that does not lead.
var errNotLeading = errors.New("server: not the leader")

// Leads reports whether this server schedules now: it has no Election,
// or it holds a term.
func (s *Server) Leads() bool {
	return s.cfg.Election == nil || s.term.Load() != nil
}

// LeaderURL returns the API URL of the leading server, whether that is
// this one, and a channel closed when leadership moves away from it (nil
// when this server leads, or cannot tell yet). With no leader elected (a
// campaign in progress) the URL is "".
func (s *Server) LeaderURL(ctx context.Context) (url string, self bool, moved <-chan struct{}, err error) {
	if s.Leads() {
		return s.cfg.URL, true, nil, nil
	}
	if v := s.leader.Load(); v != nil {
		return v.url, v.url != "" && v.url == s.cfg.URL, v.moved, nil
	}
	url, err = s.cfg.Election.Leader(ctx)
	return url, url != "" && url == s.cfg.URL, nil, err
}

// followLeader keeps s.leader in step with the election until ctx ends,
// closing each view's moved channel when the next replaces it: requests a
// follower passed to a leader that stalled (accepts and never answers)
// end when another is elected, not at the client's timeout.
func (s *Server) followLeader(ctx context.Context) {
	for url := range s.cfg.Election.Observe(ctx) {
		old := s.leader.Load()
		if old != nil && old.url == url {
			continue
		}
		s.leader.Store(&leaderView{url: url, moved: make(chan struct{})})
		if old != nil {
			close(old.moved)
		}
	}
}

// planStore is the store a Plan commits to: the current term's fenced
// store, or the plain store without an Election.
func (s *Server) planStore() (store.Store, error) {
	if s.cfg.Election == nil {
		return s.st, nil
	}
	t := s.term.Load()
	if t == nil {
		return nil, errNotLeading
	}
	return (*t).Store(), nil
}

// campaign is Run with an Election: the cache follows the store all
// along; in each term won, lead runs until the term's lease is lost, a
// commit finds the term over, or ctx ends; then the server resigns and
// campaigns again.
func (s *Server) campaign(ctx context.Context, watchErr <-chan error) error {
	for {
		won := make(chan Term, 1)
		failed := make(chan error, 1)
		go func() {
			t, err := s.cfg.Election.Campaign(ctx, s.cfg.URL)
			if err != nil {
				failed <- err
				return
			}
			won <- t
		}()
		var term Term
		select {
		case <-ctx.Done():
			return nil
		case err := <-watchErr:
			return err
		case err := <-failed:
			if ctx.Err() != nil {
				return nil
			}
			s.log.Error("leader election failed; retrying", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
			continue
		case term = <-won:
		}
		err := s.leadTerm(ctx, term, watchErr)
		if err != nil || ctx.Err() != nil {
			return err
		}
	}
}

// leadTerm leads for one term and resigns it.
func (s *Server) leadTerm(ctx context.Context, term Term, watchErr <-chan error) error {
	// Agents heartbeat to the leader only: every Ready node gets a full
	// node timeout from now before a missed heartbeat counts.
	s.beatsMu.Lock()
	clear(s.beats)
	s.beatsMu.Unlock()
	s.term.Store(&term)
	s.m.leader.Set(1)
	s.log.Info("leading: this server schedules", "url", s.cfg.URL, "term_rev", term.Rev())
	tctx, stop := context.WithCancel(ctx)
	go func() {
		select {
		case <-term.Done():
			s.log.Warn("leadership lost: lease expired", "term_rev", term.Rev())
			stop()
		case <-tctx.Done():
		}
	}()
	err := s.lead(tctx, watchErr)
	stop()
	s.term.Store(nil)
	s.m.leader.Set(0)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if rerr := term.Resign(rctx); rerr != nil && ctx.Err() == nil {
		s.log.Warn("resign", "term_rev", term.Rev(), "err", rerr)
	}
	if ctx.Err() == nil && err == nil {
		s.log.Info("stepped down", "term_rev", term.Rev())
	}
	return err
}

// FenceRecord is the value of the scheduling fence (/sched/fence) that
// every Plan commit writes: when, and under an Election, which server (its
// URL) committed it in which term (the revision the term began at). The
// fault tests' history checker (package history) reads it to prove that
// only leaders commit.
type FenceRecord struct {
	At   time.Time `json:"at"`
	By   string    `json:"by,omitempty"`
	Term int64     `json:"term,omitempty"`
}

// KeyFence is the store key of the scheduling fence.
const KeyFence = keyFence

// fenceRecord is what a Plan commit at now writes to the fence.
func (s *Server) fenceRecord(now time.Time) FenceRecord {
	f := FenceRecord{At: now}
	if t := s.term.Load(); t != nil {
		f.By, f.Term = s.cfg.URL, (*t).Rev()
	}
	return f
}

// DecodeJobRecord reads a job as the server stores it under /jobs/, for
// tools that read a store's history (the fault tests' checker).
func DecodeJobRecord(b []byte) (*model.Job, error) { return decodeJob(b) }
