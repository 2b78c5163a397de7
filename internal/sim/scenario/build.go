package scenario

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
)

// World is a scenario made concrete for one fleet size and strategy.
type World struct {
	Fleet   *model.Fleet
	Tenancy *model.Tenancy
	// Promised is the tenancy as written, its guarantees resolved against
	// this fleet: what the metrics hold every strategy to.
	Promised *model.Tenancy
	Start    time.Time
	End      time.Time
	Factor   float64
}

// buildFleet generates the fleet with every node count scaled by factor
// (rounded to the nearest node).
func (f *File) buildFleet(factor float64) (*model.Fleet, error) {
	fl := &model.Fleet{Catalog: model.BuiltinCatalog()}
	for _, r := range f.Fleet.Regions {
		reg := model.Region{Name: r.Name, Residency: r.Residency}
		for _, c := range r.Clusters {
			reg.Clusters = append(reg.Clusters, model.Cluster{Name: c.Name, Fabric: model.Fabric(c.Fabric)})
			made := map[string]int{}
			for _, ng := range c.Nodes {
				s := ng.SKU
				n := int(math.Round(float64(ng.Count) * factor))
				short := nodeKind(fl.Catalog[s])
				for i := made[s]; i < made[s]+n; i++ {
					fl.Nodes = append(fl.Nodes, model.Node{
						Name: fmt.Sprintf("%s-%s-%03d", c.Name, short, i+1), SKU: s, Region: r.Name, Cluster: c.Name,
						Leaf: fmt.Sprintf("%s-%s-leaf%d", c.Name, short, i/c.LeafNodes+1), Health: model.NodeReady,
					})
				}
				made[s] += n
			}
		}
		fl.Regions = append(fl.Regions, reg)
	}
	if err := fl.Validate(); err != nil {
		return nil, fmt.Errorf("scenario fleet: %w", err)
	}
	return fl, nil
}

// nodeKind names a SKU's nodes: "h100x8".
func nodeKind(s model.SKU) string {
	return fmt.Sprintf("%sx%d", strings.ToLower(s.GPUModel), s.GPUs)
}

// tenantsFile reads the scenario's tenants file.
func (f *File) tenantsFile() (string, []byte, error) {
	path := f.Tenants
	if !filepath.IsAbs(path) {
		path = filepath.Join(f.dir, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", nil, fmt.Errorf("scenario tenants: %w", err)
	}
	return path, data, nil
}

// Build makes the world of the scenario at factor times its fleet under
// strategy (empty: the tenants file's own).
func (f *File) Build(factor float64, strategy model.Strategy) (*World, error) {
	if !(factor > 0) || factor > 100 {
		return nil, fmt.Errorf("scenario: fleet factor must be in (0, 100], got %g", factor)
	}
	if !strategy.Valid() {
		return nil, fmt.Errorf("scenario: unknown strategy %q (want static, dynamic or hybrid)", strategy)
	}
	fl, err := f.buildFleet(factor)
	if err != nil {
		return nil, err
	}
	name, data, err := f.tenantsFile()
	if err != nil {
		return nil, err
	}
	ten, err := spec.ParseTenancy(name, data, fl)
	if err != nil {
		return nil, err
	}
	start := time.Time(f.Start)
	for _, r := range f.Reservations {
		at := start.Add(time.Duration(r.Opens))
		ten.Reservations = append(ten.Reservations, model.Reservation{Name: r.Name, Owner: r.Owner, SKU: r.SKU,
			Region: r.Region, Count: r.Count, Start: at, End: at.Add(time.Duration(r.Lasts))})
	}
	if err := ten.Validate(fl); err != nil {
		return nil, fmt.Errorf("scenario %s at fleet factor %g: %w", f.Name, factor, err)
	}
	if strategy != "" {
		ten.Strategy = strategy
	}
	if err := f.checkTenants(ten); err != nil {
		return nil, err
	}
	return &World{Fleet: fl, Tenancy: ten, Promised: ten, Start: start, End: start.Add(f.length()), Factor: factor}, nil
}

// checkTenants checks that the work names known tenants.
func (f *File) checkTenants(t *model.Tenancy) error {
	known := func(field, name string) error {
		if _, ok := t.Tenant(name); !ok {
			return fmt.Errorf("scenario %s: %s: unknown tenant %q", f.Name, field, name)
		}
		return nil
	}
	for i, r := range f.Reservations {
		if err := known(fmt.Sprintf("reservations[%d].owner", i), r.Owner); err != nil {
			return err
		}
	}
	for i, j := range f.Jobs {
		if err := known(fmt.Sprintf("jobs[%d].tenant", i), j.Tenant); err != nil {
			return err
		}
	}
	for i, a := range f.Arrivals {
		if err := known(fmt.Sprintf("arrivals[%d].tenant", i), a.Tenant); err != nil {
			return err
		}
	}
	for i, e := range f.Endpoints {
		if err := known(fmt.Sprintf("endpoints[%d].tenant", i), e.Tenant); err != nil {
			return err
		}
	}
	return nil
}
