package model

import (
	"fmt"
	"strings"
)

// A pipeline is jobs that wait for each other: a job whose After is not
// empty is Blocked until every job it names Succeeded, then Queued; when
// one of them ends in any other way it is Canceled with reason
// PredecessorFailed. Its AfterCondition may ask instead for every one of
// them to end however it ends (a clean-up step, as Slurm's afterany) or to
// end without succeeding (a failure handler, as afternotok; one that
// succeeds cancels it, reason PredecessorSucceeded), and each entry of
// After may set its own ("any:cleanup": Predecessors). A Blocked job holds
// no GPUs and the core never sees it.

// AfterCondition is what a job's After waits for of each job it names.
type AfterCondition string

const (
	AfterOK    AfterCondition = ""      // succeeded (the default; "ok" in a job file)
	AfterAny   AfterCondition = "any"   // ended, however
	AfterNotOK AfterCondition = "notok" // ended without succeeding
)

// ParseAfterCondition reads a job file's after_condition: ok (or
// nothing), any or notok.
func ParseAfterCondition(s string) (AfterCondition, error) {
	switch s {
	case "", "ok":
		return AfterOK, nil
	case "any", "notok":
		return AfterCondition(s), nil
	}
	return "", fmt.Errorf("want ok (every job it waits for succeeded), any (they ended, however) or notok (they ended without succeeding), got %q%s",
		s, DidYouMean(s, []string{"ok", "any", "notok"}))
}

// String is the condition as a job file writes it.
func (c AfterCondition) String() string {
	if c == AfterOK {
		return "ok"
	}
	return string(c)
}

// Predecessor is one entry of a job's After: the job it names and what it
// waits for of it.
type Predecessor struct {
	Ref       string // a step's name or a job ID (an ID once stored)
	Condition AfterCondition
}

// Predecessors reads s.After. An entry may set its own condition as
// Slurm's --dependency does, "any:cleanup" or "notok:train" ("ok:" for
// succeeded); one without takes s.AfterCondition. A job whose name begins
// with one of those prefixes is named with its own: "ok:any:x".
func (s *JobSpec) Predecessors() []Predecessor {
	out := make([]Predecessor, len(s.After))
	for i, a := range s.After {
		out[i] = SplitAfter(a, s.AfterCondition)
	}
	return out
}

// SplitAfter reads one After entry, def being the job's AfterCondition.
func SplitAfter(entry string, def AfterCondition) Predecessor {
	if c, ref, ok := strings.Cut(entry, ":"); ok {
		switch c {
		case "ok":
			return Predecessor{Ref: ref, Condition: AfterOK}
		case "any", "notok":
			return Predecessor{Ref: ref, Condition: AfterCondition(c)}
		}
	}
	return Predecessor{Ref: entry, Condition: def}
}

// Entry writes p as an After entry of a job whose AfterCondition is def:
// with its condition's prefix when it differs, or when the reference
// would read as one without it.
func (p Predecessor) Entry(def AfterCondition) string {
	if p.Condition == def && SplitAfter(p.Ref, def).Ref == p.Ref {
		return p.Ref
	}
	return p.Condition.String() + ":" + p.Ref
}

// MaxAfter is the most jobs one job may wait for.
const MaxAfter = 64

// Reasons of a job in a pipeline.
const (
	// ReasonWaitsForPredecessor is the reason of a Blocked job; its
	// detail names each predecessor not yet succeeded and its state.
	ReasonWaitsForPredecessor = "WaitsForPredecessor"
	// ReasonPredecessorFailed is the reason of a job canceled because a
	// job it waited for failed, was canceled or timed out.
	ReasonPredecessorFailed = "PredecessorFailed"
	// ReasonPredecessorSucceeded is the reason of a job canceled because
	// it was to run only after failures (AfterNotOK) and a job it waited
	// for succeeded.
	ReasonPredecessorSucceeded = "PredecessorSucceeded"
)

