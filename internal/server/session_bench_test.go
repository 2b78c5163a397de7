package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched/schedtest"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/store"
)

// BenchmarkCycleBusy times a cycle of a server whose fleet of 4,000 nodes
// of 8 H100 GPUs is full of one-GPU jobs with 4,000 more queued that do
// not fit: a tick's cycle on a busy fleet, where nothing changes but the
// time. "session" plans on the server's Session; "rebuild" drops it before
// each cycle, so each builds the core's state anew as a from-scratch cycle
// does. "scrape" gathers the server's metrics.
func BenchmarkCycleBusy(b *testing.B) {
	const nodes, queued = 4000, 4000
	w := schedtest.NewWorld().Region("r", "us", model.FabricInfiniBand).Nodes("n", nodes, "ND96-H100x8-IB", "l")
	w.Tenancy.Tenants = []model.Tenant{{Name: "t"}}
	specs, err := spec.ParseJobs("bench", []byte(`{name: x, tenant: t, resources: {gpus_per_instance: 1, gpu_models: [H100]}}`), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	st := servertest.Store(b, b.TempDir())
	clock := NewManualClock(t0)
	srv, err := New(ctx, Config{Store: st, Fleet: &w.Fleet, Tenancy: &w.Tenancy, Clock: clock, MaxPendingWrites: 1000})
	if err != nil {
		b.Fatal(err)
	}
	// A few thousand jobs a cycle: one commit takes at most 10,000 writes.
	for at := 0; at < nodes*8+queued; at += 5000 {
		var txn store.Txn
		for i := at; i < min(at+5000, nodes*8+queued); i++ {
			j := &model.Job{ID: fmt.Sprintf("j%06d", i), Spec: specs[0]}
			j.Status.State, j.Status.SubmittedAt = model.StateQueued, t0
			txn.Then = append(txn.Then, store.PutOp(prefixJobs+j.ID, encodeJob(j)))
		}
		rev, err := st.Txn(ctx, txn)
		if err != nil {
			b.Fatal(err)
		}
		for _, op := range txn.Then {
			srv.cache.putKV(op.Key, op.Value, rev)
		}
		clock.Advance(time.Second)
		if err := srv.Cycle(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for range 5 { // record the pending reasons, 1,000 a cycle
		clock.Advance(time.Second)
		if err := srv.Cycle(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if n := srv.cache.stateCounts()[model.StateRunning]; n != nodes*8 {
		b.Fatalf("%d jobs running, want %d", n, nodes*8)
	}
	for _, mode := range []string{"session", "rebuild"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				if mode == "rebuild" {
					srv.inc.Drop()
				}
				clock.Advance(time.Second)
				if err := srv.Cycle(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// What a Prometheus scrape costs on this server (metrics_fleet.go
	// walks the live jobs and the fleet's nodes).
	b.Run("scrape", func(b *testing.B) {
		for b.Loop() {
			if _, err := srv.reg.Gather(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
