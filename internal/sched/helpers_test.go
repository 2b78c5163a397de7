package sched_test

import (
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

const (
	h100 = "ND96-H100x8-IB"
	a100 = "ND96-A100x8-IB"
	t4x4 = "NC64-T4x4"
)

var now = Epoch.Add(24 * time.Hour)

// twoLeaves is an eastus IB cluster with two leaf groups of two H100 nodes,
// and a westeurope ethernet cluster with two 4×T4 nodes.
func twoLeaves() *World {
	return NewWorld().
		Region("eastus", "us", model.FabricInfiniBand).Rack("r1", 0).
		Nodes("h-l1", 2, h100, "l1").Nodes("h-l2", 2, h100, "l2").
		Region("westeurope", "eu", model.FabricEthernet).Rack("r2", 0).
		Nodes("t4", 2, t4x4, "").
		Tenant("alice", "").Tenant("bob", "")
}

func schedule(t *testing.T, w *World) sched.Plan {
	t.Helper()
	if err := w.Validate(); err != nil {
		t.Fatalf("invalid world: %v", err)
	}
	return sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime}).Schedule(w.Snapshot(), now)
}

func bindOf(p sched.Plan, job string) (sched.Bind, bool) {
	for _, b := range p.Binds {
		if b.Job == job {
			return b, true
		}
	}
	return sched.Bind{}, false
}

func pendingOf(p sched.Plan, job string) (sched.Pending, bool) {
	for _, x := range p.Pending {
		if x.Job == job {
			return x, true
		}
	}
	return sched.Pending{}, false
}

// expect checks one job's outcome: a reason, or ReasonNone for a bind.
func expect(t *testing.T, p sched.Plan, job string, want sched.Reason) {
	t.Helper()
	if want == sched.ReasonNone {
		if _, ok := bindOf(p, job); !ok {
			pd, _ := pendingOf(p, job)
			t.Fatalf("%s: want bound, got pending %s: %s", job, pd.Reason, pd.Detail)
		}
		return
	}
	pd, ok := pendingOf(p, job)
	if !ok {
		t.Fatalf("%s: want pending %s, got bound", job, want)
	}
	if pd.Reason != want {
		t.Fatalf("%s: want %s, got %s: %s", job, want, pd.Reason, pd.Detail)
	}
	if pd.Detail == "" {
		t.Fatalf("%s: pending %s without a detail", job, pd.Reason)
	}
}
