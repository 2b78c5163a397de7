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
