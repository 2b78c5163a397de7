// Package forecast says when queued work would start and where it would
// start best, by running the scheduling core forward on a Snapshot.
//
// A Forecaster takes the Snapshot the server (or a simulator) would hand
// the core, and a moment now. From now it steps from event to event:
//
//  1. release the work that ends at this moment: a running job ends at
//     started_at + its spec's duration (a job past its duration ends at
//     now); one without a duration runs for Options.UnknownRunTime, or
//     never ends when that is zero; a preempted job frees its capacity when
//     its checkpoint grace is over and goes back to the queue;
//  2. run the core (sched.Scheduler.Schedule) on the jobs as they are, the
//     queued ones held back until their not_before left out, and commit
//     the Plan with sched.Plan.Apply: the first bind of a queued job is
//     its estimated start;
//  3. go to the next event: the next end of running work, a reservation
//     window opening or closing, a held-back job's not_before, and, when
//     the core said a job waits for protected work, the end of that
//     protection (Config.MinRunTime after the victim started).
//
// When every job asked about that has not started waits for a reservation
// window that opens later, the run goes straight to the opening, beyond
// the horizon if need be: such a job cannot start before it.
//
// The run stops when every job asked about has started, when nothing is
// left to happen, at Options.Horizon after now or after Forecaster.Events
// cycles (a budget that shrinks as the fleet and queue grow); a job that has not started by then has no estimate, with the
// reason. Past half of that budget, events close together share one cycle
// (at the latest of them, in a window of half the time covered so far), so
// a deep queue is still reached; such an estimate errs late by at most the
// window, and Estimate.How says so. Options.MaxQueue caps the queued jobs carried (the highest class,
// priority and age first, the jobs asked about always). The estimate
// assumes no new submits and no cancels, and it ignores operator policies
// (they change the core's input from outside it).
//
// Region choice (region.go) ranks the regions a job may run in by predicted
// start, price and distance from the job's data; it never names a region
// outside the job's allowed regions or residency. Pin returns the job the
// core should see once a region is chosen.
//
// The package is pure like the core: no I/O, no goroutines, no wall clock.
// The same Snapshot, now and Options always give the same answer.
package forecast
