package server

import (
	"time"

	"github.com/allot-dev/allot/internal/admission"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// admissible refuses a job that can never run as written: one the ideal
// fleet cannot hold (package admission; the refusal's code is the core's
// reason, as allot plan prints it), and, when agents run the jobs, one
// without a command. A job that merely must wait is admissible.
func (s *Server) admissible(w *world, spec model.JobSpec, now time.Time) error {
	if s.agentMode && len(spec.Command) == 0 {
		return refuse(CodeInvalidSpec, "command", "a job needs a command to run on a node: "+
			"give the program and its arguments, e.g. command: [python, train.py]")
	}
	if v := w.admit(s.core, spec, now); v.Never() {
		return refuse(neverCode(v), v.Field, "%s", v.Detail)
	}
	return nil
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
	}
	return CodeSkuNotAvailable
}

// tenantNames are the tenants of the world, for suggestions.
func (w *world) tenantNames() []string {
	out := make([]string, 0, len(w.tenancy.Tenants))
	for _, t := range w.tenancy.Tenants {
		out = append(out, t.Name)
	}
	return out
}
