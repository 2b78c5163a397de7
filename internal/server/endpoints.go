package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/allot-dev/allot/internal/autoscale"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// Inference endpoints.
//
// An endpoint is stored under /endpoints/<name> (endpoint_record.go) with
// its spec, its desired replica count, the autoscaler's State and its
// events. Its replicas are ordinary jobs that the server submits through
// Submit, one instance each, labelled endpoint: NAME and workload:
// inference, carrying the endpoint's metrics token in their env; the
// scheduling core places them like any other job. A job counts as a replica
// of an endpoint only when it is of the endpoint's tenant, has the label and
// carries the endpoint's token, so neither another tenant's job nor a
// replica of an earlier endpoint of the same name is taken for one.
//
// Replicas report their load to POST /v1/endpoints/{name}/metrics with the
// endpoint's token (a Principal with Endpoint set, which may do nothing
// else); the reports are kept in memory (endpoint_metrics.go). Every
// reconcile (endpoint_reconcile.go) turns them into one autoscale.Sample,
// asks the autoscaler for the desired count, and submits or cancels
// replicas to match.

// Labels and env of replica jobs.
const (
	LabelEndpoint = "endpoint"
	LabelWorkload = model.LabelWorkload
	// WorkloadInference is the workload label of replicas: the core keeps
	// them off InfiniBand nodes while others fit.
	WorkloadInference = model.WorkloadInference

	EnvEndpoint           = "ALLOT_ENDPOINT"
	EnvEndpointToken      = "ALLOT_ENDPOINT_TOKEN"
	EnvEndpointMetricsURL = "ALLOT_ENDPOINT_METRICS_URL"
	EnvEndpointCA         = "ALLOT_ENDPOINT_CA"
)

// Kinds of endpoint events besides the autoscaler's (ScaleOut, ScaleIn,
// Hold: a decision that changed the desired count).
const (
	EventCreated         = "Created"         // the endpoint was created with its first replicas
	EventScaled          = "Scaled"          // min_replicas or max_replicas changed
	EventUpdated         = "Updated"         // the spec changed: what the autoscaler reads, or the template (a rollout begins)
	EventRestarted       = "Restarted"       // a restart was asked for: every replica is rolled over
	EventRolledOut       = "RolledOut"       // a rollout ended: no replica of an earlier template is left
	EventRolledBack      = "RolledBack"      // an undo: the earlier template is rolled out again
	EventReplicaReplaced = "ReplicaReplaced" // fewer replicas ran than desired: new ones were submitted
	EventReplicaRefused  = "ReplicaRefused"  // submitting a replica was refused (quota, SKU, the tenant's job limit, budget)
)

// MaxEndpointEvents is how many events an endpoint keeps, the newest.
const MaxEndpointEvents = 100

// maxEndpointRecord bounds an endpoint's stored form; it leaves room for
// its events.
const maxEndpointRecord = 512 << 10

// maxEventReason bounds the reason of one event, in bytes.
const maxEventReason = 2048

// Endpoint is an inference endpoint as the server keeps it.
type Endpoint struct {
	Spec model.EndpointSpec
	// Desired is the replica count the endpoint should have, within
	// [MinReplicas, MaxReplicas].
	Desired int
	// State is the autoscaler's, passed back to it at every decision.
	State autoscale.State
	// Reason is the reason of the last decision that changed Desired.
	Reason string
	// Events are the newest MaxEndpointEvents changes, oldest first.
	Events    []EndpointEvent
	CreatedAt time.Time
	// RolloutSince is when the rollout of the endpoint's template began;
	// zero while every replica runs it (endpoint_rollout.go).
	RolloutSince time.Time
	// Restarted is when the endpoint was last restarted (RestartEndpoint),
	// which is part of its template; zero when never.
	Restarted time.Time
	// Unlabelled is the template of replicas that carry no LabelTemplate
	// (submitted before templates were labelled): the endpoint's template
	// before its first change; empty while it never changed.
	Unlabelled string
	// Previous is the spec whose template (command, env, resources,
	// priority, placement) the endpoint had before its last template change
	// (an update, a restart or an undo), with PreviousRestarted its restart
	// time: what UndoEndpoint rolls back to. Nil while the template never
	// changed; its other fields are not read.
	Previous          *model.EndpointSpec
	PreviousRestarted time.Time
	// CrashLoop is the back-off of failing replicas (endpoint_backoff.go).
	CrashLoop CrashLoop

	token string // the replicas' metrics token
}

