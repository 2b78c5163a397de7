package server

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Pipelines (model/pipeline.go). A job submitted with After is stored
// Blocked with the IDs its entries resolved to: a name of a job of the same
// submission (every job of that name, or every member of the array of that
// name: model.StepNames), else the ID of a job the submitter may see. Each cycle, before it plans, moves a Blocked job on from the
// states of its predecessors (advancePipelines): Queued once all
// Succeeded, Canceled (PredecessorFailed) once one ended otherwise (or as
// its AfterCondition asks: pipelineStep), and otherwise a detail naming
// what it still waits for. The move is written in
// the cycle's transaction, conditioned on the job's ModRev like every other
// write of the cycle.

// link is one resolved entry of a job's After: a job of the same batch
// (its index) or, when batch is -1, an existing job's ID; and what the job
// waits for of it.
type link struct {
	batch int
	id    string
	cond  model.AfterCondition
}

// resolveAfter resolves the After of every job of a submission. jobs[i]
// was made from specs[i]; nil jobs (refused already) are skipped. It
// returns the links of each job, and a refusal for every job whose After
// names an unknown job or one p may not see, or that waits for itself
// through others of the batch (model.AfterCycle).
func (s *Server) resolveAfter(p Principal, specs []model.JobSpec) ([][]link, []Refusal) {
	byName := map[string][]int{}
	for i := range specs {
		for _, n := range model.StepNames(&specs[i]) {
			byName[n] = append(byName[n], i)
		}
	}
	links := make([][]link, len(specs))
	var refused []Refusal
	for i := range specs {
		for k, pred := range specs[i].Predecessors() {
			field, a := fmt.Sprintf("after[%d]", k), pred.Ref
			if same := byName[a]; len(same) > 0 {
				for _, x := range same {
					if x != i {
						links[i] = append(links[i], link{batch: x, cond: pred.Condition})
					}
				}
				continue
			}
			ref, _, ok := s.cache.job(a)
			tenant := ""
			if ok {
				tenant = s.cache.tenantOf(a)
			}
			if !ok || !p.Sees(tenant) {
				refused = append(refused, Refusal{Index: i, Name: specs[i].Name, Err: refuse(CodeInvalidSpec, field,
					"unknown job %q: no job of this submission is named so and no job of yours has that ID", a)})
				continue
			}
			links[i] = append(links[i], link{batch: -1, id: ref.id, cond: pred.Condition})
		}
	}
	if c := model.AfterCycle(specs); c != nil {
		refused = append(refused, Refusal{Index: c[0], Name: specs[c[0]].Name, Err: refuse(CodeInvalidSpec, "after",
			"job %q waits for itself through a cycle: %s; a pipeline's steps must wait only for earlier steps",
			specs[c[0]].Name, model.CycleText(specs, c))})
	}
	return links, refused
}

// block writes the links of jobs, now that every job has its ID, into
// their After and sets those that wait Blocked, with the detail of what
// they wait for. It reports whether it changed any job.
func (s *Server) block(jobs []*model.Job, links [][]link) bool {
	inBatch := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		inBatch[j.ID] = true
	}
	state := func(id string) (model.State, bool) {
		if inBatch[id] {
			return model.StateQueued, true
		}
		return s.cache.stateOf(id)
	}
	changed := false
	for i, j := range jobs {
		if len(j.Spec.After) == 0 {
			continue
		}
		ids := make([]string, 0, len(links[i]))
		for _, l := range links[i] {
			id := l.id
			if l.batch >= 0 {
				id = jobs[l.batch].ID
			}
			ids = append(ids, model.Predecessor{Ref: id, Condition: l.cond}.Entry(j.Spec.AfterCondition))
		}
		j.Spec.After = ids
		j.Status.State = model.StateBlocked
		next, reason, detail := pipelineStep(j, state)
		if next != model.StateBlocked { // every predecessor ended already: the next cycle moves it on
			reason, detail = model.ReasonWaitsForPredecessor, "its predecessors ended; the next cycle queues or cancels it"
		}
		j.Status.Reason, j.Status.Detail = reason, detail
		changed = true
	}
	return changed
}

// pipelineStep decides what Blocked job j does given the states of its
// predecessors (state reports false for a job that no longer exists) and
// what it waits for of each (its AfterCondition, or an entry's own): go
// Queued when every one did what it was waited for (succeeded; ended;
// ended otherwise), be Canceled when one never will (for ok: it ended
// otherwise or is gone; for notok: it succeeded or is gone), else stay
// Blocked; with the reason and detail to show.
func pipelineStep(j *model.Job, state func(id string) (model.State, bool)) (next model.State, reason, detail string) {
	preds := j.Spec.Predecessors()
	mixed := slices.ContainsFunc(preds, func(p model.Predecessor) bool { return p.Condition != j.Spec.AfterCondition })
	var waits []string
	for _, p := range preds {
		id, cond := p.Ref, p.Condition
		st, ok := state(id)
		switch {
		case !ok && cond == model.AfterAny: // gone: it ended
		case !ok:
			return model.StateCanceled, model.ReasonPredecessorFailed, fmt.Sprintf("predecessor %s no longer exists", id)
		case !st.Terminal():
			if mixed {
				waits = append(waits, fmt.Sprintf("%s (%s) %s", id, st, toDo(cond)))
			} else {
				waits = append(waits, fmt.Sprintf("%s (%s)", id, st))
			}
		case cond == model.AfterAny:
		case cond == model.AfterNotOK && st == model.StateSucceeded:
			return model.StateCanceled, model.ReasonPredecessorSucceeded,
				fmt.Sprintf("predecessor %s succeeded; this step runs only after failures (after_condition: notok) and will not run", id)
		case cond == model.AfterNotOK:
		case st != model.StateSucceeded:
			return model.StateCanceled, model.ReasonPredecessorFailed,
				fmt.Sprintf("predecessor %s ended %s; this step will not run", id, st)
		}
	}
	if len(waits) == 0 {
		return model.StateQueued, "", ""
	}
	detail = "waits for " + strings.Join(waits, ", ")
	if !mixed && j.Spec.AfterCondition != model.AfterOK {
		detail += " " + toDo(j.Spec.AfterCondition)
	}
	return model.StateBlocked, model.ReasonWaitsForPredecessor, detail
}

