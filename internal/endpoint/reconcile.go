package endpoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/autoscale"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/refusal"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/store"
)

// DefaultInterval is the longest time between two reconciles of the
// endpoints (the server runs them at every --tick when that is shorter;
// they also run soon after an endpoint is created or scaled).
const DefaultInterval = 2 * time.Second

// Run reconciles every Config.Interval, and soon after a Kick, until ctx
// ends.
func (b *Book) Run(ctx context.Context) {
	t := time.NewTicker(b.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-b.kick:
		}
		if err := b.Reconcile(ctx); err != nil && ctx.Err() == nil {
			b.log.Error("reconcile endpoints", "err", err)
		}
	}
}

// Reconcile brings every endpoint's replicas in line with its
// metrics at the host's Now. For each endpoint, in order:
//
//  1. Replace: when fewer replicas live (jobs not ended) than the desired
//     count, submit new ones (a replica that failed, or was canceled by
//     someone else, is replaced), unless replicas that failed hold the
//     endpoint in its back-off (backoff.go) or one waits for the
//     tenant's quota; submits stop at the tenant's limit on jobs
//     (Jobs.CheckLimit). A submit refused is a ReplicaRefused event.
//  2. Measure: the replicas' fresh reports become one sample of the
//     endpoint's window.
//  3. Decide: the autoscaler, with the endpoint's parameters, the window,
//     the live replicas (ready when Running, with the GPU model of their
//     node) and the stored State, returns the desired count; a change is
//     an event with the decision's reason.
//  4. Act: submit replicas up to the desired count (held back as in
//     step 1), or stop the extras:
//     queued ones first, then those starting, then the newest running,
//     a running one only once it is drained (drain.go);
//     while replicas of an earlier template live, roll them over to the
//     endpoint's (rollout.go).
//  5. Persist the record when something in it changed.
//
// With no endpoint it reads one empty key range of the store.
func (b *Book) Reconcile(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	kvs, err := b.host.List(ctx)
	if err != nil {
		return fmt.Errorf("list endpoints: %w", err)
	}
	names := make(map[string]bool, len(kvs))
	if len(kvs) == 0 {
		b.forgetAllBut(names)
		b.m.keep(names)
		return nil
	}
	jobs := b.host.Replicas()
	var errs []error
	for _, kv := range kvs {
		e, err := decode(kv.Value)
		if err != nil {
			b.log.Error("skipping unreadable endpoint record", "key", kv.Key, "err", err)
			continue
		}
		names[e.Spec.Name] = true
		if err := b.reconcile(ctx, e, kv.ModRev, jobs[e.Spec.Name]); err != nil {
			errs = append(errs, fmt.Errorf("endpoint %s: %w", e.Spec.Name, err))
		}
	}
	b.forgetAllBut(names)
	b.m.keep(names)
	return errors.Join(errs...)
}

func (b *Book) reconcile(ctx context.Context, e *Endpoint, modRev int64, jobs []*model.Job) error {
	now := b.host.Now()
	name := e.Spec.Name
	live, ended := splitReplicas(e, jobs)
	changed := e.noteCrashes(live, ended, now)

	// 1. Replace.
	if n := e.Desired - len(live); n > 0 && b.mayAdd(e, live, now, &changed) {
		added, err := b.addReplicas(ctx, e, n)
		if len(added) > 0 {
			e.addEvent(now, EventReplicaReplaced, e.Desired, e.Desired, replacedReason(ended, len(live), e.Desired, added))
			live = append(live, added...)
			changed = true
		}
		if err != nil && !isRefusal(err) {
			return err
		}
		if err != nil && b.refused(e, now, err) {
			changed = true
		}
	}

	// 2. Measure.
	params := autoscale.ForEndpoint(e.Spec)
	window := b.sample(name, ended, now, windowKeep(params))

	// 3. Decide.
	current, outdated := byTemplate(e, live)
	// A draining replica is on its way out: counted, it would make a
	// scale-in look undone, and the next decision would ask for it back.
	draining := b.drainingOf(name)
	staying := func(js []*model.Job) []*model.Job {
		return slices.DeleteFunc(slices.Clone(js), func(j *model.Job) bool { return draining[j.ID] })
	}
	counted := rolloutCounted(e.Desired, staying(live), staying(outdated))
	replicas := make([]autoscale.Replica, len(counted))
	for i, j := range counted {
		_, gpu := b.replicaNode(j)
		replicas[i] = autoscale.Replica{GPUModel: gpu, Ready: j.Status.State == model.StateRunning}
	}
	d, st := params.Decide(e.Spec, window, replicas, now, e.State)
	b.setDecision(name, d.Reason)
	if st != e.State {
		e.State, changed = st, true
	}
	if d.Desired != e.Desired {
		b.log.Info("endpoint decision", "endpoint", name, "event", d.Event.String(), "from", e.Desired, "to", d.Desired, "reason", d.Reason)
		e.addEvent(now, d.Event.String(), e.Desired, d.Desired, d.Reason)
		e.Desired, e.Reason, changed = d.Desired, d.Reason, true
	}
	b.m.endpoint(name, viewOf(e, window, live, now))

	// 4. Act.
	surge, unavailable := e.Spec.Rollout.Bounds(e.Desired)
	add, stop := rolloutStep(e.Desired, surge, unavailable, current, outdated, b.servesFor(e, now))
	var actErr error
	left := len(outdated)
	b.keepDraining(name, stop)
	for _, j := range stop {
		stopped, err := b.drainOrStop(ctx, e, j, now)
		if err != nil {
			actErr = err
			break
		}
		if stopped && slices.Contains(outdated, j) {
			left--
			b.log.Info("endpoint replica replaced", "endpoint", name, "job", j.ID, "template", replicaTemplate(e, j))
		}
	}
	if add > 0 && actErr == nil && b.mayAdd(e, live, now, &changed) {
		added, err := b.addReplicas(ctx, e, add)
		current = append(current, added...)
		switch {
		case err != nil && !isRefusal(err):
			actErr = err
		case err != nil && b.refused(e, now, err):
			changed = true
		}
	}
	if left == 0 && !e.RolloutSince.IsZero() && actErr == nil {
		e.addEvent(now, EventRolledOut, e.Desired, e.Desired, rolledOut(e.template(), len(current), e.RolloutSince, now))
		e.RolloutSince, changed = time.Time{}, true
	}

	// 5. Persist.
	if changed {
		err := b.host.Put(ctx, name, encode(e), modRev)
		if err != nil && !errors.Is(err, store.ErrConflict) {
			return errors.Join(actErr, fmt.Errorf("store endpoint: %w", err))
		}
	}
	return actErr
}

