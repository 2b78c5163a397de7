package server

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/forecast"
	"github.com/allot-dev/allot/internal/model"
)

// Instances: the IaaS view of the fleet (docs/instances.md). An instance
// leases Count whole nodes of one SKU in one region until it is deleted.
// It is a job record (model.InstanceSpec: resources of the SKU's whole
// node, pinned to the region and the SKU, no duration, labelled
// model.LabelInstance), so the core admits, places, reserves and preempts
// it exactly as a job: quotas, partitions, reservations and priority
// classes apply unchanged, and the cost of what it ran is read from the
// same records.
//
// Creation answers at once. CreateInstance stores the job as Submit does,
// then runs one scheduling cycle itself (Cycle, serialised with the loop's
// cycles), so the answer is what the core decided, not a guess made
// beside it:
//
//   - placed: the job is bound (Running; Preparing until agents start it);
//   - still queued and the request did not ask to wait: the job is
//     withdrawn (ended Canceled with reason AllocationFailed, written on
//     the condition that no cycle wrote it meanwhile, so an instance is
//     never both placed and refused) and the request is refused with
//     QuotaExceeded when the core's reason is the tenant's quota, else
//     AllocationFailed naming where and when the SKU is free soonest
//     (forecast.PerRegion over every region that sells it);
//   - with Wait, the job stays queued and is returned.
//
// Requests that can never be met are refused before anything is stored:
// an unknown SKU or one not sold in the region (SkuNotAvailable), a
// request over the tenant's quota as it stands (QuotaExceeded, from
// admission), bad fields (InvalidSpec naming the field).

// CodeAllocationFailed refuses an instance whose SKU is sold in the region
// but has no node free for it now; the message names the soonest
// alternative.
const CodeAllocationFailed Code = "AllocationFailed"

// holdCommand is what an instance runs on its nodes where agents run
// jobs: nothing but holding the lease. It ignores SIGTERM, so an evicted
// instance keeps its nodes for the whole eviction notice (its grace) and
// is stopped (SIGKILL) at the deadline.
var holdCommand = []string{"sh", "-c", "trap '' TERM; exec sleep infinity"}

// InstanceRequest asks for Count nodes of SKU in Region for Tenant.
type InstanceRequest struct {
	Name     string // job name; empty: derived from the SKU and region
	Tenant   string // empty: the token's tenant
	SKU      string
	Region   string
	Count    int
	Priority model.Priority
	// Grace is the eviction notice: how long the instance keeps its nodes
	// after being told it is evicted; zero means model.DefaultGrace.
	Grace time.Duration
	// Wait leaves the instance queued when nothing is free now.
	Wait bool
}

// instanceSpec checks r against the fleet and turns it into the job spec
// of the instance.
func (s *Server) instanceSpec(w *world, p Principal, r InstanceRequest) (model.JobSpec, error) {
	if r.Tenant == "" && !p.Admin {
		r.Tenant = p.Tenant
	}
	if r.Tenant == "" {
		return model.JobSpec{}, refuse(CodeInvalidSpec, "tenant", "an admin token must name the tenant the instance is for")
	}
	if r.Count < 1 || r.Count > model.MaxInstanceCount {
		return model.JobSpec{}, refuse(CodeInvalidSpec, "count", "must be between 1 and %d nodes, got %d", model.MaxInstanceCount, r.Count)
	}
	if r.Grace < 0 {
		return model.JobSpec{}, refuse(CodeInvalidSpec, "grace", "must be between 0s and %s (--max-grace), got %s", s.cfg.MaxGrace, r.Grace)
	}
	if err := s.checkGrace(r.Grace, "grace"); err != nil {
		return model.JobSpec{}, err
	}
	if r.Region == "" {
		return model.JobSpec{}, refuse(CodeInvalidSpec, "region", "must not be empty")
	}
	if _, ok := w.fleet.Region(r.Region); !ok {
		names := make([]string, len(w.fleet.Regions))
		for i, rg := range w.fleet.Regions {
			names[i] = rg.Name
		}
		return model.JobSpec{}, refuse(CodeInvalidSpec, "region", "unknown region %q (known: %s)%s", r.Region,
			strings.Join(names, ", "), model.DidYouMean(r.Region, names))
	}
	if r.SKU == "" {
		return model.JobSpec{}, refuse(CodeInvalidSpec, "sku", "must not be empty (see 'allot sku list')")
	}
	sku, ok := w.fleet.Catalog[r.SKU]
	if !ok {
		names := w.fleet.Catalog.Names()
		return model.JobSpec{}, refuse(CodeSkuNotAvailable, "sku", "unknown SKU %q: no region sells it%s (see 'allot sku list')",
			r.SKU, model.DidYouMean(r.SKU, names))
	}
	sold := regionsSelling(w.fleet, sku.Name)
	if !containsString(sold, r.Region) {
		where := "no region has nodes of it"
		if len(sold) > 0 {
			where = "it is sold in " + strings.Join(sold, ", ")
		}
		return model.JobSpec{}, refuse(CodeSkuNotAvailable, "region", "SKU %s is not sold in %s: %s", sku.Name, r.Region, where)
	}
	name := r.Name
	if name == "" {
		name = strings.ToLower(sku.Name + "-" + r.Region)
	}
	var cmd []string
	if s.agentMode {
		cmd = holdCommand
	}
	return model.InstanceSpec(name, r.Tenant, sku, r.Region, r.Count, r.Priority, r.Grace, cmd), nil
}

