package model

import (
	"fmt"
	"sort"
)

// Fabric is the network between the nodes of one cluster.
type Fabric string

const (
	FabricInfiniBand Fabric = "infiniband"
	FabricRoCE       Fabric = "roce"
	FabricEthernet   Fabric = "ethernet"
)

// Valid reports whether f is a known fabric.
func (f Fabric) Valid() bool {
	return f == FabricInfiniBand || f == FabricRoCE || f == FabricEthernet
}

// SKU is a node size: what one machine of that kind brings to the fleet.
type SKU struct {
	Name         string  // e.g. "ND96-H100x8-IB"
	Series       string  // VM family used by quotas, e.g. "ND" (training) or "NC" (compute)
	GPUModel     string  // e.g. "H100"
	GPUMemoryGiB int     // per GPU
	GPUs         int     // GPUs per node
	NVLink       bool    // GPUs inside the node are NVLink-connected
	VCPU         int     // cores
	MemoryGiB    int     // host memory
	Interconnect Fabric  // best fabric the node's NICs support
	PowerW       int64   // draw at full GPU load
	PricePerHour float64 // on-demand USD per node-hour
	SpotPrice    float64 // spot USD per node-hour
	ReservedRate float64 // reserved USD per node-hour
	// VCPUPrice and MemoryPrice are what CPU-only work on a node of the
	// SKU pays per vCPU-hour and per GiB-hour of host memory (package
	// price); zero takes price.DefaultVCPUPrice and DefaultMemoryPrice.
	VCPUPrice, MemoryPrice float64
}

// CPUMilli is the SKU's CPU capacity in milli-cores.
func (s SKU) CPUMilli() int64 { return int64(s.VCPU) * 1000 }

// MemoryMiB is the SKU's host memory in MiB.
func (s SKU) MemoryMiB() int64 { return int64(s.MemoryGiB) * 1024 }

// Validate checks the SKU's fields.
func (s SKU) Validate() error {
	switch {
	case s.Name == "":
		return fieldErr("name", "must not be empty")
	case s.Series == "":
		return fieldErr("series", "must not be empty")
	case s.GPUs < 0 || s.GPUs > 64:
		return fieldErr("gpus", "must be between 0 and 64, got %d", s.GPUs)
	case s.GPUs > 0 && s.GPUModel == "":
		return fieldErr("gpu_model", "must be set when gpus > 0")
	case s.GPUMemoryGiB < 0:
		return fieldErr("gpu_memory_gib", "must not be negative")
	case s.VCPU <= 0:
		return fieldErr("vcpu", "must be positive, got %d", s.VCPU)
	case s.MemoryGiB <= 0:
		return fieldErr("memory_gib", "must be positive, got %d", s.MemoryGiB)
	case !s.Interconnect.Valid():
		return fieldErr("interconnect", "must be infiniband, roce or ethernet, got %q", s.Interconnect)
	case s.PowerW < 0:
		return fieldErr("power_kw", "must not be negative")
	case s.PricePerHour < 0 || s.SpotPrice < 0 || s.ReservedRate < 0:
		return fieldErr("price_per_hour", "prices must not be negative")
	case s.VCPUPrice < 0 || s.VCPUPrice > 1000:
		return fieldErr("price_per_vcpu_hour", "must be between 0 and 1000, got %v", s.VCPUPrice)
	case s.MemoryPrice < 0 || s.MemoryPrice > 1000:
		return fieldErr("price_per_gib_hour", "must be between 0 and 1000, got %v", s.MemoryPrice)
	}
	return nil
}

// Catalog maps SKU names to SKUs.
type Catalog map[string]SKU

