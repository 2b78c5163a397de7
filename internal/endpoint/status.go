package endpoint

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/allot-dev/allot/internal/autoscale"
	"github.com/allot-dev/allot/internal/model"
)

// Status is an endpoint with what runs for it now.
type Status struct {
	*Endpoint
	// Replicas are the replica jobs that have not ended, oldest first.
	Replicas []Replica
	// Metrics is the last sample the replicas' reports made; nil before
	// the first.
	Metrics *autoscale.Sample
	// Decision is the reason of the autoscaler's latest decision, which
	// may have changed nothing (the stored Reason is that of the last
	// change).
	Decision string
	// Template is the hash of the endpoint's template (rollout.go), and
	// PreviousTemplate that of the template an undo rolls back to ("" when
	// none).
	Template, PreviousTemplate string
	// URL is where callers reach the endpoint through the gateways; ""
	// when the server knows no gateway (Config.GatewayURL).
	URL string
	// Gateway is what the gateways measured over the last minute; nil
	// when none reported the endpoint.
	Gateway *GatewayMetrics
}

// Replica is one replica job of an endpoint.
type Replica struct {
	Job      string
	State    model.State
	Reason   string // why a queued replica waits (QuotaExceeded, …); empty otherwise
	Node     string // empty while queued
	GPUModel string // of the node; empty while queued
	// Template is the hash of the endpoint template the replica runs;
	// Outdated when it is not the endpoint's (a rollout replaces it).
	Template string
	Outdated bool
}

// Get returns the endpoint called name as c may see it.
func (b *Book) Get(ctx context.Context, c Caller, name string) (Status, error) {
	e, _, err := b.load(ctx, c, name)
	if err != nil {
		return Status{}, err
	}
	return b.status(e, b.host.Replicas()[name]), nil
}

// List returns the endpoints c may see, by name.
func (b *Book) List(ctx context.Context, c Caller) ([]Status, error) {
	kvs, err := b.host.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list endpoints: %w", err)
	}
	var jobs map[string][]*model.Job
	out := []Status{}
	for _, kv := range kvs {
		e, err := decode(kv.Value)
		if err != nil {
			b.log.Error("skipping unreadable endpoint record", "key", kv.Key, "err", err)
			continue
		}
		if !c.Sees(e.Spec.Tenant) {
			continue
		}
		if jobs == nil {
			jobs = b.host.Replicas()
		}
		out = append(out, b.status(e, jobs[e.Spec.Name]))
	}
	return out, nil
}

func (b *Book) status(e *Endpoint, jobs []*model.Job) Status {
	current := e.template()
	st := Status{Endpoint: e, Replicas: []Replica{}, Template: current}
	if e.Previous != nil {
		st.PreviousTemplate = templateOf(*e.Previous, e.PreviousRestarted)
	}
	live, _ := splitReplicas(e, jobs)
	for _, j := range live {
		node, gpu := b.replicaNode(j)
		t := replicaTemplate(e, j)
		st.Replicas = append(st.Replicas, Replica{Job: j.ID, State: j.Status.State, Reason: j.Status.Reason, Node: node, GPUModel: gpu,
			Template: t, Outdated: t != current})
	}
	st.Metrics, st.Decision = b.last(e.Spec.Name)
	st.Gateway = b.gatewayMetrics(e.Spec.Name, b.host.Now())
	if b.cfg.GatewayURL != "" {
		st.URL = strings.TrimSuffix(b.cfg.GatewayURL, "/") + "/" + url.PathEscape(e.Spec.Name) + "/"
	}
	if st.Decision == "" {
		st.Decision = e.Reason
	}
	return st
}

// replicaNode returns the node a replica is bound to and its GPU model,
// empty while it is queued.
func (b *Book) replicaNode(j *model.Job) (node, gpuModel string) {
	if len(j.Status.Allocations) == 0 {
		return "", ""
	}
	node = j.Status.Allocations[0].Node
	return node, b.host.GPUModel(node)
}

// splitReplicas returns e's replicas among jobs: those that have not ended
// and those that have.
func splitReplicas(e *Endpoint, jobs []*model.Job) (live, ended []*model.Job) {
	for _, j := range jobs {
		switch {
		case !isReplica(e, j):
		case j.Status.State.Terminal():
			ended = append(ended, j)
		default:
			live = append(live, j)
		}
	}
	return live, ended
}
