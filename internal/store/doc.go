// Package store defines allot's persistent key-value contract: a flat,
// sorted key space of byte values with one global revision counter, atomic
// conditional transactions and ordered change streams. The server keeps jobs,
// nodes, tenants, tokens and the rest as JSON values under keys such as
// "/jobs/<id>"; backends (packages bolt and etcd) implement Store and are
// held to the contract by the conformance suite in package storetest.
//
// The contract:
//
//   - Revisions. The store has one revision counter that starts at 0 and
//     increases by exactly one for each committed transaction that changes at
//     least one key. Every change made by that transaction carries the new
//     revision. A transaction that changes nothing (only conditions, or
//     deletes of absent keys) commits no revision and returns the current one.
//     A backend whose revision is shared (package etcd uses etcd's cluster
//     revision, which other prefixes and the leader election also advance)
//     starts at that revision and may skip numbers between two of its own
//     transactions; revisions still increase strictly, one per transaction.
//   - Keys. Each live key has a CreateRev (the revision that created it since
//     it was last absent) and a ModRev (the revision that last wrote it).
//     Deleting a key forgets both; recreating it starts a new CreateRev.
//   - Transactions. A Txn is a list of conditions (a key's ModRev equals N, or
//     the key is absent when N is 0) and a list of puts and deletes, applied
//     all-or-nothing. A failed condition writes nothing and returns a
//     *ConflictError that names the key and matches ErrConflict. A Txn is
//     acknowledged only when it is durable: once Txn returns a revision, no
//     crash may lose it.
//   - Reads. Get and List read one consistent state; List returns keys sorted
//     by byte order and the store revision the read observed, which is the
//     revision to pass to Watch to continue from that state without gaps.
//     ListPage reads the same listing in pages, every page at the revision
//     of the first, so that a caller need not hold the whole store at once;
//     the concatenated pages equal List at that revision.
//   - Watch. Watch delivers every change with a revision greater than
//     fromRev under a prefix, in revision order and, within a revision, in key
//     order. Backends retain a bounded history; a fromRev older than that
//     history, or a watcher that falls that far behind, gets one Event with
//     Err matching ErrCompacted, after which the caller lists again and
//     watches from the list revision.
//   - Errors are sentinels checked with errors.Is: ErrNotFound, ErrConflict,
//     ErrCompacted, ErrClosed, ErrInvalid. Bad input (an empty or overlong
//     key, an overlong value, a malformed Txn) returns an *InvalidError naming
//     the field; it never panics.
//
// Values returned by a Store (KV.Value, Event KVs) may be shared with other
// readers and must not be modified.
package store
