// Package policy evaluates an operator's policies (model.PolicySet) and
// turns the ones that apply into inputs of the scheduling core. It is pure:
// no I/O, no goroutines, no wall clock; time is the now its caller passes,
// and what it must remember between calls (which policies apply since when)
// it returns to the caller, who hands it back next time, as raft's RawNode
// hands out Ready.
//
// A driver (the server each cycle, the simulator at each step, allot policy
// test over a recording) does three things:
//
//  1. record: append samples to Metrics — RecordUtilization for the
//     fleet, its regions and clusters, and the latency percentiles its
//     endpoints report;
//  2. evaluate: Evaluate(policies, State{World, Active}, metrics, now)
//     returns a Firing for every policy that applies: its conditions all
//     hold now (Held), or they held less than the policy's cooldown ago.
//     The caller keeps the result as the next State's Active;
//  3. adjust: Adjust(snapshot, policies, firings, now) returns a copy of
//     the Snapshot whose jobs carry the priority classes the actions ask
//     for, and the list of those overrides (and of the ones an earlier
//     policy overruled); the core then schedules the copy. A driver that
//     adjusts every cycle keeps an Adjuster, whose buffers outlive a call.
//
// An action never lowers the class of a customer tenant's work
// (model.TenantCustomer) unless it names that tenant under tenants
// (model.Action.Tenants): a scale_down or migrate written for the
// operator's own developer and batch work leaves a paying customer's work
// as it is, and Adjust reports it as Ignored with the reason. An action
// that names tenants acts on their work only, customers or not.
//
// Actions only ever change what the core is given — a job's priority class
// in this copy of the Snapshot — so the core still makes every bind and
// every preemption, with its own rules and reasons. docs/policies.md
// states what each condition and action means; this package is that text
// in code.
package policy