// toDo says what a step waits for a predecessor to do.
func toDo(c model.AfterCondition) string {
	switch c {
	case model.AfterAny:
		return "to end, however it ends"
	case model.AfterNotOK:
		return "to end without succeeding"
	}
	return "to succeed"
}

// advancePipelines is the cycle's step 2b: it moves each Blocked job of
// snap on (pipelineStep) by the states of its predecessors, as this cycle
// leaves them (ended holds the jobs the cycle's facts changed), and returns
// the jobs it changes with a decision each, and whether one was unblocked
// (the next cycle may place it). A cancellation reaches the whole chain of
// steps after it in the same cycle.
func advancePipelines(snap snapshot, ended []*model.Job, now time.Time) ([]*model.Job, []decision, bool) {
	if len(snap.blocked) == 0 {
		return nil, nil, false
	}
	fresh := make(map[string]model.State, len(ended))
	for _, j := range ended {
		fresh[j.ID] = j.Status.State
	}
	state := func(id string) (model.State, bool) {
		if st, ok := fresh[id]; ok {
			return st, true
		}
		st, ok := snap.preds[id]
		return st, ok
	}
	moved := make(map[string]*model.Job, len(snap.blocked))
	var log []decision
	unblocked := false
	for pass := true; pass; {
		pass = false // another pass when a job was canceled: its successors follow
		for _, old := range snap.blocked {
			if moved[old.ID] != nil && moved[old.ID].Status.State != model.StateBlocked {
				continue
			}
			next, reason, detail := pipelineStep(old, state)
			var j *model.Job
			switch next {
			case model.StateBlocked:
				if old.Status.Reason == reason && old.Status.Detail == detail {
					continue
				}
				if m := moved[old.ID]; m != nil && m.Status.Detail == detail {
					continue
				}
				j = cloneJob(old)
				j.Status.Reason, j.Status.Detail = reason, detail
			case model.StateQueued:
				j = cloneJob(old)
				j.Status.State, j.Status.Reason, j.Status.Detail = model.StateQueued, "", ""
				waitForBegin(j, now)
				unblocked = true
				log = append(log, decision{kind: "unblocked", job: j, msg: "job unblocked: its predecessors " + predecessorsDid(old)})
			default:
				j = endJob(old, next, reason, detail, -1, now)
				fresh[j.ID] = next
				pass = true
				log = append(log, decision{kind: "ended", job: j, msg: "job canceled: a predecessor did not do what it waited for",
					args: []any{"reason", reason, "detail", detail}})
			}
			moved[old.ID] = j
		}
	}
	out := make([]*model.Job, 0, len(moved))
	for _, old := range snap.blocked { // in the snapshot's order
		if j := moved[old.ID]; j != nil {
			out = append(out, j)
			if j.Status.State == model.StateBlocked {
				log = append(log, decision{kind: "blocked", job: j, msg: "job blocked", args: []any{"detail", j.Status.Detail}})
			}
		}
	}
	return out, log, unblocked
}

// predecessorsDid says what j's predecessors did when it is unblocked.
func predecessorsDid(j *model.Job) string {
	for _, p := range j.Spec.Predecessors() {
		if p.Condition != j.Spec.AfterCondition {
			return "did what it waited for of each"
		}
	}
	switch j.Spec.AfterCondition {
	case model.AfterAny:
		return "ended"
	case model.AfterNotOK:
		return "ended without succeeding"
	}
	return "succeeded"
}

// stateOf returns the state of the job id, false when the cache has none.
func (c *cache) stateOf(id string) (model.State, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.jobs[id]
	return e.state, ok
}

// tenantOf returns the tenant of the job id, "" when the cache has none.
func (c *cache) tenantOf(id string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.jobs[id]
	if !ok {
		return ""
	}
	return e.tenant.Value()
}

// addBlockedLocked adds the Blocked job of e to snapshot s with the states
// of its predecessors; c.mu is held.
func (c *cache) addBlockedLocked(s *snapshot, e jobEntry) {
	if s.preds == nil {
		s.preds = map[string]model.State{}
	}
	s.blocked = append(s.blocked, e.job)
	s.modRev[e.job.ID] = e.modRev
	for _, pred := range e.job.Spec.Predecessors() {
		if p, ok := c.jobs[pred.Ref]; ok {
			s.preds[pred.Ref] = p.state
		}
	}
}

// pipelineOf is resolveAfter for a submission, nil and nil when no job of
// specs waits for another.
func (s *Server) pipelineOf(p Principal, specs []model.JobSpec) ([][]link, []Refusal) {
	for i := range specs {
		if len(specs[i].After) > 0 {
			return s.resolveAfter(p, specs)
		}
	}
	return nil, nil
}
