// Package alert evaluates allot's built-in alerts: the rules of
// deploy/prometheus/rules.yaml, written as Go conditions over the values of
// the series /metrics exposes, for an install with no Prometheus.
//
// Contract: an Evaluator is a deterministic state machine. Evaluate takes
// Values (the series by name, as /metrics would show them at that moment)
// and now, the time of the evaluation; it returns the Transitions of that
// step, and Alerts lists what fires, what is pending and what resolved
// lately. It does no I/O, reads no clock, starts no goroutine and logs
// nothing: the caller owns the ticker, the log and the webhook, and the same
// sequence of (Values, now) always gives the same Transitions.
//
// One evaluation reads as three steps (see Evaluator.Evaluate):
//
//  1. record the counters and histogram buckets that range rules read
//     (increase over 10 m, rate over 5 m) and forget samples older than the
//     longest window;
//  2. evaluate every Rule: its condition gives the instances (label sets,
//     each with a value) that hold now;
//  3. advance each instance's state machine: an instance that starts to
//     hold is Pending, and Firing once it has held for the rule's For (at
//     once when For is 0); one that stops holding is dropped when it was
//     Pending and Resolved when it was Firing. Firing and Resolved are the
//     Transitions returned; Pending is not.
//
// Rules mirrors rules.yaml alert by alert; a test parses that file and
// fails when a name, a threshold, a window or a `for` differs.
package alert