// EndpointEvent is one change of an endpoint: its kind, the desired count
// before and after, and why.
type EndpointEvent struct {
	At       time.Time
	Kind     string
	From, To int
	Reason   string
}

func (e *Endpoint) addEvent(at time.Time, kind string, from, to int, reason string) {
	if len(reason) > maxEventReason {
		reason = reason[:maxEventReason]
	}
	e.Events = append(e.Events, EndpointEvent{At: at, Kind: kind, From: from, To: to, Reason: reason})
	if n := len(e.Events); n > MaxEndpointEvents {
		e.Events = slices.Clone(e.Events[n-MaxEndpointEvents:])
	}
}

// EndpointParams returns the autoscaler's parameters for spec: the
// defaults with the spec's autoscale tuning.
func EndpointParams(spec model.EndpointSpec) autoscale.Params {
	return autoscale.ForEndpoint(spec)
}

// endpointBook is the server's endpoint state outside the store.
type endpointBook struct {
	// mu serialises every change of endpoints and their replicas: create,
	// scale, delete and a whole reconcile. It is held across their store
	// commits and submits, so that a reconcile never counts replicas while
	// another change adds or removes some.
	mu   sync.Mutex
	kick chan struct{} // asks for a reconcile soon; buffered 1

	metricsMu sync.Mutex                          // guards the fields below
	reports   map[string]map[string]replicaReport // endpoint -> reporter -> latest report
	windows   map[string][]autoscale.Sample       // endpoint -> samples, oldest first
	latest    map[string]string                   // endpoint -> reason of the latest decision
	gateways  map[string]*gatewayBook             // endpoint -> what gateways measured (endpoint_gateway.go)
	// gatewaysSeen is when each gateway last reported, by its name.
	gatewaysSeen map[string]time.Time
	// draining is, per endpoint, the replicas taken out of the routes to
	// be stopped once drained, and since when (endpoint_drain.go).
	draining map[string]map[string]time.Time
	// routesChanged is closed (and replaced) when something gateways route
	// by changed outside the jobs: a replica's address, a drain.
	routesChanged chan struct{}
}

func newEndpointBook() *endpointBook {
	return &endpointBook{kick: make(chan struct{}, 1), reports: map[string]map[string]replicaReport{},
		windows: map[string][]autoscale.Sample{}, latest: map[string]string{}, gateways: map[string]*gatewayBook{},
		gatewaysSeen: map[string]time.Time{}, draining: map[string]map[string]time.Time{}, routesChanged: make(chan struct{})}
}

// changedRoutes wakes the gateways' watches; metricsMu is held.
func (b *endpointBook) changedRoutes() {
	close(b.routesChanged)
	b.routesChanged = make(chan struct{})
}

// kickEndpoints asks for a reconcile soon.
func (s *Server) kickEndpoints() {
	select {
	case s.ep.kick <- struct{}{}:
	default:
	}
}

// endpointActor is the server acting for endpoint name: it submits and
// cancels the endpoint's replicas with the administrator's rights, and is
// named endpoint:NAME in logs and in the detail of a canceled replica.
func endpointActor(name string) Principal { return Principal{Admin: true, Endpoint: name} }

