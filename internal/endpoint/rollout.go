package endpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/autoscale"
	"github.com/allot-dev/allot/internal/model"
)

// Rolling updates.
//
// What shapes a replica (command, env, resources, priority, placement) is
// the endpoint's template; every replica carries the template's hash in
// its LabelTemplate label. An update that changes the template does not
// touch the running replicas: from then on every reconcile rolls them over
// as a Kubernetes Deployment does (rolloutStep), by default with
// maxUnavailable 0 and maxSurge 25 % (the endpoint's rollout section may
// say otherwise, model.EndpointRollout): it submits replicas of the new
// template, up to a quarter of the desired count (at least one) over it,
// and stops an outdated replica only once enough new ones serve
// (servesFor: they run and have reported their load, or have run for the
// endpoint's lead time) that the serving count stays at the desired
// count. An outdated replica that does not run (queued,
// preempted, preparing) serves nothing and is stopped at once. When new
// replicas cannot start (no room, a failing command) the outdated ones go
// on serving; an update back to the earlier template makes them current
// again, since a template is named by its content.

// LabelTemplate is the label of a replica that names its endpoint's
// template: the first 10 hex digits of the template's SHA-256.
const LabelTemplate = "endpoint-template"

// templateOf returns the hash of what shapes spec's replicas, as the store
// keeps it (templateRecord), and of the last restart of the endpoint
// (zero: never restarted).
func templateOf(spec model.EndpointSpec, restarted time.Time) string {
	b, err := json.Marshal(templateRecord(&spec))
	if err != nil {
		panic(fmt.Sprintf("endpoint: template of %s: %v", spec.Name, err)) // only plain data: cannot happen
	}
	if !restarted.IsZero() {
		b = append(b, restarted.UTC().Format(time.RFC3339Nano)...)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:5])
}

// template is e's template.
func (e *Endpoint) template() string { return templateOf(e.Spec, e.Restarted) }

// replicaTemplate returns the template of e's replica j. A replica
// submitted before templates were labelled has the template e had before
// its first template change (e.Unlabelled), or e's own when it never
// changed.
func replicaTemplate(e *Endpoint, j *model.Job) string {
	if t := j.Spec.Labels[LabelTemplate]; t != "" {
		return t
	}
	if e.Unlabelled != "" {
		return e.Unlabelled
	}
	return e.template()
}

// byTemplate splits e's live replicas into those of its template and the
// outdated ones.
func byTemplate(e *Endpoint, live []*model.Job) (current, outdated []*model.Job) {
	t := e.template()
	for _, j := range live {
		if replicaTemplate(e, j) == t {
			current = append(current, j)
		} else {
			outdated = append(outdated, j)
		}
	}
	return current, outdated
}

// rolloutStep returns how many replicas of the current template to submit
// and which replicas to stop, given the desired count, the live replicas
// of the current template and of earlier ones, and how many replicas the
// rollout may run beyond desired (surge) and lack of it (unavailable).
// Without outdated replicas it fills up to desired or stops the extras
// (see extras). With some, it keeps at least desired − unavailable
// replicas serving and at most desired + surge live: outdated replicas
// that do not run stop at once, running ones as current ones serve
// (serves) or as unavailable allows.
func rolloutStep(desired, surge, unavailable int, current, outdated []*model.Job, serves func(*model.Job) bool) (add int, stop []*model.Job) {
	if len(outdated) == 0 {
		if len(current) < desired {
			return desired - len(current), nil
		}
		return 0, extras(current, len(current)-desired)
	}
	var serving []*model.Job
	for _, j := range outdated {
		if j.Status.State == model.StateRunning {
			serving = append(serving, j)
		} else {
			stop = append(stop, j)
		}
	}
	ready := 0
	for _, j := range current {
		if serves(j) {
			ready++
		}
	}
	if n := min(ready+len(serving)-(desired-unavailable), len(serving)); n > 0 {
		slices.SortStableFunc(serving, func(a, b *model.Job) int { return a.Status.StartedAt.Compare(b.Status.StartedAt) })
		stop, serving = append(stop, serving[:n]...), serving[n:]
	}
	if len(current) > desired {
		stop = append(stop, extras(current, len(current)-desired)...)
	}
	add = max(0, min(desired-len(current), desired+surge-len(current)-len(serving)))
	return add, stop
}

// rolloutCounted returns the live replicas the autoscaler counts: all of
// them, but while outdated ones live (a rollout) no more than desired,
// running ones first, since the replicas a rollout adds beyond it replace
// others.
func rolloutCounted(desired int, live, outdated []*model.Job) []*model.Job {
	if len(outdated) == 0 || len(live) <= desired {
		return live
	}
	var run, rest []*model.Job
	for _, j := range live {
		if j.Status.State == model.StateRunning {
			run = append(run, j)
		} else {
			rest = append(rest, j)
		}
	}
	return append(run, rest...)[:desired]
}

// servesFor returns whether a replica of e serves at now: it runs, and a
// gateway found it ready when gateways route to the endpoint; without
// gateways, it has reported its load since it started, or has run for the
// endpoint's lead
// time (from asking for a replica to its serving), so that a replica that
// never reports does not hold a rollout up for ever.
func (b *Book) servesFor(e *Endpoint, now time.Time) func(*model.Job) bool {
	lead := autoscale.ForEndpoint(e.Spec).LeadTime
	return func(j *model.Job) bool {
		if j.Status.State != model.StateRunning {
			return false
		}
		if b.gatewayRoutes(e.Spec.Name, now) {
			// Gateways route to the endpoint: only a replica they found
			// ready serves, or the rollout would drain the old replicas
			// while the new ones take no traffic yet.
			return b.gatewayReady(e.Spec.Name, j.ID, now)
		}
		return !now.Before(j.Status.StartedAt.Add(lead)) || b.reportedSince(e.Spec.Name, j.ID, j.Status.StartedAt)
	}
}

// running counts the jobs that run.
func running(jobs []*model.Job) int {
	n := 0
	for _, j := range jobs {
		if j.Status.State == model.StateRunning {
			n++
		}
	}
	return n
}

// rolledOut returns the event reason of a rollout that started at since
// and ended at now with n replicas of template t.
func rolledOut(t string, n int, since, now time.Time) string {
	return fmt.Sprintf("every replica runs template %s (%d live); the rollout took %s", t, n, now.Sub(since).Round(time.Second))
}
