package endpoint

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/autoscale"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/refusal"
	"github.com/allot-dev/allot/internal/store"
)

// Labels and env of replica jobs.
const (
	// LabelEndpoint names the endpoint a replica job serves; with the
	// workload label model.WorkloadInference, which keeps the core's
	// replicas off InfiniBand nodes while others fit.
	LabelEndpoint = "endpoint"

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

// Audit actions of changes of a tenant's endpoint by someone else (the
// administrator); the owner's own are not recorded (docs/audit.md).
const (
	ActionCreate  = "endpoint.create"
	ActionUpdate  = "endpoint.update"
	ActionScale   = "endpoint.scale"
	ActionRestart = "endpoint.restart"
	ActionUndo    = "endpoint.undo"
	ActionDelete  = "endpoint.delete"
)

// MaxEvents is how many events an endpoint keeps, the newest.
const MaxEvents = 100

// maxRecord bounds an endpoint's stored form; it leaves room for its
// events.
const maxRecord = 512 << 10

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
	// Events are the newest MaxEvents changes, oldest first.
	Events    []Event
	CreatedAt time.Time
	// RolloutSince is when the rollout of the endpoint's template began;
	// zero while every replica runs it (rollout.go).
	RolloutSince time.Time
	// Restarted is when the endpoint was last restarted (Book.Restart),
	// which is part of its template; zero when never.
	Restarted time.Time
	// Unlabelled is the template of replicas that carry no LabelTemplate
	// (submitted before templates were labelled): the endpoint's template
	// before its first change; empty while it never changed.
	Unlabelled string
	// Previous is the spec whose template (command, env, resources,
	// priority, placement) the endpoint had before its last template change
	// (an update, a restart or an undo), with PreviousRestarted its restart
	// time: what Book.Undo rolls back to. Nil while the template never
	// changed; its other fields are not read.
	Previous          *model.EndpointSpec
	PreviousRestarted time.Time
	// CrashLoop is the back-off of failing replicas (backoff.go).
	CrashLoop CrashLoop

	token string // the replicas' metrics token
}

// Event is one change of an endpoint: its kind, the desired count before
// and after, and why.
type Event struct {
	At       time.Time
	Kind     string
	From, To int
	Reason   string
}

func (e *Endpoint) addEvent(at time.Time, kind string, from, to int, reason string) {
	if len(reason) > maxEventReason {
		reason = reason[:maxEventReason]
	}
	e.Events = append(e.Events, Event{At: at, Kind: kind, From: from, To: to, Reason: reason})
	if n := len(e.Events); n > MaxEvents {
		e.Events = slices.Clone(e.Events[n-MaxEvents:])
	}
}

// ReplicaOf returns the endpoint a job with labels is labelled a replica
// of ("" when none): its LabelEndpoint, with the inference workload. Only
// isReplica says whether the endpoint takes it for one.
func ReplicaOf(labels map[string]string) string {
	if labels[model.LabelWorkload] != model.WorkloadInference {
		return ""
	}
	return labels[LabelEndpoint]
}

// replicaSpec returns the job spec of one replica of e.
func (b *Book) replicaSpec(e *Endpoint) model.JobSpec {
	sp := e.Spec
	env := maps.Clone(sp.Env)
	if env == nil {
		env = map[string]string{}
	}
	env[EnvEndpoint] = sp.Name
	env[EnvEndpointToken] = e.token
	delete(env, EnvEndpointMetricsURL)
	delete(env, EnvEndpointCA)
	if b.cfg.URL != "" {
		env[EnvEndpointMetricsURL] = b.cfg.URL + "/v1/endpoints/" + url.PathEscape(sp.Name) + "/metrics"
		if b.cfg.CA != "" {
			env[EnvEndpointCA] = b.cfg.CA
		}
	}
	return model.JobSpec{
		Name: sp.Name + "-replica", Tenant: sp.Tenant, Command: slices.Clone(sp.Command), Env: env,
		Container: sp.Container.Clone(), Resources: sp.Resources, Priority: sp.Priority, Placement: sp.Placement,
		Labels: map[string]string{LabelEndpoint: sp.Name, model.LabelWorkload: model.WorkloadInference, LabelTemplate: e.template()},
	}
}

// isReplica reports whether job j is a replica of e (doc.go: tenant,
// label and token).
func isReplica(e *Endpoint, j *model.Job) bool {
	return j.Spec.Tenant == e.Spec.Tenant && j.Spec.Labels[LabelEndpoint] == e.Spec.Name &&
		e.token != "" && j.Spec.Env[EnvEndpointToken] == e.token
}

