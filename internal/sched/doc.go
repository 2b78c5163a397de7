// Package sched is allot's scheduling core: one cycle turns an immutable
// Snapshot of the fleet, its tenancy and its jobs, taken at a moment now,
// into a Plan of binds, preemptions and a reason for every job left pending.
//
// The core is a function. It performs no I/O, starts no goroutines, never
// reads the wall clock and draws randomness only from seeds it is given, so
// the same Snapshot, now and Config always give the same Plan. The live
// server and the simulator are two drivers of this one core; neither has a
// placement path of its own.
//
// A cycle reads as five steps (see Scheduler.Schedule):
//
//  1. order the queue: priority class; then tenants whose next job fits
//     inside their partition's unused guarantee (reclaiming goes before
//     borrowing); then weighted fair share between tenants (used GPUs over
//     entitlement, guarantees counted); then the tenant's own order
//     (priority inside the class, then age);
//  2. admit: hard quotas per tenant, region and GPU series; partition
//     guarantees with their borrowing and lending limits; reservations,
//     whose nodes only the owner (and spot work it may evict) may use. At
//     the start of a cycle each active reservation, in the tenancy's order,
//     takes Count Ready nodes of its SKU and region: first those running
//     work that names it, then those holding no other tenant's work (idle,
//     or holding only the owner's work; idle ones first while work naming
//     it is queued), then those whose other work loses the fewest
//     GPU-seconds since its last checkpoint (for a reservation with a
//     start, nodes whose other work is all spot before the rest); ties by
//     node name; nodes no queued job naming it may use (while each names
//     its nodes) after all those; all from one cluster when one can give
//     them all, else from as few as can, so that a gang as large as it
//     fits. A job naming a reservation that got fewer nodes is told
//     why (NotReady nodes, nodes other reservations hold). A reservation
//     whose window lies ahead earmarks, in the tenancy's order, Count Ready
//     nodes no other reservation holds: those whose work all may precede
//     it first, then those where the least would stay past its start, then
//     by name, from as few clusters as can. Until its start an earmarked node takes only the owner's
//     work, spot work (evicted when the owner's work needs the node),
//     work whose retry.timeout plus checkpoint grace ends it by the start,
//     and work that checkpoints when its protection (MinRunTime) and one
//     checkpoint interval end by the start: evicted then as from an active
//     reservation, it loses at most one interval, where the node would
//     otherwise stand idle until the start (earmark.go, precedesInTime);
//     a Duration is an estimate and bounds nothing. Earmarks are worked
//     out afresh each cycle from the Snapshot and now, like the nodes of
//     active reservations; in the window the owner's idle nodes are lent
//     to spot work and taken back by preemption (ReservationOwner);
//  3. place: filters (GPU model, the SKU work is pinned to, the nodes the
//     job names or excludes, free whole GPUs or a milli-GPU fraction on
//     one GPU, CPU, memory, rack and region power caps, residency,
//     interconnect) and a pluggable Scorer; a gang of several instances is
//     placed all or nothing on one GPU model in one cluster (so on one
//     fabric, the cluster's; InfiniBand when it asks for infiniband), on the
//     fewest leaf groups. An inference replica (label workload:
//     inference) goes off InfiniBand when a node of another fabric fits
//     it, ahead of the scorer's choice: IB nodes are the training fleet's
//     gangs'; on one only when nothing else fits. A job whose checkpoint lies on one node's disk
//     (JobStatus.CheckpointNode) goes back to that node when it may run
//     there, ahead of the scorer's choice, and a gang puts each rank on the
//     node of its part (JobStatus.CheckpointParts; rank 0 on the node of a
//     checkpoint of one path): its next attempt resumes only where the
//     checkpoint is, unless two attempts failed there. Otherwise a job keeps off the nodes where its
//     attempts failed (Attempt.FailedNode) while other nodes fit (a gang:
//     of domains and of leaf groups as good, those with fewer such nodes
//     first). Last and least, a job that runs from an image prefers a
//     node that holds it (Snapshot.Images, as the agents report their
//     image caches): the Chooser adds ImageLocalityWeight (1e-6) to such a
//     node's score, a tie-break below any difference a scorer makes
//     between nodes that differ in what is free, which never overrides
//     fit, gang and fabric, fragmentation or reservations (images.go); a
//     job without an image is placed as if the term did not exist;
//  4. preempt: when a job of a higher class, a partition below its
//     guarantee, or a reservation's owner cannot be placed, evict the
//     victims that free enough capacity in one place while losing the
//     fewest GPU-seconds since their last checkpoint (also where all the
//     free capacity is other partitions' idle guarantee, when evicting
//     frees enough beyond it); work (a resumed job included) is protected
//     for Config.MinRunTime after it starts (spot work not from a partition
//     below its guarantee there, nor borrowing work from such a partition's
//     work queued before it started), and work whose every instance
//     runs in its own tenant's reservations is evicted only by its
//     tenant's work that names the reservation, of the same class or
//     above, when it needs those nodes (a gang partly outside is evictable
//     by others too, whole). Opt-in
//     (Config.PriorityGap, off by default): a job may also evict its own
//     tenant's work of its class whose priority value is at least the gap
//     below its own, on the same terms, in the tenant's reservations too
//     (priority.go). A job that could start once protected victims may be
//     evicted waits (AwaitingPreemption), and for the rest of the cycle the
//     nodes of those victims take no work it could evict there that no
//     guarantee covers (spot work, a lower class beyond its partition's
//     guarantee), so that newcomers, protected in turn, do not make it
//     wait again (await.go);
//  5. explain: every job left pending gets a Reason and a detail a person
//     can act on.
//
// Elastic jobs (model.Elastic, elastic.go) start as a gang of their
// minimum. In step 4, before evicting anything, the core takes back what
// elastic jobs hold above their minimum, the instances added last first,
// from the jobs the queued one may evict and only as much as it needs
// (a Resize with the preemption's reason). After the queue, running
// elastic jobs whose attempt has run Config.ResizeInterval grow, by steps,
// into capacity no queued job took, on their own cluster and GPU model,
// under every filter, never by preemption, leaving Snapshot.Headroom free
// (a Resize with reason IdleCapacity). A resize is a new attempt from the
// checkpoint; its cost is the work since then of every instance.
//
// Opt-in (Config.HoldAfter, off by default): before step 1, a queued job
// that needs more than one GPU and has waited HoldAfter keeps the nodes of
// one gang domain where the least running work stands in its way, so small
// jobs cannot starve a gang; until it starts they take only it, a higher
// class, spot work, other partitions' guaranteed work, work that surely
// ends before theirs, and work of its class and partition that
// checkpoints, which it evicts when it can start (reason HeldNodes). One
// job holds per domain and reservation (hold.go).
//
// A cycle works on indexes (nodes not full, by group; running work by
// class, partition and pool in victim order, and on reserved nodes; the
// groups each pool, quota series, rack and region spans) that it keeps in
// step as it binds and releases, so a decision costs what could change it
// rather than the size of the fleet. Preemption first reads the victim
// lists in no order to tell whether anyone may be evicted at all, and
// whether a short list could make room; only then does it read running
// work cheapest first, as far down as it needs, and answer a trial victim
// set from bounds on the room it leaves, or from the node or domain the
// previous trial found, before running the filters. When the first gang
// domain (for one instance, the first node) that the victims read give
// room decides the search, only that room's victims are moved and spared
// (onedomain.go), not the hundreds cheaper elsewhere that the whole search
// releases and restores; none of this changes which victims are chosen.
//
// Most of a long queue is answered without an attempt: a job that failed
// holds its verdict for every later job of its shape (appendShapeKey) until
// a preemption frees capacity the shape could use; and a failure in which
// the CPU and memory a job asks played no part (no node had its GPUs free,
// no victims could make room even for a job that asks none) holds for
// every job of its shape whatever CPU and memory it asks (miss.go). The
// busy bench's Plans decide alike with and without these (its
// decisions_sha256).
//
// Schedule builds that state from the Snapshot every cycle. A driver that
// learns of changes one at a time keeps a Session instead: it carries the
// nodes with what is bound on them, the running work, and the use of
// tenants, partitions and quotas from one cycle to the next, kept in step
// by deltas (Hold, Release, Update, SetHealth; Reset for a new fleet or
// tenancy). Each cycle redoes only what depends on now (reservation windows
// and their nodes, earmarks included, what evicting each job loses,
// protection, victim order),
// runs the same steps, then takes back what it bound and released: the
// driver reports the Plan once committed. A Session's Plan is Schedule's
// for the same work, byte for byte (TestSessionMatchesSchedule). A driver
// that has a whole Snapshot each cycle, as the server and the simulation
// engine do, plans through an Incremental: it compares the Snapshot with
// what its Session was told and tells it only the differences. A driver
// that wants to time decisions passes a Config.Observer: it is told of each
// decision and changes none.
//
// "Does not fit" is a Reason in the Plan, never an error. Preemption
// releases a victim's capacity in the same Plan that binds the preemptor; the
// agent starts the newcomer once the victim's processes have exited.
package sched
