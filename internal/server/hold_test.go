package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/server/servertest"
)

// TestServerHoldAfter checks that holds reach a live server through
// Config.Sched (allot server --hold-after): on a lab full of one-GPU jobs,
// a 2×8 gang that has waited keeps two nodes, a new job that does not
// checkpoint is kept off them and told why, one that checkpoints may use
// them, and the gang evicts it (HeldNodes) once the work that was there
// before has ended. Without holds the new job takes the freed GPU.
func TestServerHoldAfter(t *testing.T) {
	for _, hold := range []time.Duration{0, 30 * time.Minute} {
		t.Run(fmt.Sprintf("hold=%s", hold), func(t *testing.T) {
			fleet, ten := servertest.Lab(t)
			clock := NewManualClock(t0)
			srv, err := New(t.Context(), Config{Store: servertest.Store(t, ""), Fleet: fleet, Tenancy: ten, Clock: clock,
				Sched: sched.Config{HoldAfter: hold}, CheckIncremental: true})
			if err != nil {
				t.Fatal(err)
			}
			h := &harness{t: t, srv: srv, clock: clock}
			team := Principal{Tenant: "team"}
			submit := func(doc string) *model.Job { t.Helper(); return h.submit(team, doc) }
			byNode := map[string][]string{} // small jobs by node
			var small []string
			for i := range 24 {
				small = append(small, submit(fmt.Sprintf("{name: s%d, tenant: team, resources: {gpus_per_instance: 1}}", i)).ID)
			}
			h.cycle()
			for _, id := range small {
				j := h.job(id)
				if j.Status.State != model.StateRunning {
					t.Fatalf("%s: %s, want Running", id, j.Status.State)
				}
				n := j.Status.Allocations[0].Node
				byNode[n] = append(byNode[n], id)
			}
			wide := submit("{name: wide, tenant: team, resources: {instance_count: 2, gpus_per_instance: 8}}")
			h.cycle()

			// Half an hour on, one GPU frees up.
			clock.Advance(31 * time.Minute)
			n0 := h.job(small[0]).Status.Allocations[0].Node
			if _, err := srv.Cancel(t.Context(), team, small[0]); err != nil {
				t.Fatal(err)
			}
			late := submit("{name: late, tenant: team, resources: {gpus_per_instance: 1}}")
			h.cycle()
			l := h.job(late.ID)
			if hold == 0 {
				if l.Status.State != model.StateRunning {
					t.Fatalf("late without holds: %s %s", l.Status.State, l.Status.Detail)
				}
				return
			}
			if l.Status.State != model.StateQueued || !strings.Contains(l.Status.Detail, "are kept for job "+wide.ID) {
				t.Fatalf("late, which does not checkpoint: %s %q, want kept off the held nodes", l.Status.State, l.Status.Detail)
			}
			if w := h.job(wide.ID); !strings.Contains(w.Status.Detail, "2 nodes of lab-ib/H100 are kept for it") {
				t.Fatalf("wide: %q", w.Status.Detail)
			}
			if _, err := srv.Cancel(t.Context(), team, late.ID); err != nil {
				t.Fatal(err)
			}
			ckpt := submit("{name: ckpt, tenant: team, resources: {gpus_per_instance: 1}, checkpoint: {interval: 10m}}")
			h.cycle()
			if c := h.job(ckpt.ID); c.Status.State != model.StateRunning || c.Status.Allocations[0].Node != n0 {
				t.Fatalf("ckpt, which checkpoints: %s on %v, want Running on the held %s", c.Status.State, c.Status.Allocations, n0)
			}

			// The work that was there before the hold ends on n0 and on
			// one other node; the third stays full.
			clock.Advance(time.Minute)
			var n1 string
			for n := range byNode {
				if n != n0 && (n1 == "" || n < n1) {
					n1 = n
				}
			}
			for _, n := range []string{n0, n1} {
				for _, id := range byNode[n] {
					if id == small[0] {
						continue
					}
					if _, err := srv.Cancel(t.Context(), team, id); err != nil {
						t.Fatal(err)
					}
				}
			}
			h.cycle()
			h.cycle()
			if w := h.job(wide.ID); w.Status.State != model.StateRunning {
				t.Fatalf("wide: %s %q, want Running", w.Status.State, w.Status.Detail)
			}
			c := h.job(ckpt.ID)
			if c.Status.Preemptions != 1 || len(c.Status.Attempts) == 0 || !strings.Contains(c.Status.Attempts[0].Detail, wide.ID) {
				t.Fatalf("ckpt: %d preemptions, attempts %+v, want evicted for %s", c.Status.Preemptions, c.Status.Attempts, wide.ID)
			}
		})
	}
}