// BuiltinCatalog returns allot's built-in SKUs, modelled on the GPU sizes that
// public clouds sell (prices are list prices per node-hour, rounded).
func BuiltinCatalog() Catalog {
	c := Catalog{}
	for _, s := range []SKU{
		{Name: "ND96-H100x8-IB", Series: "ND", GPUModel: "H100", GPUMemoryGiB: 80, GPUs: 8, NVLink: true, VCPU: 96, MemoryGiB: 1900, Interconnect: FabricInfiniBand, PowerW: 10200, PricePerHour: 98.32, SpotPrice: 39.33, ReservedRate: 62.90},
		{Name: "ND96-A100x8-IB", Series: "ND", GPUModel: "A100", GPUMemoryGiB: 80, GPUs: 8, NVLink: true, VCPU: 96, MemoryGiB: 1900, Interconnect: FabricInfiniBand, PowerW: 6500, PricePerHour: 32.77, SpotPrice: 13.11, ReservedRate: 20.97},
		{Name: "ND96-A100x8-40G", Series: "ND", GPUModel: "A100", GPUMemoryGiB: 40, GPUs: 8, NVLink: true, VCPU: 96, MemoryGiB: 900, Interconnect: FabricInfiniBand, PowerW: 6500, PricePerHour: 27.20, SpotPrice: 10.88, ReservedRate: 17.41},
		{Name: "NC40-H100x1", Series: "NC", GPUModel: "H100", GPUMemoryGiB: 94, GPUs: 1, VCPU: 40, MemoryGiB: 320, Interconnect: FabricEthernet, PowerW: 1100, PricePerHour: 6.98, SpotPrice: 2.79, ReservedRate: 4.47},
		{Name: "NC24-A100x1", Series: "NC", GPUModel: "A100", GPUMemoryGiB: 80, GPUs: 1, VCPU: 24, MemoryGiB: 220, Interconnect: FabricEthernet, PowerW: 800, PricePerHour: 3.67, SpotPrice: 1.47, ReservedRate: 2.35},
		{Name: "NC48-A100x2", Series: "NC", GPUModel: "A100", GPUMemoryGiB: 80, GPUs: 2, NVLink: true, VCPU: 48, MemoryGiB: 440, Interconnect: FabricEthernet, PowerW: 1500, PricePerHour: 7.35, SpotPrice: 2.94, ReservedRate: 4.70},
		{Name: "NC96-A100x4", Series: "NC", GPUModel: "A100", GPUMemoryGiB: 80, GPUs: 4, NVLink: true, VCPU: 96, MemoryGiB: 880, Interconnect: FabricRoCE, PowerW: 2900, PricePerHour: 14.69, SpotPrice: 5.88, ReservedRate: 9.40},
		{Name: "NC4-T4x1", Series: "NC", GPUModel: "T4", GPUMemoryGiB: 16, GPUs: 1, VCPU: 4, MemoryGiB: 28, Interconnect: FabricEthernet, PowerW: 200, PricePerHour: 0.53, SpotPrice: 0.16, ReservedRate: 0.33},
		{Name: "NC16-T4x1", Series: "NC", GPUModel: "T4", GPUMemoryGiB: 16, GPUs: 1, VCPU: 16, MemoryGiB: 110, Interconnect: FabricEthernet, PowerW: 300, PricePerHour: 1.20, SpotPrice: 0.36, ReservedRate: 0.77},
		{Name: "NC64-T4x4", Series: "NC", GPUModel: "T4", GPUMemoryGiB: 16, GPUs: 4, VCPU: 64, MemoryGiB: 440, Interconnect: FabricEthernet, PowerW: 900, PricePerHour: 4.35, SpotPrice: 1.31, ReservedRate: 2.79},
	} {
		c[s.Name] = s
	}
	return c
}

// Add validates s and adds it, rejecting a name already present.
func (c Catalog) Add(s SKU) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if _, dup := c[s.Name]; dup {
		return fieldErr("name", "SKU %q is already defined", s.Name)
	}
	c[s.Name] = s
	return nil
}

// Names returns the SKU names in sorted order.
func (c Catalog) Names() []string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the SKU named name.
func (c Catalog) Lookup(name string) (SKU, error) {
	s, ok := c[name]
	if !ok {
		return SKU{}, fmt.Errorf("unknown SKU %q (known: %v)%s", name, c.Names(), DidYouMean(name, c.Names()))
	}
	return s, nil
}
