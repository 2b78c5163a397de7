package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// its agent is back.

// NodeDrain is an administrator's drain of a node.
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
// in one transaction, conditional on the record it read: a heartbeat
// written meanwhile makes it read and try again.
func (s *Server) setDrain(ctx context.Context, p Principal, name string, d *NodeDrain, action, detail string) (NodeStatus, error) {
	if !p.Admin {
		return NodeStatus{}, refuse(CodeForbidden, "", "draining and resuming nodes is for the administrator")
	}
	if _, ok := s.world().nodes[name]; !ok {
		return NodeStatus{}, refuse(CodeNotFound, "name", "no node %q in the fleet", clipText(name))
	}
	key := prefixNodes + name
	for range 3 {
		kv, err := s.st.Get(ctx, key)
		if err != nil {
			return NodeStatus{}, fmt.Errorf("read node %s: %w", name, err)
		}
		var rec nodeRecord
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return NodeStatus{}, fmt.Errorf("read node %s: %w", name, err)
		}
		if d == nil && rec.Drain == nil {
			return s.nodeStatus(name), nil
		}
		rec.Drain = d
		v, _ := json.Marshal(rec)
		txn := store.Txn{If: []store.Cond{store.ModRevIs(key, kv.ModRev)}, Then: []store.Op{store.PutOp(key, v)}}
		s.auditTxn(&txn, p, action, "node/"+name, detail)
		rev, err := s.st.Txn(ctx, txn)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return NodeStatus{}, fmt.Errorf("record node %s: %w", name, err)
		}
		s.cache.putKV(key, v, rev)
		if d != nil {
			s.log.Info("node drained", "node", name, "by", p.Name(), "reason", d.Reason)
		} else {
			s.log.Info("node resumed", "node", name, "by", p.Name())
		}
		s.Kick()
		return s.nodeStatus(name), nil
	}
	return NodeStatus{}, refuse(CodeConflict, "name", "node %s changed three times while it was being written; try again", name)
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
