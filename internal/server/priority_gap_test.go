package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/spec"
)

// TestServerPriorityGap checks that the core's preemption for a better
// priority value, and the protection of fresh work, reach a live server
// through Config.Sched (allot server --priority-gap, --min-run-time): on
// a full lab, a tenant's job 49 values better evicts one of its own
// running jobs only with the gap on, and not while they are protected.
func TestServerPriorityGap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     sched.Config
		evicted bool
	}{
		{"off by default", sched.Config{}, false},
		{"gap on", sched.Config{PriorityGap: 10}, true},
		{"gap on, fresh work protected", sched.Config{PriorityGap: 10, MinRunTime: time.Hour}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fleet, ten := servertest.Lab(t)
			clock := NewManualClock(t0)
			srv, err := New(t.Context(), Config{Store: servertest.Store(t, ""), Fleet: fleet, Tenancy: ten, Clock: clock, Sched: tc.cfg})
			if err != nil {
				t.Fatal(err)
			}
			team := Principal{Tenant: "team"}
			submit := func(name string, value int) *model.Job {
				specs, err := spec.ParseJobs("test", fmt.Appendf(nil,
					"{name: %s, tenant: team, priority: 'standard:%d', resources: {gpus_per_instance: 8, gpu_models: [H100]}}", name, value), nil)
				if err != nil {
					t.Fatal(err)
				}
				j, err := srv.Submit(context.Background(), team, specs[0])
				if err != nil {
					t.Fatal(err)
				}
				return j
			}
			var low []string
			for i := range 3 {
				low = append(low, submit(fmt.Sprintf("low-%d", i), 1).ID)
			}
			if err := srv.Cycle(t.Context()); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Minute)
			high := submit("high", 50)
			for range 2 {
				if err := srv.Cycle(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			evicted := 0
			for _, id := range low {
				j, err := srv.Job(t.Context(), admin, id)
				if err != nil {
					t.Fatal(err)
				}
				if j.Status.Preemptions > 0 {
					evicted++
				}
			}
			h, _ := srv.Job(t.Context(), admin, high.ID)
			if (evicted == 1) != tc.evicted || (evicted > 1) {
				t.Fatalf("%d of the low-value jobs evicted (high: %s %s), want evicted %v", evicted, h.Status.State, h.Status.Reason, tc.evicted)
			}
		})
	}
}
