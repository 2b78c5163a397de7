package server

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/server/servertest"
)

// brokenScorer panics while armed, as a core whose "cannot happen" has
// happened would.
type brokenScorer struct {
	sched.BinPack
	armed atomic.Bool
}

func (b *brokenScorer) Score(n *sched.NodeInfo, r *sched.Request) float64 {
	if b.armed.Load() {
		panic("scorer: broken on purpose")
	}
	return b.BinPack.Score(n, r)
}

// TestCyclePanicIsContained: a panic inside planning fails that one cycle
// with an error, logs its stack, counts it and writes nothing; the next
// cycle runs as usual.
func TestCyclePanicIsContained(t *testing.T) {
	ctx := context.Background()
	fleet, ten := servertest.Example(t)
	st := servertest.Store(t, "")
	var err error
	var logs bytes.Buffer
	scorer := &brokenScorer{}
	h := &harness{t: t, st: st, clock: NewManualClock(t0)}
	h.srv, err = New(ctx, Config{Store: st, Fleet: fleet, Tenancy: ten, Clock: h.clock,
		Sched: sched.Config{Scorer: scorer}, Logger: slog.New(slog.NewTextHandler(&logs, nil)), CheckIncremental: true})
	if err != nil {
		t.Fatal(err)
	}
	j := h.submit(copilot, chat)
	rev, err := st.Rev(ctx)
	if err != nil {
		t.Fatal(err)
	}

	scorer.armed.Store(true)
	h.clock.Advance(time.Second)
	err = h.srv.Cycle(ctx)
	if err == nil || !strings.Contains(err.Error(), "broken on purpose") {
		t.Fatalf("cycle returned %v, want the panic as an error", err)
	}
	if got, _ := st.Rev(ctx); got != rev {
		t.Errorf("store revision %d after the failed cycle, want %d: nothing written", got, rev)
	}
	if got := h.job(j.ID); got.Status.State != model.StateQueued || got.Status.Reason != "" {
		t.Errorf("job after the failed cycle: %s %q, want Queued without a reason", got.Status.State, got.Status.Reason)
	}
	if n := counter(t, h.srv, "allot_cycle_panics_total"); n != 1 {
		t.Errorf("allot_cycle_panics_total = %v, want 1", n)
	}
	if !strings.Contains(logs.String(), "goroutine") || !strings.Contains(logs.String(), "broken on purpose") {
		t.Errorf("log does not hold the panic and its stack:\n%s", logs.String())
	}

	scorer.armed.Store(false)
	h.clock.Advance(time.Second)
	h.cycle()
	if got := h.job(j.ID); got.Status.State != model.StateRunning {
		t.Fatalf("job after the next cycle: %s (%s: %s), want Running", got.Status.State, got.Status.Reason, got.Status.Detail)
	}
}

// counter reads a counter from the server's registry; 0 when absent.
func counter(t *testing.T, s *Server, name string) float64 {
	t.Helper()
	families, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
