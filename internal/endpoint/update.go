package endpoint

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/refusal"
)

// Update gives the endpoint spec.Name the spec spec. What the
// autoscaler reads (model, min_replicas, max_replicas, slo, throughput,
// autoscale) takes effect at the next reconcile; the desired count moves
// into new bounds at once, as Scale does. A change of what shapes
// a replica (command, env, resources, priority, placement: the template)
// is rolled out: the replicas run on, and the reconciles replace them
// with replicas of the new template within the endpoint's rollout bounds
// (by default never fewer serving than desired; rollout.go). An Updated event says what changed. A
// new template whose replica could never start is refused as a submit
// would be; a spec equal to the endpoint's changes nothing; the tenant
// cannot change.
func (b *Book) Update(ctx context.Context, c Caller, spec model.EndpointSpec) (*Endpoint, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, modRev, err := b.load(ctx, c, spec.Name)
	if err != nil {
		return nil, err
	}
	if spec.Tenant == "" {
		spec.Tenant = e.Spec.Tenant
	}
	if spec.Command == nil && spec.Container == nil {
		spec.Command = slices.Clone(model.DefaultEndpointCommand)
	}
	if err := spec.Validate(); err != nil {
		return nil, refusal.FromField(err)
	}
	old := e.Spec
	if spec.Tenant != old.Tenant {
		return nil, refusal.New(refusal.InvalidSpec, "tenant", "an endpoint stays with its tenant %q; create one for %q under another name", old.Tenant, spec.Tenant)
	}
	rolls := templateOf(spec, e.Restarted) != templateOf(old, e.Restarted)
	if rolls {
		replica := b.replicaSpec(&Endpoint{Spec: spec, token: e.token})
		if err := replica.Validate(); err != nil {
			return nil, refusal.FromField(err)
		}
		if err := b.host.Admissible(replica, b.host.Now()); err != nil {
			return nil, err
		}
	}
	var changed []string
	for _, f := range []struct {
		field string
		same  bool
	}{
		{"model", spec.Model == old.Model},
		{fmt.Sprintf("min_replicas %d → %d", old.MinReplicas, spec.MinReplicas), spec.MinReplicas == old.MinReplicas},
		{fmt.Sprintf("max_replicas %d → %d", old.MaxReplicas, spec.MaxReplicas), spec.MaxReplicas == old.MaxReplicas},
		{fmt.Sprintf("slo.p95 %v → %v", old.SLO.P95, spec.SLO.P95), spec.SLO == old.SLO},
		{"throughput", maps.Equal(spec.Throughput, old.Throughput)},
		{"autoscale", spec.Autoscale == old.Autoscale},
		{"rollout", spec.Rollout == old.Rollout},
		{"service_time_ms", spec.ServiceTime == old.ServiceTime},
		{"readiness", spec.Readiness == old.Readiness},
		{"access", spec.Access == old.Access},
		{"command", slices.Equal(spec.Command, old.Command)},
		{"image", spec.Container.Equal(old.Container)},
		{"env", maps.Equal(spec.Env, old.Env)},
		{"resources", sameResources(spec.Resources, old.Resources)},
		{"priority", spec.Priority == old.Priority},
		{"placement", samePlacement(spec.Placement, old.Placement)},
	} {
		if !f.same {
			changed = append(changed, f.field)
		}
	}
	if len(changed) == 0 {
		return e, nil
	}
	if err := b.host.CheckLimit(e.Spec.Tenant, spec.MinReplicas-e.Desired, "min_replicas"); err != nil {
		return nil, err
	}
	from := e.Desired
	to := min(max(from, spec.MinReplicas), spec.MaxReplicas)
	reason := fmt.Sprintf("%s changed %s", c.Name(), strings.Join(changed, ", "))
	if to != from {
		reason += fmt.Sprintf(": desired %d → %d", from, to)
		e.Reason = reason
	}
	now := b.host.Now()
	if rolls {
		if e.Unlabelled == "" {
			e.Unlabelled = templateOf(old, e.Restarted)
		}
		e.Previous, e.PreviousRestarted = &old, e.Restarted
		e.RolloutSince = now
		reason += "; " + rollingOut(templateOf(spec, e.Restarted), spec.Rollout, to)
	}
	e.Spec, e.Desired = spec, to
	e.addEvent(now, EventUpdated, from, to, reason)
	rec := encode(e)
	if n := len(rec); n > maxRecord {
		return nil, refusal.New(refusal.TooLarge, "", "the endpoint takes %d bytes once stored, over the limit of %d KiB", n, maxRecord>>10)
	}
	if err := b.put(ctx, "update", e, rec, modRev); err != nil {
		return nil, err
	}
	b.log.Info("endpoint updated", "endpoint", spec.Name, "changed", strings.Join(changed, ", "), "desired", to, "by", c.Name())
	b.host.Audit(ctx, c, e.Spec.Tenant, ActionUpdate, "endpoint/"+spec.Name, "changed "+strings.Join(changed, ", "))
	b.Kick()
	return e, nil
}

