package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// UpdateEndpoint gives the endpoint spec.Name the spec spec, where it
// changes only what the autoscaler reads: model, min_replicas,
// max_replicas, slo, throughput and autoscale. The replicas run on, and
// the next reconcile decides with the new spec; the desired count moves
// into new bounds at once, as ScaleEndpoint does, and an Updated event
// says what changed. A spec that changes what shapes a replica (command,
// env, resources, priority, placement) would need new replicas, which
// allot does not roll out in place: it is refused naming the field. A
// spec equal to the endpoint's changes nothing.
func (s *Server) UpdateEndpoint(ctx context.Context, p Principal, spec model.EndpointSpec) (*Endpoint, error) {
	s.ep.mu.Lock()
	defer s.ep.mu.Unlock()
	e, modRev, err := s.loadEndpoint(ctx, p, spec.Name)
	if err != nil {
		return nil, err
	}
	if spec.Tenant == "" {
		spec.Tenant = e.Spec.Tenant
	}
	if spec.Command == nil {
		spec.Command = slices.Clone(model.DefaultEndpointCommand)
	}
	if err := spec.Validate(); err != nil {
		return nil, fromField(err)
	}
	old := e.Spec
	for _, f := range []struct {
		field string
		same  bool
	}{
		{"tenant", spec.Tenant == old.Tenant},
		{"command", slices.Equal(spec.Command, old.Command)},
		{"env", maps.Equal(spec.Env, old.Env)},
		{"resources", reflect.DeepEqual(spec.Resources, old.Resources)},
		{"priority", spec.Priority == old.Priority},
		{"placement", reflect.DeepEqual(spec.Placement, old.Placement)},
	} {
		if !f.same {
			return nil, refuse(CodeInvalidSpec, f.field, "the endpoint's %s would change, which needs new replicas: allot does not roll them out "+
				"in place; create the endpoint under a new name and delete %s once the new one serves (model, min_replicas, "+
				"max_replicas, slo, throughput and autoscale change in place)", f.field, spec.Name)
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
	} {
		if !f.same {
			changed = append(changed, f.field)
		}
	}
	if len(changed) == 0 {
		return e, nil
	}
	if err := s.checkJobLimit(p, spec.MinReplicas-e.Desired); err != nil {
		return nil, err
	}
	from := e.Desired
	to := min(max(from, spec.MinReplicas), spec.MaxReplicas)
	reason := fmt.Sprintf("%s changed %s", p.Name(), strings.Join(changed, ", "))
	if to != from {
		reason += fmt.Sprintf(": desired %d → %d", from, to)
		e.Reason = reason
	}
	e.Spec, e.Desired = spec, to
	e.addEvent(s.clock.Now(), EventUpdated, from, to, reason)
	rec := encodeEndpoint(e)
	if n := len(rec); n > maxEndpointRecord {
		return nil, refuse(CodeTooLarge, "", "the endpoint takes %d bytes once stored, over the limit of %d KiB", n, maxEndpointRecord>>10)
	}
	key := prefixEndpoints + spec.Name
	_, err = s.st.Txn(ctx, store.Txn{If: []store.Cond{store.ModRevIs(key, modRev)}, Then: []store.Op{store.PutOp(key, rec)}})
	if errors.Is(err, store.ErrConflict) {
		return nil, refuse(CodeConflict, "", "endpoint %q changed meanwhile; try again", spec.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("update endpoint %s: %w", spec.Name, err)
	}
	s.log.Info("endpoint updated", "endpoint", spec.Name, "changed", strings.Join(changed, ", "), "desired", to, "by", p.Name())
	s.kickEndpoints()
	return e, nil
}
