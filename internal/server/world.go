package server

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// world is the fleet and tenancy the core sees: the fleet file with each
// node's recorded health, and the tenants file with the reservations created
// through the API added. It is rebuilt when either changes and is never
// modified once built.
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

	mu       sync.Mutex         // guards verdicts
	verdicts map[string]verdict // admission verdicts by job shape
}

// verdict is what the core said of a job on the ideal fleet.
type verdict struct {
	reason sched.Reason
	detail string
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
	s.w.Store(w)
	return w
}

func buildWorld(f *model.Fleet, t *model.Tenancy, health map[string]model.Health, res []model.Reservation, gen uint64) *world {
	w := &world{gen: gen, tenants: map[string]bool{}, nodes: map[string]model.Node{}, fromAPI: map[string]bool{},
		verdicts: map[string]verdict{}}
	fl := *f
	fl.Nodes = make([]model.Node, len(f.Nodes))
	ideal := *f
	ideal.Nodes = make([]model.Node, len(f.Nodes))
	for i, n := range f.Nodes {
		if h, ok := health[n.Name]; ok {
			n.Health = h
		} else if n.Health == "" {
			n.Health = model.NodeReady
		}
		fl.Nodes[i] = n
		w.nodes[n.Name] = n
		n.Health = model.NodeReady
		ideal.Nodes[i] = n
	}
	w.fleet, w.ideal = &fl, &ideal
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

// admit asks the core what it would say of spec alone on the ideal fleet
// (every node Ready, nothing running): SkuNotAvailable and
// ResidencyForbidden there mean no SKU in the allowed regions can ever hold
// the job, QuotaExceeded that the job alone exceeds its tenant's hard quota
// in every region and series it could use. Verdicts are kept per job shape
// for the life of the world.
func (w *world) admit(core *sched.Scheduler, spec model.JobSpec, now time.Time) verdict {
	key := shape(&spec)
	w.mu.Lock()
	v, ok := w.verdicts[key]
	w.mu.Unlock()
	if ok {
		return v
	}
	j := &model.Job{ID: "admission-check", Spec: spec, Status: model.JobStatus{State: model.StateQueued, SubmittedAt: now}}
	ten := *w.tenancy
	ten.Reservations = nil // reservations come and go; they never make a job impossible
	plan := core.Schedule(&sched.Snapshot{Fleet: w.ideal, Tenancy: &ten, Jobs: []*model.Job{j}}, now)
	for _, p := range plan.Pending {
		if p.Job == j.ID {
			v = verdict{reason: p.Reason, detail: p.Detail}
		}
	}
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
	fmt.Fprintf(&b, "%s|%d|%d|%d|%d|%d|%d|%s|%s|%s|%s|%s", s.Tenant, s.Priority.Class, r.InstanceCount,
		r.GPUsPerInstance, r.GPUMilli, r.CPUMilli, r.MemoryMiB, strings.Join(r.GPUModels, ","),
		strings.Join(s.Placement.Regions, ","), s.Placement.Residency, s.Placement.Interconnect, s.Placement.Reservation)
	return b.String()
}
