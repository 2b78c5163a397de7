package admission

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// Verdict is what admission says of a job: the core's reason on the ideal
// fleet, rewritten where admission knows more, and its detail. Reason is
// ReasonNone when the job fits the ideal fleet.
type Verdict struct {
	Reason sched.Reason
	Detail string
	// Field is the field at fault when admission can name one: a GPU
	// model or region the fleet does not have.
	Field string
}

// Never reports whether the job can never run as written: the submit is
// refused with this reason.
func (v Verdict) Never() bool {
	switch v.Reason {
	case sched.SkuNotAvailable, sched.ResidencyForbidden, sched.TopologyUnsatisfiable, sched.QuotaExceeded,
		sched.NodesExcluded:
		return true
	}
	return false
}

// Ideal returns a copy of f with every node Ready: the fleet admission
// checks against.
func Ideal(f *model.Fleet) *model.Fleet {
	ideal := *f
	ideal.Nodes = make([]model.Node, len(f.Nodes))
	for i, n := range f.Nodes {
		n.Health = model.NodeReady
		ideal.Nodes[i] = n
	}
	return &ideal
}

// Check asks core what it says of spec alone on ideal (a fleet from Ideal)
// under t without its reservations, at now; a job that fits and names one
// of t's reservations its tenant owns is then checked against it
// (checkReservation).
func Check(core *sched.Scheduler, ideal *model.Fleet, t *model.Tenancy, spec model.JobSpec, now time.Time) Verdict {
	v := onFleet(core, ideal, t, spec, now)
	if name := spec.Placement.Reservation; name != "" && !v.Never() {
		for _, r := range t.Reservations {
			if r.Name == name && r.Owner == spec.Tenant {
				if rv := checkReservation(core, ideal, t, spec, r, now); rv.Never() {
					return rv
				}
			}
		}
	}
	return v
}

// onFleet is Check without the reservation.
func onFleet(core *sched.Scheduler, ideal *model.Fleet, t *model.Tenancy, spec model.JobSpec, now time.Time) Verdict {
	v := alone(core, ideal, t, spec, now)
	switch {
	case v.Reason == sched.SkuNotAvailable:
		if field, hint := unknownNames(ideal, &spec); hint != "" {
			v.Field, v.Detail = field, v.Detail+"; "+hint
		}
	case v.Reason == sched.NodesExcluded:
		v.Field = nodesField(&spec)
	case v.Reason == sched.InsufficientCapacity:
		// Nothing runs and every node is Ready: the fleet is too small.
		v.Reason = sched.SkuNotAvailable
		v.Detail = fmt.Sprintf("the fleet can never hold the job, even with every node Ready and nothing running: %s; %s",
			v.Detail, capacityText(ideal, &spec))
	case v.Reason == sched.TopologyUnsatisfiable && spec.Placement.Interconnect != "":
		v.Detail += "; " + fabricText(ideal, &spec)
	}
	if note := nodesNote(&spec); note != "" && v.Field == "" &&
		(v.Reason == sched.TopologyUnsatisfiable || v.Reason == sched.SkuNotAvailable) {
		// The nodes the job names may be why the fleet cannot hold it.
		v.Field, v.Detail = nodesField(&spec), v.Detail+"; "+note
	}
	return v
}

// alone is what core says of spec alone on fleet under t without its
// reservations, at now.
func alone(core *sched.Scheduler, fleet *model.Fleet, t *model.Tenancy, spec model.JobSpec, now time.Time) Verdict {
	j := &model.Job{ID: "admission-check", Spec: spec, Status: model.JobStatus{State: model.StateQueued, SubmittedAt: now}}
	ten := *t
	ten.Reservations = nil
	plan := core.Schedule(&sched.Snapshot{Fleet: fleet, Tenancy: &ten, Jobs: []*model.Job{j}}, now)
	for _, p := range plan.Pending {
		if p.Job == j.ID {
			return Verdict{Reason: p.Reason, Detail: p.Detail}
		}
	}
	return Verdict{}
}

