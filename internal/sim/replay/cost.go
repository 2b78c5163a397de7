package replay

import (
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/price"
)

// gpuHourPrice is what one GPU of the replay's SKU costs in the replay's
// region on demand, USD per GPU-hour, from the fleet's price table (package
// price): the node's on-demand rate times one GPU's share of the node, as
// the server bills an instance. It is 0 when the table does not know SKU.
func gpuHourPrice(f *model.Fleet) float64 {
	r, ok := price.NewTable(f).Rates(SKU, Region)
	if !ok {
		return 0
	}
	one := model.Resources{InstanceCount: 1, GPUsPerInstance: 1}
	return r.Of(price.OnDemand, 0) * price.Share(f.Catalog[SKU], one)
}

// bill books what the attempt of j that stops now held: the GPUs its
// allocations took (an uneven gang's whole nodes, not only the GPUs it
// asked for) times the seconds since it started, lost work included.
func (s *sim) bill(j *simJob) {
	held := 0
	for _, g := range j.took {
		held += g
	}
	s.vcBilled[j.vc] += int64(held) * (s.now - j.runStart)
}
