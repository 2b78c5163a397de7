package server

import (
	"context"
	"strings"
	"unicode"

	"github.com/allot-dev/allot/internal/store"
)

// A node's agent may run an operator's health check (allot agent
// --health-check, as Slurm's HealthCheckProgram or a node-problem-detector
// plugin: dcgmi diag, an ECC or XID probe) and report each result. A failed
// check drains the node, by "health-check", with the check's output as the
// reason; the next passing check resumes it, as the Node Health Check
// scripts resume the nodes they drained. A drain of anyone else (an
// administrator, the fleet file, the server after jobs failed there) is
// never changed by a report: a passing check may miss what they saw.

// healthChecker is the name health-check drains record as By.
const healthChecker = "health-check"

// ReportHealth takes the result of node name's health check: healthy, or
// not with detail (the check's exit status and output). It returns whether
// the report drained or resumed the node.
func (s *Server) ReportHealth(ctx context.Context, p Principal, name string, healthy bool, detail string) (changed bool, err error) {
	if err := s.needAgents(); err != nil {
		return false, err
	}
	if !p.Runs(name) {
		return false, refuse(CodeForbidden, "", "only node %s's agent reports its health", name)
	}
	if _, ok := s.world().nodes[name]; !ok {
		return false, refuse(CodeNotFound, "", "no node %q in the fleet", clipText(name))
	}
	now := s.clock.Now().UTC()
	var d *NodeDrain
	if !healthy {
		d = &NodeDrain{Reason: clipReason("health check failed: " + oneLine(detail)), By: healthChecker, At: now}
	}
	changed, err = s.updateNode(ctx, name, func(r *nodeRecord, txn *store.Txn) bool {
		switch {
		case d != nil && r.Drain == nil:
			r.Drain = d
			s.auditTxn(txn, p, ActionNodeDrain, "node/"+name, "reason: "+d.Reason)
		case d == nil && r.Drain != nil && r.Drain.By == healthChecker:
			r.Drain, r.ResumedAt = nil, now.UTC()
			s.auditTxn(txn, p, ActionNodeResume, "node/"+name, "health check passed")
		default:
			return false
		}
		return true
	})
	if err != nil || !changed {
		return false, err
	}
	if d != nil {
		s.log.Warn("node drained: its health check failed", "node", name, "reason", d.Reason)
	} else {
		s.log.Info("node resumed: its health check passed", "node", name)
		s.forgetFailures(name, now)
	}
	s.Kick()
	return true, nil
}

// oneLine makes text a printable line: runs of spaces, control characters
// and line breaks become one space.
func oneLine(text string) string {
	return strings.Join(strings.FieldsFunc(text, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }), " ")
}

// drainedByAllot reports whether d is a drain allot made itself: the
// server's, after jobs failed on the node, or its health check's.
func drainedByAllot(d *NodeDrain) bool {
	return d != nil && (d.By == autoDrainer || d.By == healthChecker)
}