// checkReservation says whether reservation r, which spec names, could
// ever hold the job, as sbatch --reservation refuses a job larger than the
// reservation: whether the core places it alone on the r.Count nodes of
// r's SKU in r's region that r would take of an idle fleet (the core takes
// them from one cluster when one can give them all, else the most from one:
// reservationNodes), of those spec's node lists allow, every one Ready and
// idle. A job one such node cannot hold (another GPU model, more GPUs), a
// gang larger than the reservation or than the most of it one cluster
// holds (a gang spans one cluster), or node lists that leave none of its
// SKU's nodes is refused (SkuNotAvailable, or NodesExcluded); other answers
// are ReasonNone: which nodes the reservation takes is the core's choice
// cycle by cycle.
func checkReservation(core *sched.Scheduler, ideal *model.Fleet, t *model.Tenancy, spec model.JobSpec, r model.Reservation, now time.Time) Verdict {
	sku := ideal.Catalog[r.SKU]
	res := spec.Resources
	where := fmt.Sprintf("reservation %q holds %d %s of %s (%d×%s) in %s", r.Name, r.Count, plural(r.Count, "node"), r.SKU, sku.GPUs, sku.GPUModel, r.Region)
	switch {
	case !spec.Placement.AllowsRegion(r.Region):
		return Verdict{Reason: sched.SkuNotAvailable, Field: "placement.regions",
			Detail: fmt.Sprintf("%s, a region placement.regions does not allow", where)}
	case res.MilliPerInstance() > 0 && !res.AcceptsModel(sku.GPUModel):
		return Verdict{Reason: sched.SkuNotAvailable, Field: "resources.gpu_models",
			Detail: fmt.Sprintf("%s; the job accepts only %s", where, strings.Join(res.GPUModels, ", "))}
	case res.GPUsPerInstance > sku.GPUs:
		return Verdict{Reason: sched.SkuNotAvailable, Field: "resources.gpus_per_instance",
			Detail: fmt.Sprintf("%s; one instance of the job needs %d GPUs", where, res.GPUsPerInstance)}
	}
	f := *ideal
	var of int // nodes of the SKU in the region
	f.Nodes, of = reservationNodes(ideal, r, &spec)
	if len(f.Nodes) == 0 && of > 0 {
		return Verdict{Reason: sched.NodesExcluded, Field: nodesField(&spec),
			Detail: fmt.Sprintf("%s, and %s rules out all %d of them", where, nodesField(&spec), of)}
	}
	spec.Placement.Reservation = ""
	v := alone(core, &f, t, spec, now)
	switch v.Reason {
	case sched.SkuNotAvailable, sched.InsufficientCapacity, sched.NodesExcluded, sched.TopologyUnsatisfiable:
		detail := fmt.Sprintf("%s, which can never hold the job: %s", where, v.Detail)
		if len(f.Nodes) < r.Count && len(spec.Placement.Nodes)+len(spec.Placement.ExcludeNodes) > 0 {
			detail += fmt.Sprintf(" (%s leaves %d of its SKU's nodes in %s)", nodesField(&spec), len(f.Nodes), r.Region)
		}
		return Verdict{Reason: sched.SkuNotAvailable, Field: "placement.reservation", Detail: detail}
	}
	return Verdict{}
}

// reservationNodes are the nodes reservation r would take of an idle
// fleet, of those s's node lists allow, as the core chooses (sched's
// reserve): from as few clusters as it can, the cluster that gives the
// most of the nodes still needed first, each cluster's nodes in fleet
// order. of counts the nodes of r's SKU in r's region.
func reservationNodes(f *model.Fleet, r model.Reservation, s *model.JobSpec) (nodes []model.Node, of int) {
	var clusters [][]model.Node // allowed nodes by cluster, clusters in fleet order
	at := map[string]int{}
	for _, n := range f.Nodes {
		if n.SKU != r.SKU || n.Region != r.Region {
			continue
		}
		of++
		if !s.Placement.AllowsNode(n.Name) {
			continue
		}
		i, ok := at[n.Cluster]
		if !ok {
			i = len(clusters)
			at[n.Cluster] = i
			clusters = append(clusters, nil)
		}
		clusters[i] = append(clusters[i], n)
	}
	sort.SliceStable(clusters, func(a, b int) bool { return len(clusters[a]) > len(clusters[b]) })
	for _, c := range clusters {
		nodes = append(nodes, c[:min(len(c), r.Count-len(nodes))]...)
	}
	return nodes, of
}

// nodesField is the placement field that rules nodes out for s: nodes
// when it names the only ones, else exclude_nodes.
func nodesField(s *model.JobSpec) string {
	if len(s.Placement.Nodes) > 0 {
		return "placement.nodes"
	}
	return "placement.exclude_nodes"
}

// nodesNote says how many nodes s's placement names: "placement.nodes
// allows 2 nodes; placement.exclude_nodes excludes 1 node".
func nodesNote(s *model.JobSpec) string {
	var parts []string
	if n := len(s.Placement.Nodes); n > 0 {
		parts = append(parts, fmt.Sprintf("placement.nodes allows %d %s", n, plural(n, "node")))
	}
	if n := len(s.Placement.ExcludeNodes); n > 0 {
		parts = append(parts, fmt.Sprintf("placement.exclude_nodes excludes %d %s", n, plural(n, "node")))
	}
	return strings.Join(parts, "; ")
}