// replicaSpec returns the job spec of one replica of e.
func (s *Server) replicaSpec(e *Endpoint) model.JobSpec {
	sp := e.Spec
	env := maps.Clone(sp.Env)
	if env == nil {
		env = map[string]string{}
	}
	env[EnvEndpoint] = sp.Name
	env[EnvEndpointToken] = e.token
	delete(env, EnvEndpointMetricsURL)
	delete(env, EnvEndpointCA)
	if s.cfg.URL != "" {
		env[EnvEndpointMetricsURL] = s.cfg.URL + "/v1/endpoints/" + url.PathEscape(sp.Name) + "/metrics"
		if s.cfg.CA != "" {
			env[EnvEndpointCA] = s.cfg.CA
		}
	}
	return model.JobSpec{
		Name: sp.Name + "-replica", Tenant: sp.Tenant, Command: slices.Clone(sp.Command), Env: env,
		Resources: sp.Resources, Priority: sp.Priority, Placement: sp.Placement,
		Labels: map[string]string{LabelEndpoint: sp.Name, LabelWorkload: WorkloadInference, LabelTemplate: e.template()},
	}
}

// isReplica reports whether job j is a replica of e (see the package notes
// above: tenant, label and token).
func isReplica(e *Endpoint, j *model.Job) bool {
	return j.Spec.Tenant == e.Spec.Tenant && j.Spec.Labels[LabelEndpoint] == e.Spec.Name &&
		e.token != "" && j.Spec.Env[EnvEndpointToken] == e.token
}

