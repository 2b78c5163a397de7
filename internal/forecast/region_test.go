package forecast_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/forecast"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// threeRegions has two us regions and one eu region: eastus with A100
// (4-GPU nodes), westus with T4 and A100, westeurope with T4.
func threeRegions() *World {
	return NewWorld().
		Region("eastus", "us", model.FabricEthernet).Nodes("e", 2, "NC96-A100x4", "le").
		Region("westus", "us", model.FabricEthernet).Nodes("w", 2, "NC4-T4x1", "lw").Nodes("wa", 1, "NC96-A100x4", "lw").
		Region("westeurope", "eu", model.FabricEthernet).Nodes("eu", 2, "NC4-T4x1", "leu").
		Tenant("a", "").Tenant("b", "")
}

func TestDistance(t *testing.T) {
	f := &threeRegions().Fleet
	for _, tt := range []struct {
		from, to string
		want     int
	}{{"", "eastus", 0}, {"eastus", "eastus", 0}, {"eastus", "westus", 1}, {"eastus", "westeurope", 2}, {"mars", "eastus", 2}} {
		if got := forecast.Distance(f, tt.from, tt.to); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestRank(t *testing.T) {
	w := threeRegions()
	f := &w.Fleet
	now := Epoch
	at := func(d time.Duration) forecast.Estimate { return forecast.Estimate{Start: now.Add(d)} }
	none := forecast.Estimate{Why: "never"}
	all := func(e, wu, eu forecast.Estimate) map[string]forecast.Estimate {
		return map[string]forecast.Estimate{"eastus": e, "westus": wu, "westeurope": eu}
	}
	tests := []struct {
		name  string
		job   func(b *JobBuilder)
		est   map[string]forecast.Estimate
		order []string
	}{{
		name:  "sooner start first",
		job:   func(b *JobBuilder) { b.Models("A100").Regions("eastus", "westus") },
		est:   all(at(3*time.Hour), at(0), none),
		order: []string{"westus", "eastus"},
	}, {
		name:  "same start: the cheaper SKU (T4 over A100 when either will do)",
		job:   func(b *JobBuilder) { b.Models("A100", "T4").Regions("eastus", "westus") },
		est:   all(at(0), at(0), none),
		order: []string{"westus", "eastus"},
	}, {
		name:  "same start and price: nearer the data",
		job:   func(b *JobBuilder) { b.Models("T4").Job.Spec.Placement.DataRegion = "westeurope" },
		est:   map[string]forecast.Estimate{"westus": at(0), "westeurope": at(0)},
		order: []string{"westeurope", "westus"},
	}, {
		name:  "residency is a hard limit whatever the estimates",
		job:   func(b *JobBuilder) { b.Residency("eu") },
		est:   all(at(0), at(0), at(5*time.Hour)),
		order: []string{"westeurope"},
	}, {
		name:  "allowed regions are a hard limit",
		job:   func(b *JobBuilder) { b.Regions("eastus") },
		est:   all(at(5*time.Hour), at(0), at(0)),
		order: []string{"eastus"},
	}, {
		name:  "no estimate ranks last, however cheap",
		job:   func(b *JobBuilder) { b.Models("A100", "T4").Regions("eastus", "westus") },
		est:   all(at(20*time.Hour), none, none),
		order: []string{"eastus", "westus"},
	}, {
		// westeurope has T4 only: before it was dropped it ranked first
		// when no region had an estimate, its price being 0.
		name:  "a region without a capable SKU is no choice, however cheap",
		job:   func(b *JobBuilder) { b.Models("A100") },
		est:   all(none, none, none),
		order: []string{"eastus", "westus"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewWorld().Job("j", "a")
			tt.job(b)
			got := forecast.Rank(f, &b.Job.Spec, tt.est, now, forecast.DefaultHorizon, forecast.DefaultWeights)
			var order []string
			for i, o := range got {
				order = append(order, o.Region)
				if o.Chosen != (i == 0) {
					t.Errorf("%s chosen %v at rank %d", o.Region, o.Chosen, i)
				}
			}
			if strings.Join(order, ",") != strings.Join(tt.order, ",") {
				t.Fatalf("order %v, want %v (%+v)", order, tt.order, got)
			}
		})
	}
}

func TestPrice(t *testing.T) {
	f := &threeRegions().Fleet
	spec := NewWorld().Job("j", "a").Models("A100", "T4").Job.Spec
	if p, ok := forecast.Price(f, &spec, "westus"); !ok || p != 0.53 {
		t.Errorf("on-demand westus: %v %v, want 0.53 (one T4)", p, ok)
	}
	spec.Priority.Class = model.ClassSpot
	if p, ok := forecast.Price(f, &spec, "westus"); !ok || p != 0.16 {
		t.Errorf("spot westus: %v %v, want 0.16", p, ok)
	}
	spec.Resources.GPUModels = []string{"H100"}
	if _, ok := forecast.Price(f, &spec, "westus"); ok {
		t.Error("a price for H100 in westus, which has none")
	}

	// Nodes the job's lists rule out are no choice: without westus's T4s
	// its price is the A100's; named nodes in eastus only leave eastus.
	spec = NewWorld().Job("j", "a").Models("A100", "T4").Job.Spec
	spec.Placement.ExcludeNodes = []string{"w-1", "w-2"}
	a100Spec := NewWorld().Job("j", "a").Models("A100").Job.Spec
	a100, _ := forecast.Price(f, &a100Spec, "westus")
	if p, ok := forecast.Price(f, &spec, "westus"); !ok || p != a100 {
		t.Errorf("westus without its T4s: %v %v, want the A100's %v", p, ok, a100)
	}
	spec.Placement.ExcludeNodes = nil
	spec.Placement.Nodes = []string{"e-2"}
	if got := forecast.Candidates(f, &spec); fmt.Sprint(got) != "[eastus]" {
		t.Errorf("candidates of a job allowed only e-2: %v, want [eastus]", got)
	}
	spec.Placement.ExcludeNodes = []string{"e-2"}
	if got := forecast.Candidates(f, &spec); len(got) != 0 {
		t.Errorf("candidates of a job whose one allowed node is excluded: %v, want none", got)
	}
}

func TestMove(t *testing.T) {
	at := func(region string, d time.Duration) forecast.RegionOption {
		return forecast.RegionOption{Region: region, Estimate: forecast.Estimate{Start: Epoch.Add(d)}}
	}
	unknown := forecast.RegionOption{Region: "eastus"}
	for _, tt := range []struct {
		name    string
		options []forecast.RegionOption
		current string
		want    string
	}{
		{"sooner elsewhere", []forecast.RegionOption{at("westus", 0), at("eastus", time.Hour)}, "eastus", "westus"},
		{"already best", []forecast.RegionOption{at("eastus", 0), at("westus", time.Hour)}, "eastus", ""},
		{"best by score but not sooner", []forecast.RegionOption{at("westus", time.Hour), at("eastus", time.Hour)}, "eastus", ""},
		{"current has no estimate", []forecast.RegionOption{at("westus", 3*time.Hour), unknown}, "eastus", "westus"},
		{"nowhere known", []forecast.RegionOption{unknown}, "westus", ""},
		{"no options", nil, "eastus", ""},
	} {
		if got := forecast.Move(tt.options, tt.current); got != tt.want {
			t.Errorf("%s: Move = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestPin(t *testing.T) {
	j := NewWorld().Job("j", "a").Regions("eastus", "westus").Residency("us").Job
	p := forecast.Pin(j, "westus")
	if p == j || strings.Join(p.Spec.Placement.Regions, ",") != "westus" || p.Spec.Placement.Residency != "us" {
		t.Fatalf("Pin westus: %+v", p.Spec.Placement)
	}
	if len(j.Spec.Placement.Regions) != 2 {
		t.Fatal("Pin changed the job it was given")
	}
	if forecast.Pin(j, "westeurope") != j || forecast.Pin(j, "") != j {
		t.Fatal("Pin to a region the job does not allow changed it")
	}
}

// TestPerRegion estimates one job pinned to each of its regions: eastus's
// A100s are busy for two hours, westus has one free.
func TestPerRegion(t *testing.T) {
	w := threeRegions()
	for i, n := range []string{"e-1", "e-2"} {
		w.Job("busy-"+n, "a").GPUs(1, 4).Running(Epoch, On(n, 0, 1, 2, 3)).Job.Spec.Duration = time.Duration(2+i) * time.Hour
	}
	j := w.Job("j", "b").GPUs(1, 4).Models("A100").Regions("eastus", "westus").Job
	f := forecast.New(sched.Config{}, forecast.Options{})
	// The snapshot holds j pinned to eastus, as a driver that chose it
	// shows the core: PerRegion still weighs both.
	snap := w.Snapshot()
	snap.Jobs = append(snap.Jobs[:2:2], forecast.Pin(j, "eastus"))
	est := f.PerRegion(snap, Epoch, j)
	if len(est) != 2 || !est["eastus"].Start.Equal(Epoch.Add(2*time.Hour)) || !est["westus"].Start.Equal(Epoch) {
		t.Fatalf("per region: %+v", est)
	}
	opts := forecast.Rank(&w.Fleet, &w.Jobs[2].Spec, est, Epoch, forecast.DefaultHorizon, forecast.DefaultWeights)
	if opts[0].Region != "westus" || opts[0].Distance != 0 || opts[1].Score <= opts[0].Score {
		t.Fatalf("ranked: %+v", opts)
	}
}

// FuzzRank checks that whatever a job's placement says, Rank and Pin keep
// it inside its allowed regions and residency.
func FuzzRank(f *testing.F) {
	f.Add("eastus,westus", "us", "westeurope", int64(0))
	f.Add("", "eu", "", int64(3600))
	f.Add("westeurope,mars", "", "eastus", int64(-5))
	w := threeRegions()
	fl := &w.Fleet
	f.Fuzz(func(t *testing.T, regions, residency, data string, wait int64) {
		spec := model.JobSpec{Placement: model.Placement{Residency: residency, DataRegion: data},
			Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1}}
		if regions != "" {
			spec.Placement.Regions = strings.Split(regions, ",")
		}
		est := map[string]forecast.Estimate{}
		for i, r := range append([]string{"eastus", "westus", "westeurope", "mars"}, spec.Placement.Regions...) {
			est[r] = forecast.Estimate{Start: Epoch.Add(time.Duration(wait*int64(i+1)) * time.Second)}
		}
		j := &model.Job{ID: "j", Spec: spec}
		for _, o := range forecast.Rank(fl, &spec, est, Epoch, forecast.DefaultHorizon, forecast.DefaultWeights) {
			rg, ok := fl.Region(o.Region)
			if !ok || (residency != "" && rg.Residency != residency) || !allowedIn(spec.Placement.Regions, o.Region) {
				t.Fatalf("Rank offered %s for regions %q residency %q", o.Region, regions, residency)
			}
			p := forecast.Pin(j, o.Region)
			if len(p.Spec.Placement.Regions) != 1 || p.Spec.Placement.Regions[0] != o.Region || p.Spec.Placement.Residency != residency {
				t.Fatalf("Pin %s: %+v", o.Region, p.Spec.Placement)
			}
		}
	})
}

func allowedIn(regions []string, r string) bool {
	if len(regions) == 0 {
		return true
	}
	for _, x := range regions {
		if x == r {
			return true
		}
	}
	return false
}
