package server

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/allot-dev/allot/internal/admission"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// world is the fleet and tenancy the core sees: the fleet file with each
// node's recorded health, and the tenants file with the reservations created
// through the API added and the quotas set by approved requests and edits in
// place of the file's (quota_world.go). It is rebuilt when any of them
// changes and is never modified once built.
type world struct {
	gen     uint64
	fleet   *model.Fleet
	tenancy *model.Tenancy
	// ideal is the fleet with every node Ready and nothing running: what
	// admission checks ask whether a job could ever run on.
	ideal   *model.Fleet
	tenants map[string]bool
	nodes   map[string]model.Node
	fromAPI map[string]bool // reservation names created through the API

	mu       sync.Mutex                   // guards verdicts
	verdicts map[string]admission.Verdict // admission verdicts by job shape
}

// world returns the current world, rebuilding it when reservations or node
// health changed.
func (s *Server) world() *world {
	gen := s.cache.gen()
	if w := s.w.Load(); w != nil && w.gen == gen {
		return w
	}
	s.worldMu.Lock()
	defer s.worldMu.Unlock()
	health, gen := s.cache.nodeHealth()
	if w := s.w.Load(); w != nil && w.gen == gen {
		return w
	}
	res := s.cache.reservationList()
	w := buildWorld(s.cfg.Fleet, s.cfg.Tenancy, health, res, gen)
	w.tenancy.Quotas = withQuotas(w.tenancy.Quotas, w.applicable(s.cache.quotaList())) // approved requests and edits (quota.go)
	s.w.Store(w)
	return w
}

func buildWorld(f *model.Fleet, t *model.Tenancy, health map[string]model.Health, res []model.Reservation, gen uint64) *world {
	w := &world{gen: gen, tenants: map[string]bool{}, nodes: map[string]model.Node{}, fromAPI: map[string]bool{},
		verdicts: map[string]admission.Verdict{}}
	fl := *f
	fl.Nodes = make([]model.Node, len(f.Nodes))
	for i, n := range f.Nodes {
		if h, ok := health[n.Name]; ok {
			n.Health = h
		} else if n.Health == "" {
			n.Health = model.NodeReady
		}
		fl.Nodes[i] = n
		w.nodes[n.Name] = n
	}
	w.fleet, w.ideal = &fl, admission.Ideal(f)
	ten := *t
	ten.Reservations = append(append([]model.Reservation(nil), t.Reservations...), res...)
	for _, r := range res {
		w.fromAPI[r.Name] = true
	}
	sort.SliceStable(ten.Reservations, func(a, b int) bool { return ten.Reservations[a].Name < ten.Reservations[b].Name })
	w.tenancy = &ten
	for _, x := range t.Tenants {
		w.tenants[x.Name] = true
	}
	return w
}

// admit asks admission what it says of spec on the ideal fleet (every node
// Ready, nothing running, no reservations): a verdict that Never holds
// means the job can never run as written (package admission). Verdicts are
// kept per job shape for the life of the world.
func (w *world) admit(core *sched.Scheduler, spec model.JobSpec, now time.Time) admission.Verdict {
	key := shape(&spec)
	w.mu.Lock()
	v, ok := w.verdicts[key]
	w.mu.Unlock()
	if ok {
		return v
	}
	v = admission.Check(core, w.ideal, w.tenancy, spec, now)
	w.mu.Lock()
	if len(w.verdicts) < 4096 {
		w.verdicts[key] = v
	}
	w.mu.Unlock()
	return v
}

// shape identifies specs that admission treats alike.
func shape(s *model.JobSpec) string {
	r := s.Resources
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d|%d|%d|%d|%d|%d|%s|%s|%s|%s|%s|%s|%s|%s", s.Tenant, s.Priority.Class, r.InstanceCount,
		r.GPUsPerInstance, r.GPUMilli, r.CPUMilli, r.MemoryMiB, strings.Join(r.GPUModels, ","),
		strings.Join(s.Placement.Regions, ","), s.Placement.Residency, s.Placement.Interconnect, s.Placement.Reservation,
		s.Placement.SKU, strings.Join(s.Placement.Nodes, ","), strings.Join(s.Placement.ExcludeNodes, ","))
	return b.String()
}