// mayAdd reports whether replicas of e may be submitted at now: not while
// the endpoint backs off from failing replicas, nor while one of live
// waits for its tenant's quota (more would only wait too; that wait is
// recorded as a refusal, setting *changed when it adds an event).
func (b *Book) mayAdd(e *Endpoint, live []*model.Job, now time.Time, changed *bool) bool {
	if e.backingOff(now) {
		return false
	}
	for _, j := range live {
		if j.Status.State == model.StateQueued && j.Status.Reason == sched.QuotaExceeded.String() {
			err := refusal.New(refusal.QuotaExceeded, "", "replica %s waits for tenant %q's quota (QuotaExceeded): "+
				"no more replicas are submitted until it runs", j.ID, e.Spec.Tenant)
			if b.refused(e, now, err) {
				*changed = true
			}
			return false
		}
	}
	return true
}

// refused records a refused replica submit as an event, unless the last
// event says the same already, and reports whether it added one.
func (b *Book) refused(e *Endpoint, now time.Time, err error) bool {
	if !isRefusal(err) {
		return false
	}
	reason := "a new replica was refused: " + err.Error()
	if n := len(e.Events); n > 0 && e.Events[n-1].Kind == EventReplicaRefused && e.Events[n-1].Reason == reason {
		return false
	}
	b.log.Warn("endpoint replica refused", "endpoint", e.Spec.Name, "err", err)
	e.addEvent(now, EventReplicaRefused, e.Desired, e.Desired, reason)
	return true
}

func isRefusal(err error) bool { return refusal.Is(err) }

// replacedReason says why replicas were added to reach the desired count.
func replacedReason(ended []*model.Job, live, desired int, added []*model.Job) string {
	ids := make([]string, len(added))
	for i, j := range added {
		ids[i] = j.ID
	}
	why := fmt.Sprintf("%d of %d desired replicas were running or starting: submitted %v", live, desired, ids)
	var last *model.Job
	for _, j := range ended {
		if last == nil || j.Status.EndedAt.After(last.Status.EndedAt) {
			last = j
		}
	}
	if last != nil {
		why += fmt.Sprintf(" (replica %s ended %s: %s)", last.ID, last.Status.State, last.Status.Detail)
	}
	return why
}

// extras returns the n replicas to stop first: queued ones, then preempted
// and preparing ones, then the running ones that started last.
func extras(live []*model.Job, n int) []*model.Job {
	rank := func(s model.State) int {
		switch s {
		case model.StateQueued:
			return 0
		case model.StatePreempted:
			return 1
		case model.StatePreparing:
			return 2
		}
		return 3
	}
	order := slices.Clone(live)
	slices.SortStableFunc(order, func(a, b *model.Job) int {
		if c := cmp.Compare(rank(a.Status.State), rank(b.Status.State)); c != 0 {
			return c
		}
		if c := b.Status.StartedAt.Compare(a.Status.StartedAt); c != 0 {
			return c
		}
		return b.Status.SubmittedAt.Compare(a.Status.SubmittedAt)
	})
	return order[:min(n, len(order))]
}

// viewOf is what the endpoint's metrics show after a decision: the newest
// sample's p95 when it is fresh, the SLO and the replica counts.
func viewOf(e *Endpoint, window []autoscale.Sample, live []*model.Job, now time.Time) view {
	v := view{slo: e.Spec.SLO.P95, desired: e.Desired, live: len(live), ready: running(live)}
	if n := len(window); n > 0 && now.Sub(window[n-1].At) <= reportFresh {
		v.p95 = time.Duration(window[n-1].P95Ms * float64(time.Millisecond))
	}
	return v
}