// sameResources reports whether replicas of a and b are sized alike.
func sameResources(a, b model.Resources) bool {
	return a.GPUsPerInstance == b.GPUsPerInstance && a.GPUMilli == b.GPUMilli && slices.Equal(a.GPUModels, b.GPUModels) &&
		a.CPUMilli == b.CPUMilli && a.MemoryMiB == b.MemoryMiB
}

// samePlacement reports whether replicas of a and b are placed alike.
func samePlacement(a, b model.Placement) bool {
	return slices.Equal(a.Regions, b.Regions) && a.Residency == b.Residency && a.DataRegion == b.DataRegion &&
		a.Reservation == b.Reservation && slices.Equal(a.Nodes, b.Nodes) && slices.Equal(a.ExcludeNodes, b.ExcludeNodes)
}

// Restart replaces every replica of endpoint name, as kubectl
// rollout restart does: the restart time becomes part of the endpoint's
// template, so the reconciles roll the replicas over as for an update
// (rollout.go). A
// replica that reads its model or configuration at start picks up the
// new one so. An event Restarted says who asked.
func (b *Book) Restart(ctx context.Context, c Caller, name string) (*Endpoint, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, modRev, err := b.load(ctx, c, name)
	if err != nil {
		return nil, err
	}
	now := b.host.Now()
	if e.Unlabelled == "" {
		e.Unlabelled = e.template()
	}
	prev := e.Spec
	e.Previous, e.PreviousRestarted = &prev, e.Restarted
	e.Restarted, e.RolloutSince = now, now
	e.addEvent(now, EventRestarted, e.Desired, e.Desired, c.Name()+" restarted the endpoint; "+rollingOut(e.template(), e.Spec.Rollout, e.Desired))
	if err := b.put(ctx, "restart", e, encode(e), modRev); err != nil {
		return nil, err
	}
	b.log.Info("endpoint restarted", "endpoint", name, "template", e.template(), "by", c.Name())
	b.host.Audit(ctx, c, e.Spec.Tenant, ActionRestart, "endpoint/"+name, "template "+e.template())
	b.Kick()
	return e, nil
}

// Undo rolls endpoint name back to the template it had before its
// last template change (an update, a restart or an undo), as kubectl
// rollout undo does: command, env, resources, priority and placement, and
// the restart time, come back; the bounds, SLO and autoscaler stay. The
// replicas of that template that still run (an undo in the middle of a
// rollout) are current again; the others are rolled over within the
// endpoint's rollout bounds. A second undo rolls forward again. An event
// RolledBack says who asked. An endpoint whose template never changed, or
// whose earlier template could no longer start (a reservation gone), is
// refused.
func (b *Book) Undo(ctx context.Context, c Caller, name string) (*Endpoint, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, modRev, err := b.load(ctx, c, name)
	if err != nil {
		return nil, err
	}
	if e.Previous == nil {
		return nil, refusal.New(refusal.Conflict, "", "endpoint %s has no earlier template to roll back to: its template never changed", name)
	}
	cur, curRestarted := e.Spec, e.Restarted
	back := withTemplate(e.Spec, e.Previous)
	replica := b.replicaSpec(&Endpoint{Spec: back, token: e.token})
	if err := replica.Validate(); err != nil {
		return nil, refusal.FromField(err)
	}
	if err := b.host.Admissible(replica, b.host.Now()); err != nil {
		return nil, err
	}
	now := b.host.Now()
	if e.Unlabelled == "" {
		e.Unlabelled = e.template()
	}
	from := e.template()
	e.Spec, e.Restarted = back, e.PreviousRestarted
	e.Previous, e.PreviousRestarted = &cur, curRestarted
	e.RolloutSince = now
	e.addEvent(now, EventRolledBack, e.Desired, e.Desired, fmt.Sprintf("%s rolled the endpoint back from template %s; %s",
		c.Name(), from, rollingOut(e.template(), e.Spec.Rollout, e.Desired)))
	if err := b.put(ctx, "undo", e, encode(e), modRev); err != nil {
		return nil, err
	}
	b.log.Info("endpoint rolled back", "endpoint", name, "from", from, "to", e.template(), "by", c.Name())
	b.host.Audit(ctx, c, e.Spec.Tenant, ActionUndo, "endpoint/"+name, "template "+from+" → "+e.template())
	b.Kick()
	return e, nil
}

// withTemplate is spec with the template (command, env, image, resources,
// priority, placement) of from.
func withTemplate(spec model.EndpointSpec, from *model.EndpointSpec) model.EndpointSpec {
	spec.Command, spec.Env, spec.Resources, spec.Container = from.Command, from.Env, from.Resources, from.Container.Clone()
	spec.Priority, spec.Placement = from.Priority, from.Placement
	return spec
}

// rollingOut says how template t replaces the replicas under r at desired.
func rollingOut(t string, r model.EndpointRollout, desired int) string {
	surge, unavailable := r.Bounds(desired)
	return fmt.Sprintf("rolling out template %s: at most %d replicas beyond the desired count and %d fewer serving; "+
		"each new replica replaces an earlier one once it serves", t, surge, unavailable)
}
