package spec

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/allot-dev/allot/internal/model"
)

// maxNodes bounds the nodes one fleet file may describe, prefixes expanded.
const maxNodes = 100_000

// fleetFile is the layout of a fleet file.
type fleetFile struct {
	SKUs    []skuEntry    `yaml:"skus"`
	Regions []regionEntry `yaml:"regions"`
	Prices  []priceEntry  `yaml:"prices"`
}

type skuEntry struct {
	Name         string    `yaml:"name"`
	Series       string    `yaml:"series"`
	GPUModel     string    `yaml:"gpu_model"`
	GPUMemoryGiB int       `yaml:"gpu_memory_gib"`
	GPUs         int       `yaml:"gpus"`
	NVLink       bool      `yaml:"nvlink"`
	VCPU         int       `yaml:"vcpu"`
	MemoryGiB    int       `yaml:"memory_gib"`
	Interconnect string    `yaml:"interconnect"`
	Power        kilowatts `yaml:"power_kw"`
	PricePerHour float64   `yaml:"price_per_hour"`
	SpotPrice    float64   `yaml:"spot_price_per_hour"`
	ReservedRate float64   `yaml:"reserved_price_per_hour"`
	VCPUPrice    float64   `yaml:"price_per_vcpu_hour"`
	MemoryPrice  float64   `yaml:"price_per_gib_hour"`
}

type regionEntry struct {
	Name          string         `yaml:"name"`
	Residency     string         `yaml:"residency"`
	PowerHeadroom kilowatts      `yaml:"power_headroom_kw"`
	Clusters      []clusterEntry `yaml:"clusters"`
}

type clusterEntry struct {
	Name   string      `yaml:"name"`
	Fabric string      `yaml:"fabric"`
	Racks  []rackEntry `yaml:"racks"`
}

type rackEntry struct {
	Name     string      `yaml:"name"`
	PowerCap kilowatts   `yaml:"power_cap_kw"`
	Nodes    []nodeEntry `yaml:"nodes"`
}

// nodeEntry is one node (Name) or a run of alike nodes (Prefix, Count and
// Start).
type nodeEntry struct {
	Name   string   `yaml:"name"`
	Prefix string   `yaml:"prefix"`
	Count  *int     `yaml:"count"`
	Start  *int     `yaml:"start"`
	SKU    string   `yaml:"sku"`
	Leaf   string   `yaml:"leaf"`
	Health string   `yaml:"health"`
	GPUIDs []string `yaml:"gpu_ids"`
}

// ReadFleet reads the fleet file at path. See ParseFleet.
func ReadFleet(path string) (*model.Fleet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read fleet: %w", err)
	}
	return ParseFleet(path, data)
}