// CreateEndpoint stores a new endpoint for p and submits its min_replicas
// replicas. The name is the endpoint's ID: letters, digits, '.', '_' and
// '-', unique (Conflict when taken). Like Submit, it refuses an endpoint of
// another tenant, of an unknown tenant, and one whose replica no SKU can
// ever hold or that alone exceeds the tenant's hard quota.
func (s *Server) CreateEndpoint(ctx context.Context, p Principal, spec model.EndpointSpec) (*Endpoint, error) {
	if !p.sees(spec.Tenant) {
		return nil, refuse(CodeForbidden, "tenant", "a token of tenant %q may not create endpoints of tenant %q", p.Tenant, spec.Tenant)
	}
	if !validName.MatchString(spec.Name) {
		return nil, refuse(CodeInvalidSpec, "name", "want 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if spec.Command == nil {
		spec.Command = slices.Clone(model.DefaultEndpointCommand)
	}
	if err := spec.Validate(); err != nil {
		return nil, fromField(err)
	}
	w := s.world()
	if !w.tenants[spec.Tenant] {
		return nil, refuse(CodeInvalidSpec, "tenant", "unknown tenant %q", spec.Tenant)
	}
	if err := s.checkReplicaLimit(spec.Tenant, spec.MinReplicas, "min_replicas"); err != nil { // its replicas are jobs of the tenant
		return nil, err
	}
	now := s.clock.Now()
	e := &Endpoint{Spec: spec, Desired: spec.MinReplicas, CreatedAt: now, token: newToken()}
	replica := s.replicaSpec(e)
	if err := replica.Validate(); err != nil {
		return nil, fromField(err)
	}
	if err := s.admissible(w, replica, now); err != nil {
		return nil, err
	}
	e.addEvent(now, EventCreated, 0, spec.MinReplicas, fmt.Sprintf("created by %s with min_replicas %d and max_replicas %d: starting %d replicas",
		p.Name(), spec.MinReplicas, spec.MaxReplicas, spec.MinReplicas))
	rec := encodeEndpoint(e)
	if n := len(rec); n > maxEndpointRecord {
		return nil, refuse(CodeTooLarge, "", "the endpoint takes %d bytes once stored, over the limit of %d KiB; shorten its command, env or names",
			n, maxEndpointRecord>>10)
	}
	key, tokKey := prefixEndpoints+spec.Name, prefixTokens+HashToken(e.token)
	tok := encodeTokenRecord(tokenRecord{Endpoint: spec.Name, CreatedAt: now})

	s.ep.mu.Lock()
	defer s.ep.mu.Unlock()
	rev, err := s.st.Txn(ctx, store.Txn{If: []store.Cond{store.Absent(key)},
		Then: []store.Op{store.PutOp(key, rec), store.PutOp(tokKey, tok)}})
	if errors.Is(err, store.ErrConflict) {
		return nil, refuse(CodeConflict, "name", "endpoint %q exists: 'allot endpoint update' changes it (its SLO, throughput, bounds and "+
			"autoscaler at once; its command, env, resources, priority or placement by a rolling update of its replicas)", spec.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("store endpoint: %w", err)
	}
	s.cache.putKV(tokKey, tok, rev)
	s.ep.forget(spec.Name) // reports of an earlier endpoint of this name
	s.log.Info("endpoint created", "endpoint", spec.Name, "tenant", spec.Tenant, "min", spec.MinReplicas,
		"max", spec.MaxReplicas, "by", p.Name())
	s.auditOther(ctx, p, spec.Tenant, ActionEndpointCreate, "endpoint/"+spec.Name, fmt.Sprintf("min_replicas %d, max_replicas %d",
		spec.MinReplicas, spec.MaxReplicas))
	// A replica that fails to go in now is submitted by the next reconcile.
	if _, err := s.addReplicas(ctx, e, spec.MinReplicas); err != nil {
		s.log.Warn("endpoint replicas not submitted", "endpoint", spec.Name, "err", err)
	}
	s.kickEndpoints()
	return e, nil
}

// addReplicas submits n replicas of e and returns those stored, with the
// first error; it stops at the tenant's limit on jobs not ended
// (checkReplicaLimit).
func (s *Server) addReplicas(ctx context.Context, e *Endpoint, n int) ([]*model.Job, error) {
	var out []*model.Job
	for range n {
		if err := s.checkReplicaLimit(e.Spec.Tenant, 1, ""); err != nil {
			return out, err
		}
		j, err := s.Submit(ctx, endpointActor(e.Spec.Name), s.replicaSpec(e))
		if err != nil {
			return out, err
		}
		out = append(out, j)
	}
	return out, nil
}

// loadEndpoint reads endpoint name as p may see it, with its ModRev.
func (s *Server) loadEndpoint(ctx context.Context, p Principal, name string) (*Endpoint, int64, error) {
	kv, err := s.st.Get(ctx, prefixEndpoints+name)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid) {
		return nil, 0, refuse(CodeNotFound, "", "no endpoint %q", name)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read endpoint %s: %w", name, err)
	}
	e, err := decodeEndpoint(kv.Value)
	if err != nil {
		return nil, 0, fmt.Errorf("read endpoint %s: %w", name, err)
	}
	if !p.sees(e.Spec.Tenant) {
		return nil, 0, refuse(CodeForbidden, "", "endpoint %q belongs to another tenant", name)
	}
	return e, kv.ModRev, nil
}

// EndpointStatus is an endpoint with what runs for it now.
type EndpointStatus struct {
	*Endpoint
	// Replicas are the replica jobs that have not ended, oldest first.
	Replicas []ReplicaStatus
	// Metrics is the last sample the replicas' reports made; nil before
	// the first.
	Metrics *autoscale.Sample
	// Decision is the reason of the autoscaler's latest decision, which
	// may have changed nothing (the stored Reason is that of the last
	// change).
	Decision string
	// Template is the hash of the endpoint's template (endpoint_rollout.go),
	// and PreviousTemplate that of the template an undo rolls back to
	// ("" when none).
	Template, PreviousTemplate string
	// URL is where callers reach the endpoint through the gateways; ""
	// when the server knows no gateway (Config.GatewayURL).
	URL string
	// Gateway is what the gateways measured over the last minute; nil
	// when none reported the endpoint.
	Gateway *GatewayMetrics
}

// ReplicaStatus is one replica job of an endpoint.
type ReplicaStatus struct {
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

// Endpoint returns the endpoint called name as p may see it.
func (s *Server) Endpoint(ctx context.Context, p Principal, name string) (EndpointStatus, error) {
	e, _, err := s.loadEndpoint(ctx, p, name)
	if err != nil {
		return EndpointStatus{}, err
	}
	return s.endpointStatus(e, s.replicaJobs()[name]), nil
}

// Endpoints returns the endpoints p may see, by name.
func (s *Server) Endpoints(ctx context.Context, p Principal) ([]EndpointStatus, error) {
	kvs, _, err := s.st.List(ctx, prefixEndpoints)
	if err != nil {
		return nil, fmt.Errorf("list endpoints: %w", err)
	}
	var jobs map[string][]*model.Job
	out := []EndpointStatus{}
	for _, kv := range kvs {
		e, err := decodeEndpoint(kv.Value)
		if err != nil {
			s.log.Error("skipping unreadable endpoint record", "key", kv.Key, "err", err)
			continue
		}
		if !p.sees(e.Spec.Tenant) {
			continue
		}
		if jobs == nil {
			jobs = s.replicaJobs()
		}
		out = append(out, s.endpointStatus(e, jobs[e.Spec.Name]))
	}
	return out, nil
}

func (s *Server) endpointStatus(e *Endpoint, jobs []*model.Job) EndpointStatus {
	current := e.template()
	st := EndpointStatus{Endpoint: e, Replicas: []ReplicaStatus{}, Template: current}
	if e.Previous != nil {
		st.PreviousTemplate = templateOf(*e.Previous, e.PreviousRestarted)
	}
	live, _ := splitReplicas(e, jobs)
	w := s.world()
	for _, j := range live {
		node, gpu := replicaNode(w, j)
		t := replicaTemplate(e, j)
		st.Replicas = append(st.Replicas, ReplicaStatus{Job: j.ID, State: j.Status.State, Reason: j.Status.Reason, Node: node, GPUModel: gpu,
			Template: t, Outdated: t != current})
	}
	st.Metrics, st.Decision = s.ep.last(e.Spec.Name)
	st.Gateway = s.ep.gatewayMetrics(e.Spec.Name, s.clock.Now())
	if s.cfg.GatewayURL != "" {
		st.URL = strings.TrimSuffix(s.cfg.GatewayURL, "/") + "/" + url.PathEscape(e.Spec.Name) + "/"
	}
	if st.Decision == "" {
		st.Decision = e.Reason
	}
	return st
}

// replicaNode returns the node a replica is bound to and its GPU model,
// empty while it is queued.
func replicaNode(w *world, j *model.Job) (node, gpuModel string) {
	if len(j.Status.Allocations) == 0 {
		return "", ""
	}
	node = j.Status.Allocations[0].Node
	if n, ok := w.nodes[node]; ok {
		gpuModel = w.fleet.Catalog[n.SKU].GPUModel
	}
	return node, gpuModel
}

// replicaJobs returns the jobs labelled as replicas, ended or not, by the
// endpoint they name, oldest first.
func (s *Server) replicaJobs() map[string][]*model.Job {
	out := map[string][]*model.Job{}
	// Ended replicas stay whole in the cache (ended.go).
	for _, j := range s.cache.wholeJobs(func(j *model.Job) bool { return replicaLabels(j.Spec.Labels) }) {
		name := j.Spec.Labels[LabelEndpoint]
		out[name] = append(out[name], j)
	}
	for _, js := range out {
		slices.Reverse(js) // wholeJobs is newest first
	}
	return out
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

// ScaleEndpoint sets the endpoint's min_replicas and max_replicas. The
// desired count moves into the new bounds at once; the next reconcile adds
// or stops replicas.
func (s *Server) ScaleEndpoint(ctx context.Context, p Principal, name string, minReplicas, maxReplicas int) (*Endpoint, error) {
	s.ep.mu.Lock()
	defer s.ep.mu.Unlock()
	e, modRev, err := s.loadEndpoint(ctx, p, name)
	if err != nil {
		return nil, err
	}
	sp := e.Spec
	sp.MinReplicas, sp.MaxReplicas = minReplicas, maxReplicas
	if err := sp.Validate(); err != nil {
		return nil, fromField(err)
	}
	if err := s.checkReplicaLimit(e.Spec.Tenant, minReplicas-e.Desired, "min_replicas"); err != nil {
		return nil, err
	}
	if sp.MinReplicas == e.Spec.MinReplicas && sp.MaxReplicas == e.Spec.MaxReplicas {
		return e, nil
	}
	from := e.Desired
	to := min(max(from, minReplicas), maxReplicas)
	reason := fmt.Sprintf("%s set min_replicas %d → %d and max_replicas %d → %d", p.Name(),
		e.Spec.MinReplicas, minReplicas, e.Spec.MaxReplicas, maxReplicas)
	if to != from {
		reason += fmt.Sprintf(": desired %d → %d", from, to)
	}
	e.Spec, e.Desired = sp, to
	now := s.clock.Now()
	e.addEvent(now, EventScaled, from, to, reason)
	if to != from {
		e.Reason = reason
	}
	if err := s.putEndpoint(ctx, "scale", e, encodeEndpoint(e), modRev); err != nil {
		return nil, err
	}
	s.log.Info("endpoint scaled", "endpoint", name, "min", minReplicas, "max", maxReplicas, "desired", to, "by", p.Name())
	s.auditOther(ctx, p, e.Spec.Tenant, ActionEndpointScale, "endpoint/"+name, reason)
	s.kickEndpoints()
	return e, nil
}

// putEndpoint stores rec, the record of e, if the endpoint is still at
// modRev (as loadEndpoint read it); what names the change in errors.
func (s *Server) putEndpoint(ctx context.Context, what string, e *Endpoint, rec []byte, modRev int64) error {
	key := prefixEndpoints + e.Spec.Name
	_, err := s.st.Txn(ctx, store.Txn{If: []store.Cond{store.ModRevIs(key, modRev)}, Then: []store.Op{store.PutOp(key, rec)}})
	if errors.Is(err, store.ErrConflict) {
		return refuse(CodeConflict, "", "endpoint %q changed meanwhile; try again", e.Spec.Name)
	}
	if err != nil {
		return fmt.Errorf("%s endpoint %s: %w", what, e.Spec.Name, err)
	}
	return nil
}

// DeleteEndpoint stops every replica of the endpoint, then deletes it and
// its token.
func (s *Server) DeleteEndpoint(ctx context.Context, p Principal, name string) error {
	s.ep.mu.Lock()
	defer s.ep.mu.Unlock()
	e, modRev, err := s.loadEndpoint(ctx, p, name)
	if err != nil {
		return err
	}
	live, _ := splitReplicas(e, s.replicaJobs()[name])
	for _, j := range live {
		if err := s.stopReplica(ctx, e, j); err != nil {
			return err
		}
	}
	key := prefixEndpoints + name
	tokKey := prefixTokens + HashToken(e.token)
	rev, err := s.st.Txn(ctx, store.Txn{If: []store.Cond{store.ModRevIs(key, modRev)},
		Then: []store.Op{store.DeleteOp(key), store.DeleteOp(tokKey)}})
	if errors.Is(err, store.ErrConflict) {
		return refuse(CodeConflict, "", "endpoint %q changed meanwhile; try again", name)
	}
	if err != nil {
		return fmt.Errorf("delete endpoint %s: %w", name, err)
	}
	s.cache.delKey(tokKey, rev)
	s.ep.forget(name)
	s.log.Info("endpoint deleted", "endpoint", name, "tenant", e.Spec.Tenant, "replicas stopped", len(live), "by", p.Name())
	s.auditOther(ctx, p, e.Spec.Tenant, ActionEndpointDelete, "endpoint/"+name, fmt.Sprintf("%d replicas stopped", len(live)))
	return nil
}

// stopReplica cancels replica j of e; one that ended meanwhile is left.
func (s *Server) stopReplica(ctx context.Context, e *Endpoint, j *model.Job) error {
	_, err := s.Cancel(ctx, endpointActor(e.Spec.Name), j.ID)
	var se *Error
	if errors.As(err, &se) && (se.Code == CodeConflict || se.Code == CodeNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop replica %s of endpoint %s: %w", j.ID, e.Spec.Name, err)
	}
	return nil
}
