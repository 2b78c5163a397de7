package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/admission"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// admissible refuses a job that can never run as written: one the ideal
// fleet cannot hold (package admission; the refusal's code is the core's
// reason, as allot plan prints it), one whose priority class its tenant
// may not use (model.Tenancy.AllowedClasses; Forbidden, whoever submits),
// and, when agents run the jobs, one without a command or an image. A job that merely
// must wait is admissible.
func (s *Server) admissible(w *world, spec model.JobSpec, now time.Time) error {
	if s.agentMode && len(spec.Command) == 0 && spec.Container == nil {
		return refuse(CodeInvalidSpec, "command", "a job needs a command to run on a node: "+
			"give the program and its arguments, e.g. command: [python, train.py], or an image whose entrypoint runs")
	}
	if name := spec.Placement.Reservation; name != "" {
		if err := usableReservation(w, &spec, now); err != nil {
			return err
		}
	}
	if err := w.checkClass(&spec); err != nil {
		return err
	}
	if err := w.knownNodes("placement.nodes", spec.Placement.Nodes); err != nil {
		return err
	}
	if err := w.knownNodes("placement.exclude_nodes", spec.Placement.ExcludeNodes); err != nil {
		return err
	}
	if v := w.admit(s.core, spec, now); v.Never() {
		return refuse(neverCode(v), v.Field, "%s", v.Detail)
	}
	return nil
}

// checkClass refuses (Forbidden, naming priority) a job whose priority
// class its tenant may not use (model.Tenancy.CheckClass).
func (w *world) checkClass(spec *model.JobSpec) error {
	err := w.tenancy.CheckClass(spec.Tenant, spec.Priority.Class, spec.Placement.Reservation)
	var fe *model.FieldError
	if errors.As(err, &fe) {
		return refuse(CodeForbidden, fe.Field, "%s", fe.Msg)
	}
	return err
}

// usableReservation refuses a job that names a reservation it can never
// run in, as sbatch --reservation does: one its tenant does not own (the
// same words whether another tenant owns it or nobody does, so a tenant
// learns no other tenant's reservation names), or one whose window has
// ended. A reservation whose window lies ahead is usable: the job waits
// for it (ReservationNotActive). An elastic job whose minimum the
// reservation cannot hold is refused naming elastic.min_instances
// (elasticFits).
func usableReservation(w *world, spec *model.JobSpec, now time.Time) error {
	const field = "placement.reservation"
	tenant, name := spec.Tenant, spec.Placement.Reservation
	var own []string
	for _, r := range w.tenancy.Reservations {
		if r.Owner != tenant {
			continue
		}
		if r.Name == name {
			if !r.End.IsZero() && !now.Before(r.End) {
				return refuse(CodeInvalidSpec, field, "reservation %q ended at %s", name, r.End.UTC().Format(time.RFC3339))
			}
			return elasticFits(w, spec, r)
		}
		own = append(own, r.Name)
	}
	hint := model.DidYouMean(name, own)
	switch {
	case hint == "" && len(own) == 0:
		hint = " ('allot reservation create' makes one)"
	case hint == "":
		hint = " (it has " + strings.Join(own, ", ") + ")"
	}
	return refuse(CodeInvalidSpec, field, "tenant %s has no reservation %q%s", tenant, clipText(name), hint)
}

// elasticFits refuses an elastic job whose minimum the reservation r it
// names cannot hold: r.Count nodes of r's SKU, each holding as many of the
// job's instances as it has GPUs for. What is refused is the minimum (the
// gang the job waits for); a maximum above what r holds only caps growth.
// A job one node cannot hold at all is left to the admission check, which
// names gpus_per_instance.
func elasticFits(w *world, spec *model.JobSpec, r model.Reservation) error {
	e := spec.Elastic
	if e == nil || spec.Resources.GPUsPerInstance <= 0 {
		return nil
	}
	sku := w.ideal.Catalog[r.SKU]
	perNode := sku.GPUs / spec.Resources.GPUsPerInstance
	if perNode == 0 || r.Count*perNode >= e.MinInstances {
		return nil
	}
	return refuse(CodeInvalidSpec, "elastic.min_instances",
		"reservation %q holds %d×%s (%d GPUs a node), room for %d instances of %d GPUs, and the elastic job needs %d to start: lower elastic.min_instances or name a larger reservation",
		r.Name, r.Count, r.SKU, sku.GPUs, r.Count*perNode, spec.Resources.GPUsPerInstance, e.MinInstances)
}

// neverCode is the refusal code of a verdict that Never holds.
func neverCode(v admission.Verdict) Code {
	switch v.Reason {
	case sched.ResidencyForbidden:
		return CodeResidencyForbidden
	case sched.TopologyUnsatisfiable:
		return CodeTopologyUnsatisfiable
	case sched.QuotaExceeded:
		return CodeQuotaExceeded
	case sched.NodesExcluded:
		return CodeInvalidSpec
	}
	return CodeSkuNotAvailable
}

// knownNodes refuses the first name of nodes (the list field of a
// placement) that is no node of the fleet, as sbatch --exclude does.
func (w *world) knownNodes(field string, nodes []string) error {
	for i, name := range nodes {
		if _, ok := w.nodes[name]; !ok {
			return refuse(CodeInvalidSpec, fmt.Sprintf("%s[%d]", field, i), "no node %q%s",
				clipText(name), model.DidYouMean(name, w.nodeNames()))
		}
	}
	return nil
}

// nodeNames are the nodes of the world, for suggestions.
func (w *world) nodeNames() []string {
	out := make([]string, 0, len(w.nodes))
	for name := range w.nodes {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// tenantNames are the tenants of the world, for suggestions.
func (w *world) tenantNames() []string {
	out := make([]string, 0, len(w.tenancy.Tenants))
	for _, t := range w.tenancy.Tenants {
		out = append(out, t.Name)
	}
	return out
}
