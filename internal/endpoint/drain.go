package endpoint

import (
	"context"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Draining: a running replica the reconcile wants gone (a scale-in, a
// rollout) is not stopped at once. It is first taken out of its
// endpoint's route (routes.go), which wakes every gateway's
// watch; it is stopped once every gateway heard from in the last
// gatewaySeen has reported, after the drain began, that it no longer
// routes to the replica and has no request in flight on it, or after
// DrainTimeout, whichever comes first. Without a gateway there is nothing
// to wait for and it is stopped at once. A replica that does not run
// serves nothing and is stopped at once too. A preempted replica, or one
// on a node that failed, leaves the route as its job leaves Running; its
// in-flight requests end with the process's own shutdown (allot demo
// serve finishes them on SIGTERM within its grace).

// DrainTimeout bounds the drain of one replica: requests still in flight
// on it after this long fail with it.
const DrainTimeout = 30 * time.Second

// drainOrStop stops replica j of e when it is drained (or need not be) and
// reports whether it did; otherwise it marks it draining.
func (b *Book) drainOrStop(ctx context.Context, e *Endpoint, j *model.Job, now time.Time) (bool, error) {
	name := e.Spec.Name
	if j.Status.State == model.StateRunning {
		b.metricsMu.Lock()
		since, marked := b.draining[name][j.ID]
		if !marked {
			if b.draining[name] == nil {
				b.draining[name] = map[string]time.Time{}
			}
			b.draining[name][j.ID] = now
			since = now
			b.changedRoutes()
		}
		done := b.drained(name, j.ID, since, now)
		b.metricsMu.Unlock()
		if !marked {
			b.log.Info("endpoint replica draining", "endpoint", name, "job", j.ID)
		}
		if !done {
			return false, nil
		}
	}
	if err := b.stopReplica(ctx, e, j); err != nil {
		return false, err
	}
	b.metricsMu.Lock()
	delete(b.draining[name], j.ID)
	b.metricsMu.Unlock()
	return true, nil
}

// drained reports whether replica job of endpoint name, draining since
// since, may stop at now (see the notes above); metricsMu is held.
func (b *Book) drained(name, job string, since, now time.Time) bool {
	if now.Sub(since) >= DrainTimeout {
		return true
	}
	var words map[string]replicaWord
	if g := b.gateways[name]; g != nil {
		words = g.words[job]
	}
	for gw, seen := range b.gatewaysSeen {
		if now.Sub(seen) > gatewaySeen {
			continue
		}
		if !seen.After(since) {
			return false // it has not reported since the drain began
		}
		w, ok := words[gw]
		if ok && !w.at.Before(seen) && (w.routed || w.inFlight > 0) {
			return false // its latest report still routes to the replica or has requests on it
		}
	}
	return true
}

// drainingOf returns the replicas of endpoint name that drain.
func (b *Book) drainingOf(name string) map[string]bool {
	b.metricsMu.Lock()
	defer b.metricsMu.Unlock()
	out := make(map[string]bool, len(b.draining[name]))
	for id := range b.draining[name] {
		out[id] = true
	}
	return out
}

// keepDraining clears the drain of endpoint name's replicas that are not
// in stop (the load rose again, a rollout changed its mind): they go back
// into the route.
func (b *Book) keepDraining(name string, stop []*model.Job) {
	b.metricsMu.Lock()
	defer b.metricsMu.Unlock()
	d := b.draining[name]
	if len(d) == 0 {
		return
	}
	keep := map[string]bool{}
	for _, j := range stop {
		keep[j.ID] = true
	}
	changed := false
	for id := range d {
		if !keep[id] {
			delete(d, id)
			changed = true
		}
	}
	if changed {
		b.changedRoutes()
	}
}