// validateAfter checks After on its own: entries named (after their
// condition, if any), printable, each job once, and none the job's own
// name; and AfterCondition, known and only with After.
func (s *JobSpec) validateAfter() []error {
	var errs []error
	if c := s.AfterCondition; c != AfterOK && c != AfterAny && c != AfterNotOK {
		errs = append(errs, fieldErr("after_condition", "unknown condition %q: want any or notok, or leave it out (ok)", c))
	} else if s.AfterCondition != AfterOK && len(s.After) == 0 {
		errs = append(errs, fieldErr("after_condition", "is %s, but the job waits for no job: give after too", s.AfterCondition))
	}
	if len(s.After) > MaxAfter {
		return []error{fieldErr("after", "lists %d jobs, over the limit of %d", len(s.After), MaxAfter)}
	}
	seen := make(map[string]bool, len(s.After))
	for i, entry := range s.After {
		f := fmt.Sprintf("after[%d]", i)
		a := SplitAfter(entry, s.AfterCondition).Ref
		switch {
		case strings.TrimSpace(entry) == "":
			errs = append(errs, fieldErr(f, "must not be empty: name a job of the same file or give a job ID"))
		case strings.TrimSpace(a) == "":
			errs = append(errs, fieldErr(f, "%q names no job after its condition: write CONDITION:JOB, e.g. any:prepare", entry))
		case len(a) > 253:
			errs = append(errs, fieldErr(f, "must be at most 253 characters"))
		case Printable(f, a) != nil:
			errs = append(errs, Printable(f, a))
		case a == s.Name:
			errs = append(errs, fieldErr(f, "job %q cannot wait for itself", a))
		case seen[a]:
			errs = append(errs, fieldErr(f, "%q is listed twice", a))
		}
		seen[a] = true
	}
	return errs
}

// AfterCycle finds jobs of specs that wait for each other in a circle,
// where job i waits for job k when specs[i].After holds one of the
// StepNames of specs[k]. It
// returns the indices along one such circle, starting and ending at the
// same job (a → b → a), or nil when there is none. Entries of After that
// name no job of specs (job IDs) are not followed.
func AfterCycle(specs []JobSpec) []int {
	byName := make(map[string][]int, len(specs))
	for i := range specs {
		for _, n := range StepNames(&specs[i]) {
			byName[n] = append(byName[n], i)
		}
	}
	const (
		unseen = iota
		onPath
		done
	)
	mark := make([]int, len(specs))
	var path []int
	var visit func(i int) []int
	visit = func(i int) []int {
		mark[i] = onPath
		path = append(path, i)
		for _, a := range specs[i].Predecessors() {
			for _, k := range byName[a.Ref] {
				switch mark[k] {
				case onPath:
					for p, x := range path {
						if x == k {
							return append(append([]int(nil), path[p:]...), k)
						}
					}
				case unseen:
					if c := visit(k); c != nil {
						return c
					}
				}
			}
		}
		path = path[:len(path)-1]
		mark[i] = done
		return nil
	}
	for i := range specs {
		if mark[i] == unseen {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}

// StepNames are the names by which the After of other jobs refers to s:
// its name and, for a member of a job array (NAME[IDX]), the array's name
// NAME, so that a step after an array waits for every member.
func StepNames(s *JobSpec) []string {
	if s.ArrayIndex != nil {
		if base, ok := strings.CutSuffix(s.Name, fmt.Sprintf("[%d]", *s.ArrayIndex)); ok && base != "" {
			return []string{s.Name, base}
		}
	}
	return []string{s.Name}
}

// CycleText writes the circle AfterCycle found by job names: "a → b → a".
func CycleText(specs []JobSpec, cycle []int) string {
	names := make([]string, len(cycle))
	for i, k := range cycle {
		names[i] = specs[k].Name
	}
	return strings.Join(names, " → ")
}