// unknownNames names the first GPU model and region of the job that the
// fleet does not have, with the nearest name it has: "no node has GPU
// model "h100" (did you mean H100?)".
func unknownNames(f *model.Fleet, s *model.JobSpec) (field, hint string) {
	models, regions := f.GPUModels(), f.RegionNames()
	var hints []string
	for i, m := range s.Resources.GPUModels {
		if !contains(models, m) {
			if field == "" {
				field = fmt.Sprintf("resources.gpu_models[%d]", i)
			}
			hints = append(hints, fmt.Sprintf("no node has GPU model %q%s", m, didYouMean(m, models)))
		}
	}
	for i, r := range s.Placement.Regions {
		if !contains(regions, r) {
			if field == "" {
				field = fmt.Sprintf("placement.regions[%d]", i)
			}
			hints = append(hints, fmt.Sprintf("no region %q%s", r, didYouMean(r, regions)))
		}
	}
	return field, strings.Join(hints, "; ")
}

// didYouMean is model.DidYouMean, or the names there are when none is
// near.
func didYouMean(word string, names []string) string {
	if s := model.DidYouMean(word, names); s != "" {
		return s
	}
	return " (the fleet has " + strings.Join(names, ", ") + ")"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// capacityText says how many instances of the job's shape each allowed
// region could hold on its own: "the most that exists: eastus 2 instances
// (2 nodes of 8×H100)".
func capacityText(f *model.Fleet, s *model.JobSpec) string {
	r := s.Resources
	type room struct {
		instances, nodes int
		models           []string
	}
	byRegion := map[string]*room{}
	for _, n := range f.Nodes {
		sku, ok := f.Catalog[n.SKU]
		if !ok || !s.Placement.AllowsRegion(n.Region) || !r.AcceptsModel(sku.GPUModel) || sku.GPUs == 0 ||
			(s.Placement.SKU != "" && n.SKU != s.Placement.SKU) {
			continue
		}
		per := 0
		switch {
		case r.Fractional():
			per = sku.GPUs * int(model.MilliPerGPU/r.GPUMilli)
		case r.GPUsPerInstance > 0:
			per = sku.GPUs / r.GPUsPerInstance
		}
		if per == 0 {
			continue
		}
		rm := byRegion[n.Region]
		if rm == nil {
			rm = &room{}
			byRegion[n.Region] = rm
		}
		rm.instances += per
		rm.nodes++
		rm.models = appendUnique(rm.models, fmt.Sprintf("%d×%s", sku.GPUs, sku.GPUModel))
	}
	if len(byRegion) == 0 {
		return "no node in the allowed regions has room for one instance"
	}
	regions := make([]string, 0, len(byRegion))
	for rg := range byRegion {
		regions = append(regions, rg)
	}
	sort.Slice(regions, func(a, b int) bool {
		x, y := byRegion[regions[a]], byRegion[regions[b]]
		if x.instances != y.instances {
			return x.instances > y.instances
		}
		return regions[a] < regions[b]
	})
	parts := make([]string, len(regions))
	for i, rg := range regions {
		rm := byRegion[rg]
		parts[i] = fmt.Sprintf("%s %d %s (%d %s of %s)", rg, rm.instances, plural(rm.instances, "instance"),
			rm.nodes, plural(rm.nodes, "node"), strings.Join(rm.models, ", "))
	}
	return "the most that exists: " + strings.Join(parts, "; ")
}

// fabricText names the clusters of the allowed regions that have the
// job's fabric and the GPU models on them.
func fabricText(f *model.Fleet, s *model.JobSpec) string {
	want := s.Placement.Interconnect
	models := map[string][]string{} // region/cluster -> GPU models
	for _, n := range f.Nodes {
		if sku, ok := f.Catalog[n.SKU]; ok && sku.GPUs > 0 {
			key := n.Region + "/" + n.Cluster
			models[key] = appendUnique(models[key], sku.GPUModel)
		}
	}
	var with []string
	for _, rg := range f.Regions {
		if !s.Placement.AllowsRegion(rg.Name) {
			continue
		}
		for _, c := range rg.Clusters {
			if c.Fabric != want {
				continue
			}
			key := rg.Name + "/" + c.Name
			ms := models[key]
			sort.Strings(ms)
			if len(ms) == 0 {
				ms = []string{"no GPUs"}
			}
			with = append(with, fmt.Sprintf("%s (%s)", key, strings.Join(ms, ", ")))
		}
	}
	if len(with) == 0 {
		return fmt.Sprintf("no cluster in the allowed regions has %s", want)
	}
	return fmt.Sprintf("clusters with %s: %s", want, strings.Join(with, "; "))
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