// Create stores a new endpoint for c and submits its min_replicas
// replicas. The name is the endpoint's ID: letters, digits, '.', '_' and
// '-', unique (Conflict when taken). Like a submit, it refuses an endpoint
// of another tenant, of an unknown tenant, and one whose replica no SKU
// can ever hold or that alone exceeds the tenant's hard quota.
func (b *Book) Create(ctx context.Context, c Caller, spec model.EndpointSpec) (*Endpoint, error) {
	if !c.Sees(spec.Tenant) {
		return nil, refusal.New(refusal.Forbidden, "tenant", "a token of tenant %q may not create endpoints of tenant %q", c.Name(), spec.Tenant)
	}
	if !model.ValidName(spec.Name) {
		return nil, refusal.New(refusal.InvalidSpec, "name", "%s", model.NameRule)
	}
	if spec.Command == nil && spec.Container == nil {
		spec.Command = slices.Clone(model.DefaultEndpointCommand)
	}
	if err := spec.Validate(); err != nil {
		return nil, refusal.FromField(err)
	}
	if !b.host.Tenant(spec.Tenant) {
		return nil, refusal.New(refusal.InvalidSpec, "tenant", "unknown tenant %q", spec.Tenant)
	}
	if err := b.host.CheckLimit(spec.Tenant, spec.MinReplicas, "min_replicas"); err != nil { // its replicas are jobs of the tenant
		return nil, err
	}
	now := b.host.Now()
	e := &Endpoint{Spec: spec, Desired: spec.MinReplicas, CreatedAt: now, token: b.host.NewToken()}
	replica := b.replicaSpec(e)
	if err := replica.Validate(); err != nil {
		return nil, refusal.FromField(err)
	}
	if err := b.host.Admissible(replica, now); err != nil {
		return nil, err
	}
	e.addEvent(now, EventCreated, 0, spec.MinReplicas, fmt.Sprintf("created by %s with min_replicas %d and max_replicas %d: starting %d replicas",
		c.Name(), spec.MinReplicas, spec.MaxReplicas, spec.MinReplicas))
	rec := encode(e)
	if n := len(rec); n > maxRecord {
		return nil, refusal.New(refusal.TooLarge, "", "the endpoint takes %d bytes once stored, over the limit of %d KiB; shorten its command, env or names",
			n, maxRecord>>10)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.host.Create(ctx, spec.Name, rec, e.token, now)
	if errors.Is(err, store.ErrConflict) {
		return nil, refusal.New(refusal.Conflict, "name", "endpoint %q exists: 'allot endpoint update' changes it (its SLO, throughput, bounds and "+
			"autoscaler at once; its command, env, resources, priority or placement by a rolling update of its replicas)", spec.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("store endpoint: %w", err)
	}
	b.forget(spec.Name) // reports of an earlier endpoint of this name
	b.log.Info("endpoint created", "endpoint", spec.Name, "tenant", spec.Tenant, "min", spec.MinReplicas,
		"max", spec.MaxReplicas, "by", c.Name())
	b.host.Audit(ctx, c, spec.Tenant, ActionCreate, "endpoint/"+spec.Name, fmt.Sprintf("min_replicas %d, max_replicas %d",
		spec.MinReplicas, spec.MaxReplicas))
	// A replica that fails to go in now is submitted by the next reconcile.
	if _, err := b.addReplicas(ctx, e, spec.MinReplicas); err != nil {
		b.log.Warn("endpoint replicas not submitted", "endpoint", spec.Name, "err", err)
	}
	b.Kick()
	return e, nil
}

// addReplicas submits n replicas of e and returns those stored, with the
// first error; it stops at the tenant's limit on jobs not ended
// (Jobs.CheckLimit).
func (b *Book) addReplicas(ctx context.Context, e *Endpoint, n int) ([]*model.Job, error) {
	var out []*model.Job
	for range n {
		if err := b.host.CheckLimit(e.Spec.Tenant, 1, ""); err != nil {
			return out, err
		}
		j, err := b.host.Submit(ctx, e.Spec.Name, b.replicaSpec(e))
		if err != nil {
			return out, err
		}
		out = append(out, j)
	}
	return out, nil
}

// read returns endpoint name's record, with its ModRev; NotFound when
// there is none.
func (b *Book) read(ctx context.Context, name string) (*Endpoint, int64, error) {
	kv, err := b.host.Get(ctx, name)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid) {
		return nil, 0, refusal.New(refusal.NotFound, "", "no endpoint %q", name)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read endpoint %s: %w", name, err)
	}
	e, err := decode(kv.Value)
	if err != nil {
		return nil, 0, fmt.Errorf("read endpoint %s: %w", name, err)
	}
	return e, kv.ModRev, nil
}

// load reads endpoint name as c may see it, with its ModRev.
func (b *Book) load(ctx context.Context, c Caller, name string) (*Endpoint, int64, error) {
	e, modRev, err := b.read(ctx, name)
	if err != nil {
		return nil, 0, err
	}
	if !c.Sees(e.Spec.Tenant) {
		return nil, 0, refusal.New(refusal.Forbidden, "", "endpoint %q belongs to another tenant", name)
	}
	return e, modRev, nil
}

// Scale sets the endpoint's min_replicas and max_replicas. The desired
// count moves into the new bounds at once; the next reconcile adds or
// stops replicas.
func (b *Book) Scale(ctx context.Context, c Caller, name string, minReplicas, maxReplicas int) (*Endpoint, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, modRev, err := b.load(ctx, c, name)
	if err != nil {
		return nil, err
	}
	sp := e.Spec
	sp.MinReplicas, sp.MaxReplicas = minReplicas, maxReplicas
	if err := sp.Validate(); err != nil {
		return nil, refusal.FromField(err)
	}
	if err := b.host.CheckLimit(e.Spec.Tenant, minReplicas-e.Desired, "min_replicas"); err != nil {
		return nil, err
	}
	if sp.MinReplicas == e.Spec.MinReplicas && sp.MaxReplicas == e.Spec.MaxReplicas {
		return e, nil
	}
	from := e.Desired
	to := min(max(from, minReplicas), maxReplicas)
	reason := fmt.Sprintf("%s set min_replicas %d → %d and max_replicas %d → %d", c.Name(),
		e.Spec.MinReplicas, minReplicas, e.Spec.MaxReplicas, maxReplicas)
	if to != from {
		reason += fmt.Sprintf(": desired %d → %d", from, to)
	}
	e.Spec, e.Desired = sp, to
	now := b.host.Now()
	e.addEvent(now, EventScaled, from, to, reason)
	if to != from {
		e.Reason = reason
	}
	if err := b.put(ctx, "scale", e, encode(e), modRev); err != nil {
		return nil, err
	}
	b.log.Info("endpoint scaled", "endpoint", name, "min", minReplicas, "max", maxReplicas, "desired", to, "by", c.Name())
	b.host.Audit(ctx, c, e.Spec.Tenant, ActionScale, "endpoint/"+name, reason)
	b.Kick()
	return e, nil
}

// put stores rec, the record of e, if the endpoint is still at modRev (as
// load read it); what names the change in errors.
func (b *Book) put(ctx context.Context, what string, e *Endpoint, rec []byte, modRev int64) error {
	err := b.host.Put(ctx, e.Spec.Name, rec, modRev)
	if errors.Is(err, store.ErrConflict) {
		return refusal.New(refusal.Conflict, "", "endpoint %q changed meanwhile; try again", e.Spec.Name)
	}
	if err != nil {
		return fmt.Errorf("%s endpoint %s: %w", what, e.Spec.Name, err)
	}
	return nil
}

// Delete stops every replica of the endpoint, then deletes it and its
// token.
func (b *Book) Delete(ctx context.Context, c Caller, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, modRev, err := b.load(ctx, c, name)
	if err != nil {
		return err
	}
	live, _ := splitReplicas(e, b.host.Replicas()[name])
	for _, j := range live {
		if err := b.stopReplica(ctx, e, j); err != nil {
			return err
		}
	}
	err = b.host.Delete(ctx, name, modRev, e.token)
	if errors.Is(err, store.ErrConflict) {
		return refusal.New(refusal.Conflict, "", "endpoint %q changed meanwhile; try again", name)
	}
	if err != nil {
		return fmt.Errorf("delete endpoint %s: %w", name, err)
	}
	b.forget(name)
	b.log.Info("endpoint deleted", "endpoint", name, "tenant", e.Spec.Tenant, "replicas stopped", len(live), "by", c.Name())
	b.host.Audit(ctx, c, e.Spec.Tenant, ActionDelete, "endpoint/"+name, fmt.Sprintf("%d replicas stopped", len(live)))
	return nil
}

// stopReplica cancels replica j of e; one that ended meanwhile is left.
func (b *Book) stopReplica(ctx context.Context, e *Endpoint, j *model.Job) error {
	err := b.host.Cancel(ctx, e.Spec.Name, j.ID)
	if refusal.Is(err, refusal.Conflict, refusal.NotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop replica %s of endpoint %s: %w", j.ID, e.Spec.Name, err)
	}
	return nil
}
