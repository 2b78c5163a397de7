package spec

import (
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

func TestExamples(t *testing.T) {
	f, err := ReadFleet("../../examples/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.Nodes); n < 30 || n > 45 {
		t.Errorf("fleet has %d nodes, want about 40", n)
	}
	for _, c := range []struct {
		region, model string
		gpus          int
	}{
		{"eastus", "H100", 64},
		{"westus", "A100", 6*8 + 2},
		{"westeurope", "H100", 32},
	} {
		if got := f.GPUCount(c.region, c.model); got != c.gpus {
			t.Errorf("%s has %d %s GPUs, want %d", c.region, got, c.model, c.gpus)
		}
	}
	notReady := 0
	for _, n := range f.Nodes {
		if n.Health == model.NodeNotReady {
			notReady++
		}
	}
	if notReady != 1 {
		t.Errorf("%d nodes are NotReady, want 1", notReady)
	}
	if !anyRackOverCommitted(f) {
		t.Error("no rack's power cap is below the full-load draw of its nodes; PowerCapped cannot occur")
	}

	ten, err := ReadTenancy("../../examples/tenants.yaml", f)
	if err != nil {
		t.Fatal(err)
	}
	if got := ten.Partitions[0].Guarantees[0].GPUs; got != 57 {
		t.Errorf("internal-ai eastus H100 guarantee = %d GPUs, want 57 (90%% of 64)", got)
	}
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	var active, future int
	for _, r := range ten.Reservations {
		switch {
		case r.ActiveAt(now):
			active++
		case r.Start.After(now):
			future++
		}
	}
	if active != 1 || future != 1 {
		t.Errorf("%d active and %d future reservations at %v, want 1 and 1", active, future, now)
	}
}

func anyRackOverCommitted(f *model.Fleet) bool {
	draw := map[string]int64{}
	for _, n := range f.Nodes {
		draw[n.Rack] += f.Catalog[n.SKU].PowerW
	}
	for _, r := range f.Regions {
		for _, c := range r.Clusters {
			for _, k := range c.Racks {
				if k.PowerCapW > 0 && draw[k.Name] > k.PowerCapW {
					return true
				}
			}
		}
	}
	return false
}
