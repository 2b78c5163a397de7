package server

import (
	"context"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// Draining a node is how an administrator takes it out of service without
// stopping what runs there, as Slurm's drain and Kubernetes' cordon do: the
// work on it runs to its end, the core places nothing new on it
// (model.NodeDraining), and ResumeNode gives it back. The drain is part of
// the node's record in the store, beside the health its agent's heartbeats
// keep, so it survives restarts and failover, and neither a heartbeat nor
// the agent registering again undoes it. A node that stops heartbeating
// while drained is NotReady (its work is requeued) and Draining again once
// its agent is back. The server drains a node itself when jobs of several
// tenants fail there (faildrain.go); such a drain is By "server".

// NodeDrain is a drain of a node: an administrator's, the fleet file's
// ("fleet file") or the server's own ("server").
type NodeDrain struct {
	Reason string    `json:"reason"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// health is what the node's record says of it: the agent's health, and
// Draining in place of Ready while a drain stands.
func (r nodeRecord) health() model.Health {
	h := model.Health(r.Health)
	if r.Drain != nil && h == model.NodeReady {
		return model.NodeDraining
	}
	return h
}

// DrainNode drains node name for reason (required: the next administrator
// reads it in the node list). Draining a drained node replaces its reason.
func (s *Server) DrainNode(ctx context.Context, p Principal, name, reason string) (NodeStatus, error) {
	reason, err := checkNote("reason", reason, true)
	if err != nil {
		return NodeStatus{}, err
	}
	d := &NodeDrain{Reason: reason, By: p.Name(), At: s.clock.Now().UTC()}
	return s.setDrain(ctx, p, name, d, ActionNodeDrain, "reason: "+reason)
}

// ResumeNode ends the drain of node name; a node not drained is left as it
// is.
func (s *Server) ResumeNode(ctx context.Context, p Principal, name string) (NodeStatus, error) {
	return s.setDrain(ctx, p, name, nil, ActionNodeResume, "")
}

// setDrain writes d as node name's drain (nil: none) with its audit record
// in one transaction (updateNode). Resuming a node not drained writes
// nothing.
func (s *Server) setDrain(ctx context.Context, p Principal, name string, d *NodeDrain, action, detail string) (NodeStatus, error) {
	if !p.Admin {
		return NodeStatus{}, refuse(CodeForbidden, "", "draining and resuming nodes is for the administrator")
	}
	if _, ok := s.world().nodes[name]; !ok {
		return NodeStatus{}, refuse(CodeNotFound, "name", "no node %q in the fleet", clipText(name))
	}
	wrote, err := s.updateNode(ctx, name, func(r *nodeRecord, txn *store.Txn) bool {
		if d == nil && r.Drain == nil {
			return false
		}
		if d == nil {
			r.ResumedAt = s.clock.Now().UTC()
		}
		r.Drain = d
		s.auditTxn(txn, p, action, "node/"+name, detail)
		return true
	})
	if err != nil {
		return NodeStatus{}, err
	}
	if wrote {
		if d != nil {
			s.log.Info("node drained", "node", name, "by", p.Name(), "reason", d.Reason)
		} else {
			s.log.Info("node resumed", "node", name, "by", p.Name())
			s.forgetFailures(name, s.clock.Now())
		}
		s.Kick()
	}
	return s.nodeStatus(name), nil
}

// nodeStatus is node name as Nodes shows it.
func (s *Server) nodeStatus(name string) NodeStatus {
	for _, n := range s.Nodes() {
		if n.Node.Name == name {
			return n
		}
	}
	return NodeStatus{}
}
