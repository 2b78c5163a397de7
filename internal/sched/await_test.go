package sched_test

import (
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// TestNodesKeptForAJobAwaitingPreemption: on the one 8-GPU node, spot work
// started a minute ago holds four GPUs, so job j (eight GPUs) waits for its
// protection to end. The four free GPUs there then take no work j could
// evict — else it would be protected in turn and j wait again — but still
// take work j may not evict, and work its partition's guarantee covers.
func TestNodesKeptForAJobAwaitingPreemption(t *testing.T) {
	spot := model.ClassSpot
	for _, tc := range []struct {
		name   string
		class  model.Class // of j
		newbie func(w *World)
		want   sched.Reason // of the newcomer n
	}{
		{"spot work stays off the kept node", model.ClassStandard,
			func(w *World) { w.Job("n", "bob").GPUs(1, 4).Class(spot) }, sched.InsufficientCapacity},
		{"a lower class beyond any guarantee stays off", model.ClassReserved,
			func(w *World) { w.Job("n", "bob").GPUs(1, 4) }, sched.InsufficientCapacity},
		{"work of the waiting job's class uses the node", model.ClassStandard,
			func(w *World) { w.Job("n", "bob").GPUs(1, 4) }, sched.ReasonNone},
		{"a lower class that its partition's guarantee covers uses the node", model.ClassReserved,
			func(w *World) {
				w.Partition("p", "eastus", "H100", 8).Tenant("carol", "p")
				w.Job("n", "carol").GPUs(1, 4)
			}, sched.ReasonNone},
		// Kept nodes never keep a partition below its guarantee, a job
		// larger than what it is owed included (2 of 4 GPUs here): on the
		// simulated week a 1×4 job of a partition 1 GPU short waited 14
		// minutes on nodes kept for its own tenant's gang.
		{"a lower class of a partition below its guarantee uses the node beyond what it is owed", model.ClassReserved,
			func(w *World) {
				w.Partition("p", "eastus", "H100", 2).Tenant("carol", "p")
				w.Job("n", "carol").GPUs(1, 4)
			}, sched.ReasonNone},
		{"a lower class of a partition at its guarantee stays off", model.ClassReserved,
			func(w *World) {
				w.Partition("p", "eastus", "H100", 2).Tenant("carol", "p")
				w.Job("c", "carol").GPUs(1, 2).Running(now.Add(-time.Hour), On("h-1", 4, 5))
				w.Job("n", "carol").GPUs(1, 2)
			}, sched.InsufficientCapacity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := oneNode()
			w.Job("s", "bob").GPUs(1, 4).Class(spot).Running(now.Add(-time.Minute), On("h-1", 0, 1, 2, 3))
			w.Job("j", "alice").GPUs(1, 8).Class(tc.class)
			tc.newbie(w)
			p := schedule(t, w)
			expect(t, p, "j", sched.AwaitingPreemption)
			expect(t, p, "n", tc.want)
			if tc.want != sched.ReasonNone {
				pend, _ := pendingOf(p, "n")
				if !strings.Contains(pend.Detail, "kept for job j") {
					t.Errorf("n's detail does not name the job the node is kept for: %q", pend.Detail)
				}
			}
		})
	}
}

// TestKeptNodesLetTheWaitingJobStart runs the one node minute by minute
// while spot work keeps arriving: the job that waits for the protected
// spot work starts once its protection ends, not a protection later.
func TestKeptNodesLetTheWaitingJobStart(t *testing.T) {
	w := oneNode()
	w.Job("s0", "bob").GPUs(1, 4).Class(model.ClassSpot).Running(now.Add(-time.Minute), On("h-1", 0, 1, 2, 3))
	w.Job("j", "alice").GPUs(1, 8)
	core := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime})
	for m := 0; m <= int(sched.DefaultMinRunTime/time.Minute)+1; m++ {
		at := now.Add(time.Duration(m) * time.Minute)
		w.Job("s"+string(rune('a'+m)), "bob").GPUs(1, 4).Class(model.ClassSpot).Submitted(at)
		p := core.Schedule(w.Snapshot(), at)
		if err := p.Apply(w.Jobs, at); err != nil {
			t.Fatal(err)
		}
		if _, ok := bindOf(p, "j"); ok {
			if late := at.Sub(now.Add(-time.Minute).Add(sched.DefaultMinRunTime)); late > 0 {
				t.Errorf("j started %s after s0's protection ended", late)
			}
			return
		}
	}
	t.Fatalf("j did not start within a protection and a minute")
}

// TestReservationNodesKeptForItsWaitingOwner: alice reserved both nodes;
// bob's spot work started a minute ago on h-1, so alice's 2-node gang
// waits for its protection. Spot work arriving now stays off h-2, the
// reservation's free node, too: started there, it would be protected when
// the gang's victim on h-1 no longer is, and the gang wait again.
func TestReservationNodesKeptForItsWaitingOwner(t *testing.T) {
	w := oneRegion(2).Reserve("r", "alice", h100, "eastus", 2, time.Time{}, time.Time{})
	w.Job("s", "bob").GPUs(1, 4).Class(model.ClassSpot).Running(now.Add(-time.Minute), On("h-1", 0, 1, 2, 3))
	w.Job("j", "alice").GPUs(2, 8).Reservation("r")
	w.Job("n", "bob").GPUs(1, 4).Class(model.ClassSpot)
	p := schedule(t, w)
	expect(t, p, "j", sched.AwaitingPreemption)
	expect(t, p, "n", sched.InsufficientCapacity)
	if pend, _ := pendingOf(p, "n"); !strings.Contains(pend.Detail, "kept for job j") {
		t.Errorf("n's detail does not name the job the nodes are kept for: %q", pend.Detail)
	}
}

// TestAGangKeepsEveryNodeItWouldTake: j (2×8) needs both nodes; spot work
// holds four GPUs of each, protected on h-1 (started a minute ago), not on
// h-2 (an hour ago). j waits for h-1's protection, and h-2 is kept too:
// the four GPUs free there take no spot work, which would be protected
// when h-1's victim no longer is, and j wait another protection. Keeping
// only the protected victim's node let the week's 2-node gangs wait for
// spot pair after pair (internal-ai's violation minutes, BENCHMARKS.md).
func TestAGangKeepsEveryNodeItWouldTake(t *testing.T) {
	spot := model.ClassSpot
	w := oneRegion(2)
	w.Job("s1", "bob").GPUs(1, 4).Class(spot).Running(now.Add(-time.Minute), On("h-1", 0, 1, 2, 3))
	w.Job("s2", "bob").GPUs(1, 4).Class(spot).Running(now.Add(-time.Hour), On("h-2", 0, 1, 2, 3))
	w.Job("j", "alice").GPUs(2, 8)
	w.Job("n", "bob").GPUs(1, 4).Class(spot)
	p := schedule(t, w)
	expect(t, p, "j", sched.AwaitingPreemption)
	expect(t, p, "n", sched.InsufficientCapacity)
	if len(p.Preemptions) != 0 {
		t.Errorf("j evicted part of what it waits for: %+v", p.Preemptions)
	}
}