// ParseFleet reads a fleet file named name: the SKUs it adds to the built-in
// catalog and its regions, clusters, racks and nodes. The fleet it returns
// has passed model.Fleet.Validate; any error is an *Error.
func ParseFleet(name string, data []byte) (*model.Fleet, error) {
	docs, err := parseDocuments(name, data)
	if err != nil {
		return nil, err
	}
	root, err := single(name, docs, "a fleet (regions: …)")
	if err != nil {
		return nil, err
	}
	d := newDecoder(name)
	var ff fleetFile
	if err := d.decode(root, "", reflect.ValueOf(&ff).Elem()); err != nil {
		return nil, err
	}
	f := &model.Fleet{Catalog: model.BuiltinCatalog()}
	for i, s := range ff.SKUs {
		err := f.Catalog.Add(model.SKU{
			Name: s.Name, Series: s.Series, GPUModel: s.GPUModel, GPUMemoryGiB: s.GPUMemoryGiB,
			GPUs: s.GPUs, NVLink: s.NVLink, VCPU: s.VCPU, MemoryGiB: s.MemoryGiB,
			Interconnect: model.Fabric(s.Interconnect), PowerW: int64(s.Power),
			PricePerHour: s.PricePerHour, SpotPrice: s.SpotPrice, ReservedRate: s.ReservedRate,
			VCPUPrice: s.VCPUPrice, MemoryPrice: s.MemoryPrice,
		})
		if err != nil {
			return nil, d.fromModel(root, model.Prefix(fmt.Sprintf("skus[%d]", i), err), nil)
		}
	}
	// paths[i] is where f.Nodes[i] is written in the file.
	var paths []string
	for ri, r := range ff.Regions {
		region := model.Region{Name: r.Name, Residency: r.Residency, PowerHeadroomW: int64(r.PowerHeadroom)}
		for ci, c := range r.Clusters {
			cluster := model.Cluster{Name: c.Name, Fabric: model.Fabric(c.Fabric)}
			for ki, k := range c.Racks {
				cluster.Racks = append(cluster.Racks, model.Rack{Name: k.Name, PowerCapW: int64(k.PowerCap)})
				for ni, n := range k.Nodes {
					path := fmt.Sprintf("regions[%d].clusters[%d].racks[%d].nodes[%d]", ri, ci, ki, ni)
					names, err := d.nodeNames(root, path, n, len(f.Nodes))
					if err != nil {
						return nil, err
					}
					health := model.Health(n.Health)
					if health == "" {
						health = model.NodeReady
					}
					for _, name := range names {
						f.Nodes = append(f.Nodes, model.Node{
							Name: name, SKU: n.SKU, Region: r.Name, Cluster: c.Name,
							Leaf: n.Leaf, Rack: k.Name, Health: health, GPUIDs: n.GPUIDs,
						})
						paths = append(paths, path)
					}
				}
			}
			region.Clusters = append(region.Clusters, cluster)
		}
		f.Regions = append(f.Regions, region)
	}
	f.Prices = fleetPrices(f.Catalog, ff.Prices)
	if err := f.Validate(); err != nil {
		return nil, d.fromModel(root, err, func(field string) string { return nodePath(field, paths) })
	}
	return f, nil
}

// nodeNames returns the names of the nodes an entry describes; have is the
// number of nodes described before it.
func (d *decoder) nodeNames(root *yaml.Node, path string, n nodeEntry, have int) ([]string, error) {
	switch {
	case have >= maxNodes:
		return nil, d.errorAtPath(root, path, "a fleet may have at most %d nodes", maxNodes)
	case n.Name != "" && n.Prefix != "":
		return nil, d.errorAtPath(root, path+".prefix", "set name for one node or prefix and count for several, not both")
	case n.Name != "":
		if n.Count != nil || n.Start != nil {
			return nil, d.errorAtPath(root, path+".name", "count and start go with prefix, not name")
		}
		return []string{n.Name}, nil
	case n.Prefix == "":
		return nil, d.errorAtPath(root, path, "a node needs a name, or a prefix and a count")
	case n.Count == nil:
		return nil, d.errorAtPath(root, path+".count", "prefix needs a count")
	case *n.Count < 1 || *n.Count > maxNodes-have:
		return nil, d.errorAtPath(root, path+".count", "must be between 1 and %d, got %d", maxNodes-have, *n.Count)
	case n.Start != nil && (*n.Start < 0 || *n.Start > 1_000_000_000):
		return nil, d.errorAtPath(root, path+".start", "must be between 0 and 1000000000, got %d", *n.Start)
	case len(n.GPUIDs) > 0:
		return nil, d.errorAtPath(root, path+".gpu_ids", "gpu_ids name the GPUs of one node; use name, not prefix")
	}
	start := 1
	if n.Start != nil {
		start = *n.Start
	}
	width := max(2, len(strconv.Itoa(start+*n.Count-1)))
	names := make([]string, *n.Count)
	for i := range names {
		names[i] = fmt.Sprintf("%s%0*d", n.Prefix, width, start+i)
	}
	return names, nil
}

var nodeField = regexp.MustCompile(`^nodes\[(\d+)\]`)

// nodePath rewrites a model path into the fleet's node list ("nodes[7].sku")
// to where that node is written in the file.
func nodePath(field string, paths []string) string {
	m := nodeField.FindStringSubmatchIndex(field)
	if m == nil {
		return field
	}
	i, err := strconv.Atoi(field[m[2]:m[3]])
	if err != nil || i >= len(paths) {
		return field
	}
	return paths[i] + field[m[1]:]
}
