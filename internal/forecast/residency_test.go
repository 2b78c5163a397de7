package forecast_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/forecast"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// TestResidencyRandomized runs region choice and the core together over
// many cycles on random fleets, as the server drives them: a job allowed
// in several regions is pinned at submit to the best by Rank, and moved by
// Move once it waited past a threshold; the core sees the pinned job. No
// job may ever bind outside its residency or its allowed regions.
func TestResidencyRandomized(t *testing.T) {
	zones := []string{"us", "eu", "asia"}
	skus := []string{"NC4-T4x1", "NC96-A100x4", "ND96-H100x8-IB"}
	models := []string{"T4", "A100", "H100"}
	const seeds, cycles, step, moveAfter = 20, 40, 5 * time.Minute, 15 * time.Minute
	binds, moves, pinned := 0, 0, 0
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 11))
		w := NewWorld().Tenant("a", "").Tenant("b", "")
		var regions []string
		for i := range 2 + rng.IntN(4) {
			name := fmt.Sprintf("r%d", i)
			regions = append(regions, name)
			w.Region(name, zones[rng.IntN(len(zones))], model.FabricEthernet)
			for k, sku := range skus {
				if n := rng.IntN(3); n > 0 {
					w.Nodes(fmt.Sprintf("%s-%d", name, k), n, sku, name+"-leaf")
				}
			}
		}
		if err := w.Validate(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		fc := forecast.New(sched.Config{MinRunTime: sched.DefaultMinRunTime}, forecast.Options{MaxEvents: 16})
		core := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime})
		chosen := map[string]string{}      // job -> region chosen
		chosenAt := map[string]time.Time{} // when
		ends := map[string]time.Time{}
		now := Epoch
		view := func() *sched.Snapshot {
			jobs := make([]*model.Job, len(w.Jobs))
			for i, j := range w.Jobs {
				jobs[i] = j
				if j.Status.State == model.StateQueued && chosen[j.ID] != "" {
					jobs[i] = forecast.Pin(j, chosen[j.ID])
				}
			}
			return &sched.Snapshot{Fleet: &w.Fleet, Tenancy: &w.Tenancy, Jobs: jobs}
		}
		weigh := func(j *model.Job) []forecast.RegionOption {
			est := fc.PerRegion(view(), now, j)
			opts := forecast.Rank(&w.Fleet, &j.Spec, est, now, forecast.DefaultHorizon, forecast.DefaultWeights)
			for _, o := range opts {
				if !fits(&w.Fleet, &j.Spec, o.Region) {
					t.Fatalf("seed %d: Rank offered %s to %s (regions %v, residency %q)", seed, o.Region, j.ID,
						j.Spec.Placement.Regions, j.Spec.Placement.Residency)
				}
			}
			return opts
		}
		for c := range cycles {
			// Submit a few jobs with random limits.
			for k := range rng.IntN(4) {
				id := fmt.Sprintf("j%d-%d", c, k)
				b := w.Job(id, []string{"a", "b"}[rng.IntN(2)]).Submitted(now).GPUs(1+rng.IntN(2), 1+rng.IntN(4))
				b.Models(models[rng.IntN(len(models))])
				if rng.IntN(3) > 0 {
					b.Residency(zones[rng.IntN(len(zones))])
				}
				for _, r := range regions {
					if rng.IntN(2) == 0 {
						b.Job.Spec.Placement.Regions = append(b.Job.Spec.Placement.Regions, r)
					}
				}
				if rng.IntN(2) == 0 {
					b.Job.Spec.Placement.DataRegion = regions[rng.IntN(len(regions))]
				}
				if rng.IntN(4) == 0 {
					b.Class(model.ClassSpot)
				}
				b.Job.Spec.Duration = time.Duration(10+rng.IntN(120)) * time.Minute
				if len(b.Job.Spec.Placement.Regions) >= 2 {
					if opts := weigh(b.Job); len(opts) > 0 {
						chosen[id], chosenAt[id] = opts[0].Region, now
						pinned++
					}
				}
			}
			// Move work that waited past the threshold.
			for _, j := range w.Jobs {
				if j.Status.State != model.StateQueued || chosen[j.ID] == "" || now.Sub(chosenAt[j.ID]) < moveAfter {
					continue
				}
				// Weighed again after another threshold, moved or not.
				to := forecast.Move(weigh(j), chosen[j.ID])
				if to != "" {
					chosen[j.ID] = to
					moves++
				}
				chosenAt[j.ID] = now
			}
			// End what is due, then one cycle of the core on the pinned view.
			live := w.Jobs[:0]
			for _, j := range w.Jobs {
				if e, ok := ends[j.ID]; ok && !e.After(now) {
					continue
				}
				live = append(live, j)
			}
			w.Jobs = live
			snap := view()
			plan := core.Schedule(snap, now)
			if err := plan.Apply(w.Jobs, now); err != nil {
				t.Fatal(err)
			}
			nodeRegion := map[string]string{}
			for _, n := range w.Fleet.Nodes {
				nodeRegion[n.Name] = n.Region
			}
			for _, b := range plan.Binds {
				var j *model.Job
				for _, x := range w.Jobs {
					if x.ID == b.Job {
						j = x
					}
				}
				for _, p := range b.Nodes {
					if r := nodeRegion[p.Node]; !fits(&w.Fleet, &j.Spec, r) {
						t.Fatalf("seed %d: %s bound in %s (regions %v, residency %q, chosen %q)", seed, j.ID, r,
							j.Spec.Placement.Regions, j.Spec.Placement.Residency, chosen[j.ID])
					}
				}
				// Work runs between a third and 1.7 times its stated
				// duration, so estimates go stale and moves happen.
				ends[b.Job] = now.Add(time.Duration(float64(j.Spec.Duration) * (0.3 + 1.4*rng.Float64())))
				binds++
			}
			now = now.Add(step)
		}
	}
	t.Logf("%d seeds × %d cycles: %d jobs pinned at submit, %d moved, %d binds, none outside residency or allowed regions",
		seeds, cycles, pinned, moves, binds)
	if binds == 0 || pinned == 0 {
		t.Fatal("the random workload bound or pinned nothing: the test checks nothing")
	}
}

// fits reports whether spec may run in region: among its allowed regions
// and in its residency zone.
func fits(f *model.Fleet, spec *model.JobSpec, region string) bool {
	rg, ok := f.Region(region)
	return ok && allowedIn(spec.Placement.Regions, region) &&
		(spec.Placement.Residency == "" || spec.Placement.Residency == rg.Residency)
}
