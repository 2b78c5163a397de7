package sched_test

import (
	"encoding/json"
	"testing"

	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/sched/schedtest"
)

// Sparing victims in runs (spareInBlocks) decides what sparing them one
// trial each decides: the same Plan, victims included, on busy worlds
// where hundreds of victims are read for one job and a few are kept.
func TestSpareInBlocksMatchesOneByOne(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		w, err := schedtest.NewBusy(schedtest.BusyConfig{Nodes: 1000, Pending: 4000, Fill: 0.9, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		cycle := func() []byte {
			p := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime}).Schedule(w.World.Snapshot(), w.Now)
			if len(p.Preemptions) == 0 {
				t.Fatalf("seed %d: no preemptions to compare", seed)
			}
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		blocks := cycle()
		restore := sched.SpareOneByOne()
		one := cycle()
		restore()
		if string(blocks) != string(one) {
			t.Fatalf("seed %d: the Plans differ (%d and %d bytes of JSON)", seed, len(blocks), len(one))
		}
	}
}

// busyPlans is the JSON of the Plans of six cycles of a busy world (seed),
// a first cycle with thousands of preemptions and the steady cycles after
// it, on a Scheduler as the engine drives it, and how many jobs preempted
// (each once a cycle).
func busyPlans(t *testing.T, seed uint64) ([]byte, int) {
	t.Helper()
	w, err := schedtest.NewBusy(schedtest.BusyConfig{Nodes: 1000, Pending: 4000, Fill: 0.9, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	s := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime})
	var out []byte
	preemptors := 0
	for c := 0; c < 6; c++ {
		p := s.Schedule(w.World.Snapshot(), w.Now)
		seen := map[string]bool{}
		for _, x := range p.Preemptions {
			if !seen[x.For] {
				seen[x.For] = true
				preemptors++
			}
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
		if err := w.Apply(p); err != nil {
			t.Fatal(err)
		}
		w.Step()
	}
	if preemptors == 0 {
		t.Fatalf("seed %d: no preemptions to compare", seed)
	}
	return out, preemptors
}

// Holding back the moves of cold nodes during a preemption (cold.go)
// decides what moving every victim at once decides: the same Plans, over
// a first cycle with thousands of preemptions and the steady cycles after
// it.
func TestColdNodesMatchEagerMoves(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		cold, _ := busyPlans(t, seed)
		restore := sched.EagerMoves()
		eager, _ := busyPlans(t, seed)
		restore()
		if string(cold) != string(eager) {
			t.Fatalf("seed %d: the Plans differ (%d and %d bytes of JSON)", seed, len(cold), len(eager))
		}
	}
}

// Deciding a preemption on the victims of the domain that first has room
// (onedomain.go) gives the Plans the whole search gives, over a first cycle
// with thousands of preemptions (gangs, whole GPUs, fractions) and the
// steady cycles after it; most of the jobs that preempt are decided that
// way.
func TestOneDomainMatchesTheSearch(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		count, stop := sched.CountOneDomain()
		fast, preemptors := busyPlans(t, seed)
		answered := count()
		stop()
		restore := sched.OneDomainOff()
		whole, _ := busyPlans(t, seed)
		restore()
		if string(fast) != string(whole) {
			t.Fatalf("seed %d: the Plans differ (%d and %d bytes of JSON)", seed, len(fast), len(whole))
		}
		if answered*2 < preemptors {
			t.Errorf("seed %d: one domain decided %d searches; %d jobs preempted", seed, answered, preemptors)
		}
		t.Logf("seed %d: one domain decided %d searches; %d jobs preempted", seed, answered, preemptors)
	}
}