// regionsSelling returns the regions with nodes of sku, in the fleet's order.
func regionsSelling(f *model.Fleet, sku string) []string {
	var out []string
	for _, n := range f.Nodes {
		if n.SKU == sku && !containsString(out, n.Region) {
			out = append(out, n.Region)
		}
	}
	order := map[string]int{}
	for i, r := range f.Regions {
		order[r.Name] = i
	}
	sort.SliceStable(out, func(a, b int) bool { return order[out[a]] < order[out[b]] })
	return out
}

func containsString(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// CreateInstance leases r.Count nodes of r.SKU in r.Region for the tenant
// and answers with what the core decided (see the comment at the top of
// this file): the placed (or, with r.Wait, queued) instance, or a refusal.
func (s *Server) CreateInstance(ctx context.Context, p Principal, r InstanceRequest) (*model.Job, error) {
	j, _, err := s.CreateInstanceKeyed(ctx, p, "", r)
	return j, err
}

// CreateInstanceKeyed is CreateInstance with a client's idempotency key
// (none when key is ""), as SubmitKeyed: a request that repeats a key p
// used within IdempotencyTTL for the same instance stores nothing and
// answers what the first one was answered, replayed set; its instance as it
// is now, or the same refusal when the first was withdrawn unplaced. One
// that repeats it for another request is refused (Conflict, field
// Idempotency-Key).
func (s *Server) CreateInstanceKeyed(ctx context.Context, p Principal, key string, r InstanceRequest) (*model.Job, bool, error) {
	spec, err := s.instanceSpec(s.world(), p, r)
	if err != nil {
		return nil, false, err
	}
	j, replayed, err := s.SubmitKeyed(ctx, p, key, spec)
	var se *Error
	if errors.As(err, &se) && se.Field == "" && se.Code == CodeSkuNotAvailable {
		// Admission: even the whole fleet has too few nodes of the SKU
		// in the region for the count.
		return nil, false, refuse(se.Code, "count", "%s", se.Msg)
	}
	if err != nil {
		return nil, false, err
	}
	if replayed {
		if code := Code(j.Status.Reason); j.Status.State == model.StateCanceled &&
			(code == CodeAllocationFailed || code == CodeQuotaExceeded) {
			return nil, true, refuse(code, "", "%s", j.Status.Detail)
		}
		// The first request settles it, even if its client went away; a
		// repeat while it does sees it queued for a moment.
		return j, true, nil
	}
	// Stored: from here the instance must be settled (placed, or withdrawn)
	// even if the client goes away, so that none is left queued unasked.
	ctx = context.WithoutCancel(ctx)
	if err := s.Cycle(ctx); err != nil {
		// Settle it all the same: still queued, it is withdrawn and
		// refused, so nothing is left that the client was not told of.
		s.log.Error("instance cycle", "job", j.ID, "err", err)
	}
	j, err = s.settleInstance(ctx, j.ID, r.Wait)
	return j, false, err
}

// settleInstance reads instance id after its first cycle: placed, queued
// (kept with wait), or withdrawn and refused.
func (s *Server) settleInstance(ctx context.Context, id string, wait bool) (*model.Job, error) {
	var code Code
	var msg string
	old, ended, _, err := s.rewriteJob(ctx, id, "withdraw instance", func(j *model.Job) (*model.Job, error) {
		if j.Status.State != model.StateQueued || wait {
			return nil, nil // placed, ended meanwhile, or waiting as asked
		}
		now := s.clock.Now()
		code, msg = s.allocationFailure(j, now)
		return endJob(j, model.StateCanceled, string(code), msg, -1, now), nil
	})
	if err != nil {
		return nil, err
	}
	if ended == nil {
		return old, nil
	}
	s.log.Info("instance refused", "job", id, "tenant", ended.Spec.Tenant, "code", code, "detail", msg)
	return nil, refuse(code, "", "%s", msg)
}

// allocationFailure says why queued instance j was not placed in its first
// cycle: QuotaExceeded when the core's reason is the tenant's quota, else
// AllocationFailed with the soonest alternatives.
func (s *Server) allocationFailure(j *model.Job, now time.Time) (Code, string) {
	sku, region := j.Spec.Placement.SKU, j.Spec.Placement.Regions[0]
	why := j.Status.Reason
	if j.Status.Detail != "" {
		why += ": " + j.Status.Detail
	}
	if j.Status.Reason == "QuotaExceeded" {
		return CodeQuotaExceeded, fmt.Sprintf("%s of %s in %s would exceed the quota of tenant %s now (%s)",
			nodesText(j.Spec.Resources.InstanceCount), sku, region, j.Spec.Tenant, why)
	}
	msg := fmt.Sprintf("%s of %s not free in %s now", nodesText(j.Spec.Resources.InstanceCount), sku, region)
	if why != "" {
		msg += " (" + why + ")"
	}
	return CodeAllocationFailed, msg + "; " + s.soonest(j, now)
}

// nodesText writes "1 node" or "3 nodes".
func nodesText(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}

// soonest names where and when instance j could be placed soonest: each
// region that sells its SKU, estimated by running the core forward
// (forecast.PerRegion) as if j were allowed there; regions free now
// first, then by estimated start.
func (s *Server) soonest(j *model.Job, now time.Time) string {
	w := s.world()
	here := j.Spec.Placement.Regions[0]
	what := *j
	what.Spec.Placement.Regions = regionsSelling(w.fleet, j.Spec.Placement.SKU)
	what.Status.Region = ""
	est := s.forecaster().PerRegion(s.forecastSnapshot(w, nil), now, &what)
	type option struct {
		region string
		e      forecast.Estimate
	}
	var opts []option
	for _, r := range what.Spec.Placement.Regions {
		opts = append(opts, option{r, est[r]})
	}
	sort.SliceStable(opts, func(a, b int) bool {
		x, y := opts[a].e, opts[b].e
		if x.Known() != y.Known() {
			return x.Known()
		}
		return x.Known() && x.Start.Before(y.Start)
	})
	var parts []string
	for _, o := range opts {
		switch {
		case !o.e.Known() && o.region == here:
			parts = append(parts, fmt.Sprintf("here in %s no estimate (%s)", o.region, o.e.Why))
		case !o.e.Known():
			parts = append(parts, fmt.Sprintf("%s no estimate", o.region))
		case !o.e.Start.After(now) && o.region != here:
			parts = append(parts, fmt.Sprintf("free now in %s (allot instance create --sku %s --region %s)",
				o.region, j.Spec.Placement.SKU, o.region))
		case o.region == here:
			parts = append(parts, fmt.Sprintf("here in %s estimated free at %s (in %s; --wait queues for it)",
				o.region, o.e.Start.UTC().Format(time.RFC3339), o.e.Start.Sub(now).Round(time.Second)))
		default:
			parts = append(parts, fmt.Sprintf("%s estimated free at %s", o.region, o.e.Start.UTC().Format(time.RFC3339)))
		}
	}
	return "soonest: " + strings.Join(parts, "; ")
}

// Instance returns instance id as p may see it; a job that is not an
// instance is NotFound.
func (s *Server) Instance(ctx context.Context, p Principal, id string) (*model.Job, error) {
	j, err := s.Job(ctx, p, id)
	var se *Error
	if errors.As(err, &se) && se.Code == CodeNotFound {
		return s.instanceNamed(ctx, p, id)
	}
	if err != nil {
		return nil, err
	}
	if !j.Spec.IsInstance() {
		return nil, refuse(CodeNotFound, "", "no instance %q (it is a job: see allot job show)", id)
	}
	return j, nil
}

// instanceNamed is the one instance not ended that p sees with name
// (create --name), as the ID it answers to.
func (s *Server) instanceNamed(ctx context.Context, p Principal, name string) (*model.Job, error) {
	live, err := s.Instances(ctx, p, "", false)
	if err != nil {
		return nil, err
	}
	var named []*model.Job
	var ids []string
	for _, j := range live {
		if j.Spec.Name == name {
			named = append(named, j)
			ids = append(ids, j.ID)
		}
	}
	switch len(named) {
	case 0:
		return nil, refuse(CodeNotFound, "", "no instance %q: give an ID or the name of one not ended ('allot instance list')", clipText(name))
	case 1:
		return named[0], nil
	}
	return nil, refuse(CodeConflict, "", "%d instances are named %q: give one's ID (%s)", len(named), name, strings.Join(ids, ", "))
}

// Instances returns the instances p may see, of tenant when it is not
// empty, newest first; ended ones only with all.
func (s *Server) Instances(ctx context.Context, p Principal, tenant string, all bool) ([]*model.Job, error) {
	jobs, err := s.Jobs(ctx, p, JobFilter{Tenant: tenant})
	if err != nil {
		return nil, err
	}
	out := jobs[:0]
	for _, j := range jobs {
		if j.Spec.IsInstance() && (all || !j.Status.State.Terminal()) {
			out = append(out, j)
		}
	}
	return out, nil
}

// DeleteInstance ends instance id and frees its nodes for the next cycle.
func (s *Server) DeleteInstance(ctx context.Context, p Principal, id string) (*model.Job, error) {
	j, err := s.Instance(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if j.Status.State.Terminal() {
		return nil, refuse(CodeConflict, "", "instance %s already ended: %s (%s)", j.ID, j.Status.State, j.Status.Reason)
	}
	if j.Status.Canceling {
		return nil, refuse(CodeConflict, "", "instance %s is already being deleted: its processes are stopping within their grace; "+
			"'allot job cancel --force %s' kills them now", j.ID, j.ID)
	}
	return s.Cancel(ctx, p, j.ID)
}
