// Package autoscale decides how many replicas an inference endpoint needs to
// keep its p95 latency within its SLO.
//
// Contract: Decide is a function. It takes the endpoint's spec, a window of
// metric samples (the caller aggregates its replicas' reports into one
// Sample per interval), the replicas that exist now (ready or still coming),
// now, and the State it returned last time; it returns a Decision (the
// desired replica count, whether that is a scale-out, a scale-in or a hold,
// and a sentence with the numbers that explain it) and the State to pass
// next time. It does no I/O, reads no clock, starts no goroutine and draws
// no random number: the same inputs give the same Decision, so the server
// and the simulator are two drivers of the same code, and a person can
// replay any decision. The caller turns Desired into replica records that
// the scheduling core places like any other work; the autoscaler never
// places anything.
//
// The steps of Decide, numbered as in the code:
//
//  0. Learn: a newest sample whose p95 missed the SLO, measured with every
//     ready replica reporting, raises the factor the forecast is planned
//     up by (State.Boost) by Params.MissBoost, up to Params.MissBoostMax;
//     it falls back by that factor every Params.MissEvery without a miss,
//     so it settles where the endpoint misses one sample in MissEvery.
//     The model plans for the p95 of a typical minute; an endpoint whose
//     traffic comes in bursts misses more minutes than it foresees, and
//     this is how the misses teach it the headroom such traffic needs.
//     Only a miss the model did not foresee teaches: every replica has
//     been ready for Params.Settle (else the miss may be the backlog
//     queued while too few served), and the model
//     says the ready replicas held the SLO at the rate measured. A miss
//     while too few replicas served (a ramp) is the count's, not the
//     traffic's.
//  1. Bounds: the desired count stays within [min_replicas, max_replicas].
//  2. Samples: without a sample, or with the newest one older than
//     Params.StaleAfter, the count holds (within the bounds) and the reason
//     says why.
//  3. Forecast: the arrival rate the endpoint must serve when a replica
//     asked for now is ready: the peak of the last Params.PeakWindow plus
//     the rising trend (the median of the slopes between every two samples
//     of Params.TrendWindow, never negative, and none until the samples
//     span half of it: a step is not a trend) times Params.LeadTime. The
//     extrapolation is bounded: the trend adds at most Params.MaxTrendShare
//     of the peak (by default the forecast is at most twice the peak
//     measured), so a ramp cannot run the forecast away.
//  4. Model: the smallest replica count whose predicted p95 at the forecast
//     is at most SLO × Params.Headroom (queue.go has the queueing model).
//     Replicas not yet ready count: their capacity is coming. The model's
//     p95 is never below the endpoint's service time (queue.go).
//  5. Observed: a sample whose p95 is above the SLO, measured with every
//     ready replica reporting, adds Params.BreachStep of the replicas even
//     when the model says the count suffices, unless replicas are still
//     coming, which it waits for, or came less than Params.Settle ago
//     (State.Unsettled): the backlog they are still serving is not a
//     miss of the model's.
//  6. Scale in slowly: only when a count that holds the SLO with
//     Params.ScaleInMargin more load than forecast has stayed below the
//     current count for Params.Stabilisation, at most Params.ScaleInStep of
//     the replicas (at least one) per Params.ScaleInInterval, and never
//     below the largest such count seen in that time. Scale-out is at once.
//     Because a scale-in needs the margin and a scale-out does not, a
//     steady load never moves the count back and forth.
//
// State carries what the rules need between calls (when the lower count was
// first seen, the largest lower count since, the last scale-in, the learnt
// boost and the last miss it counted), so the
// caller only stores it; its fields are exported so that it can be
// persisted as JSON.
package autoscale
