package history

import (
	"fmt"
	"slices"

	"github.com/allot-dev/allot/internal/model"
)

// Change is one key's change at a store revision.
type Change struct {
	Rev int64
	Key string // the store key, e.g. /jobs/ID or /sched/fence
	// Job is the job a /jobs/ key was set to; nil for a delete and for
	// other keys.
	Job *model.Job
	// Fence is the scheduling fence a Plan commit wrote; nil for other
	// keys and deletes.
	Fence *Fence
}

// Fence is what a Plan commit records about itself.
type Fence struct {
	By   string // the committing server's URL
	Term int64  // the revision its term began at; 0 without an election
}

// Term is one leadership as the election recorded it: the candidate's
// URL, the revision its election key was created at, and the revision it
// was deleted at (0: still held at the end).
type Term struct {
	URL        string
	Begin, End int64
}

// History is what a run recorded.
type History struct {
	Acked   []string // IDs of jobs whose submit was acknowledged
	Changes []Change // in revision order
	Terms   []Term
}

// Report is Check's verdict with the counts a soak prints.
type Report struct {
	Revisions int      // distinct revisions replayed
	Jobs      int      // jobs in the final state
	Acked     int      // acknowledged submits
	Lost      []string // acknowledged IDs missing at the end
	Commits   int      // Plan commits (fence writes)
	Leaders   int      // terms the election recorded
	// Counts of each broken property (a GPU over-bound at one revision
	// counts once per GPU).
	DoubleBound, PartialGangs, Reruns, StalePlans int
	Violations                                    []string // what broke a property, the first 100
}

// OK reports whether nothing was lost and nothing broke a property.
func (r Report) OK() bool { return len(r.Lost) == 0 && len(r.Violations) == 0 }

// maxViolations bounds Report.Violations.
const maxViolations = 100

type held struct {
	allocs   []model.Allocation
	attempts int
}

// Check replays h and reports every broken property.
func Check(h History) Report {
	r := Report{Acked: len(h.Acked), Leaders: len(h.Terms)}
	fail := func(count *int, format string, args ...any) {
		*count++
		if len(r.Violations) < maxViolations {
			r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
		}
	}
	jobs := map[string]*model.Job{} // the last value of each job
	holding := map[string]held{}    // jobs that hold capacity now
	stoppedAt := map[string]int{}   // attempts a job had when it last stopped holding
	for i := 0; i < len(h.Changes); {
		rev := h.Changes[i].Rev
		j := i
		for j < len(h.Changes) && h.Changes[j].Rev == rev {
			j++
		}
		r.Revisions++
		for _, c := range h.Changes[i:j] {
			switch {
			case c.Fence != nil:
				r.Commits++
				checkLeader(rev, *c.Fence, h.Terms, func(format string, args ...any) { fail(&r.StalePlans, format, args...) })
			case len(c.Key) > len("/jobs/") && c.Key[:len("/jobs/")] == "/jobs/":
				id := c.Key[len("/jobs/"):]
				if c.Job == nil {
					delete(jobs, id)
				} else {
					jobs[id] = c.Job
				}
				was, wasHolding := holding[id]
				if c.Job != nil && c.Job.Status.State.Holds() {
					n := len(c.Job.Status.Attempts)
					if !wasHolding {
						if last, ok := stoppedAt[id]; ok && n <= last {
							fail(&r.Reruns, "rev %d: job %s holds capacity again in attempt %d, which was stopped", rev, id, n)
						}
					}
					if !wholeGang(c.Job) {
						fail(&r.PartialGangs, "rev %d: job %s holds %d allocations for %d instances (a gang partly bound)",
							rev, id, len(c.Job.Status.Allocations), max(c.Job.Spec.Resources.InstanceCount, 1))
					}
					holding[id] = held{allocs: c.Job.Status.Allocations, attempts: n}
				} else if wasHolding {
					delete(holding, id)
					stoppedAt[id] = was.attempts
				}
			}
		}
		checkGPUs(rev, holding, func(format string, args ...any) { fail(&r.DoubleBound, format, args...) })
		i = j
	}
	r.Jobs = len(jobs)
	for _, id := range h.Acked {
		if jobs[id] == nil {
			r.Lost = append(r.Lost, id)
		}
	}
	return r
}

// checkGPUs fails when the jobs holding capacity at rev ask for more than
// a whole GPU of any one GPU.
func checkGPUs(rev int64, holding map[string]held, fail func(string, ...any)) {
	type gpu struct {
		node string
		i    int
	}
	milli := map[gpu]int64{}
	who := map[gpu][]string{}
	ids := make([]string, 0, len(holding))
	for id := range holding {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		for _, a := range holding[id].allocs {
			m := a.GPUMilli
			if m <= 0 {
				m = model.MilliPerGPU
			}
			for _, i := range a.GPUs {
				g := gpu{a.Node, i}
				milli[g] += m
				who[g] = append(who[g], id)
			}
		}
	}
	for g, m := range milli {
		if m > model.MilliPerGPU {
			fail("rev %d: GPU %d of %s bound %d milli to %v", rev, g.i, g.node, m, who[g])
		}
	}
}

// checkLeader fails when the fence written at rev was not committed in the
// leader's term: the term it names must be alive at rev and the oldest
// alive (etcd's election makes the candidate with the oldest key leader).
func checkLeader(rev int64, f Fence, terms []Term, fail func(string, ...any)) {
	if f.Term == 0 && len(terms) == 0 {
		return // no election: one server
	}
	var leader *Term
	for i := range terms {
		t := &terms[i]
		if t.Begin < rev && (t.End == 0 || rev < t.End) && (leader == nil || t.Begin < leader.Begin) {
			leader = t
		}
	}
	switch {
	case leader == nil:
		fail("rev %d: plan committed by %s in term %d while no term was alive", rev, f.By, f.Term)
	case leader.Begin != f.Term || leader.URL != f.By:
		fail("rev %d: plan committed by %s in term %d; the leader then was %s (term %d)", rev, f.By, f.Term, leader.URL, leader.Begin)
	}
}

// wholeGang reports whether a job holding capacity holds an allocation for
// each of its instances: its instance count, or for an elastic job a size
// its range and step allow (model.Elastic).
func wholeGang(j *model.Job) bool {
	n := len(j.Status.Allocations)
	if e := j.Spec.Elastic; e != nil {
		return n >= e.MinInstances && n <= e.MaxInstances && (n-e.MinInstances)%e.StepOrOne() == 0
	}
	return n == max(j.Spec.Resources.InstanceCount, 1)
}
