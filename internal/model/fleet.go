package model

import "fmt"

// Fleet is the provider's hardware: regions, their clusters and racks, and
// the nodes in them. Leaf groups (the nodes under one InfiniBand leaf switch)
// are named on nodes.
type Fleet struct {
	Catalog Catalog
	Regions []Region
	Nodes   []Node
	// Prices are per-region prices of SKUs (price.go); the catalog's
	// rates hold where none is set.
	Prices []Price
}

// Region is a geographic location with its own data-residency zone.
type Region struct {
	Name           string
	Residency      string // e.g. "us", "eu": where data placed here may legally live
	PowerHeadroomW int64  // power the region's sites can still draw; 0 means unlimited
	Clusters       []Cluster
}

// Cluster is a set of racks on one network fabric.
type Cluster struct {
	Name   string
	Fabric Fabric
	Racks  []Rack
}

// Rack groups nodes under one power feed.
type Rack struct {
	Name      string
	PowerCapW int64 // 0 means no cap
}

// Health is a node's readiness as last reported.
type Health string

const (
	NodeReady    Health = "Ready"
	NodeNotReady Health = "NotReady"
	NodeDraining Health = "Draining" // running work continues, nothing new is placed
)

// Node is one machine. Its GPUs, CPU and memory come from its SKU.
type Node struct {
	Name    string
	SKU     string
	Region  string
	Cluster string
	Leaf    string // InfiniBand leaf group; nodes on one leaf talk without crossing a spine
	Rack    string
	Health  Health
	GPUIDs  []string // optional device UUIDs as discovered by the agent
}

// Validate checks the fleet's internal references: every node names a known
// SKU and an existing region, cluster and rack, names are unique.
func (f *Fleet) Validate() error {
	if len(f.Regions) == 0 {
		return fieldErr("regions", "a fleet needs at least one region")
	}
	type place struct{ region, cluster string }
	clusters := map[string]place{}
	racks := map[string]string{} // rack -> cluster
	regions := map[string]bool{}
	for i, r := range f.Regions {
		p := fmt.Sprintf("regions[%d]", i)
		if r.Name == "" {
			return fieldErr(p+".name", "must not be empty")
		}
		if regions[r.Name] {
			return fieldErr(p+".name", "region %q is defined twice", r.Name)
		}
		regions[r.Name] = true
		if r.Residency == "" {
			return fieldErr(p+".residency", "must not be empty (e.g. us, eu)")
		}
		if r.PowerHeadroomW < 0 {
			return fieldErr(p+".power_headroom_kw", "must not be negative")
		}
		for j, c := range r.Clusters {
			cp := fmt.Sprintf("%s.clusters[%d]", p, j)
			if c.Name == "" {
				return fieldErr(cp+".name", "must not be empty")
			}
			if _, dup := clusters[c.Name]; dup {
				return fieldErr(cp+".name", "cluster %q is defined twice", c.Name)
			}
			if !c.Fabric.Valid() {
				return fieldErr(cp+".fabric", "must be infiniband, roce or ethernet, got %q", c.Fabric)
			}
			clusters[c.Name] = place{r.Name, c.Name}
			for k, rk := range c.Racks {
				rp := fmt.Sprintf("%s.racks[%d]", cp, k)
				if rk.Name == "" {
					return fieldErr(rp+".name", "must not be empty")
				}
				if _, dup := racks[rk.Name]; dup {
					return fieldErr(rp+".name", "rack %q is defined twice", rk.Name)
				}
				if rk.PowerCapW < 0 {
					return fieldErr(rp+".power_cap_kw", "must not be negative")
				}
				racks[rk.Name] = c.Name
			}
		}
	}
	names := map[string]bool{}
	for i, n := range f.Nodes {
		p := fmt.Sprintf("nodes[%d]", i)
		switch {
		case n.Name == "":
			return fieldErr(p+".name", "must not be empty")
		case names[n.Name]:
			return fieldErr(p+".name", "node %q is defined twice", n.Name)
		}
		names[n.Name] = true
		sku, ok := f.Catalog[n.SKU]
		if !ok {
			return fieldErr(p+".sku", "unknown SKU %q%s", n.SKU, DidYouMean(n.SKU, f.Catalog.Names()))
		}
		pl, ok := clusters[n.Cluster]
		if !ok {
			return fieldErr(p+".cluster", "unknown cluster %q", n.Cluster)
		}
		if n.Region != pl.region {
			return fieldErr(p+".region", "cluster %q is in region %q, not %q", n.Cluster, pl.region, n.Region)
		}
		if n.Rack != "" && racks[n.Rack] != n.Cluster {
			return fieldErr(p+".rack", "rack %q is not in cluster %q", n.Rack, n.Cluster)
		}
		switch n.Health {
		case NodeReady, NodeNotReady, NodeDraining:
		default:
			return fieldErr(p+".health", "must be Ready, NotReady or Draining, got %q", n.Health)
		}
		if len(n.GPUIDs) != 0 && len(n.GPUIDs) != sku.GPUs {
			return fieldErr(p+".gpu_ids", "SKU %s has %d GPUs, %d IDs given", sku.Name, sku.GPUs, len(n.GPUIDs))
		}
	}
	return f.validatePrices()
}

// Region returns the region named name.
func (f *Fleet) Region(name string) (Region, bool) {
	for _, r := range f.Regions {
		if r.Name == name {
			return r, true
		}
	}
	return Region{}, false
}

// GPUCount returns how many GPUs of model the fleet has in region; an empty
// model counts every GPU.
func (f *Fleet) GPUCount(region, model string) int {
	n := 0
	for _, node := range f.Nodes {
		s := f.Catalog[node.SKU]
		if node.Region == region && (model == "" || s.GPUModel == model) {
			n += s.GPUs
		}
	}
	return n
}

// NodeCount is how many nodes of sku region has, whatever their health.
func (f *Fleet) NodeCount(region, sku string) int {
	n := 0
	for _, node := range f.Nodes {
		if node.Region == region && node.SKU == sku {
			n++
		}
	}
	return n
}
