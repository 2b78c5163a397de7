// Package etcd is allot's replicated store backend: a store.Store kept in an
// etcd cluster through go.etcd.io/etcd/client/v3, for control planes that
// must survive the loss of a machine.
//
// The contract is store's, with these choices:
//
//   - Namespace. Every key lives under one etcd prefix (Config.Prefix,
//     "/allot/" by default, always ending in "/"), so several allot
//     installations can share one etcd cluster. The store key "/jobs/a" is
//     the etcd key "/allot//jobs/a"; nothing outside the prefix is read,
//     written or watched.
//   - Revisions are etcd's own cluster revisions, unchanged: Rev, a KV's
//     CreateRev and ModRev, a Txn's result and an Event's Rev are the
//     numbers etcdctl shows. They increase strictly and each committed Txn
//     writes at exactly one revision, but a fresh store does not start at 0
//     and revisions skip the numbers that writes outside the prefix (another
//     installation, a leader election) take. Fencing can therefore compare a
//     store revision with an election key's revision directly.
//   - Txn is one etcd Txn: each Cond is a Compare of the key's
//     ModRevision (0 for an absent key), the operations are the success
//     branch, sorted by key so that a revision's watch events come out in
//     key order, and the failure branch reads the condition keys at the same
//     revision, so a *store.ConflictError names the first condition that
//     failed with the ModRev it found. A Txn that writes nothing (deletes of
//     absent keys) commits no revision, as in etcd. etcd answers once the
//     Txn is in the raft log of a majority of members, fsynced, so an
//     acknowledged Txn survives the loss of a minority.
//   - ListPage is a linearizable Range from just after the cursor to the end
//     of the prefix, with a limit and a revision; List reads such pages at
//     one revision. A compacted revision is store.ErrCompacted; a revision
//     above etcd's is store.ErrInvalid.
//   - Watch is an etcd watch with PrevKV from fromRev+1. History is what
//     etcd has not compacted (the cluster's --auto-compaction-* flags); a
//     watch from before it ends with one store.ErrCompacted event. A watch
//     stream that breaks for any other reason (a member stops, loses its
//     leader) is opened again, on any endpoint, after the last revision it
//     delivered, so the caller sees no gap and no repeat.
//   - Limits. Input is checked against store's limits (store.MaxValueLen and
//     the rest) before anything is sent. etcd enforces its own: a cluster
//     for allot needs --max-txn-ops of at least store.MaxTxnOps and
//     --max-request-bytes above the largest Txn the server writes; a Txn
//     etcd refuses for its size returns a *store.InvalidError naming the
//     etcd flag.
//   - Close waits for calls in flight, ends every watch with store.ErrClosed
//     and closes the client if Open made it. Later calls return
//     store.ErrClosed.
//
// Leader election (elect.go). Election is etcd's concurrency.Election on a
// lease of DefaultTermTTL, under the key range beside the namespace (the
// prefix "/allot/" elects under "/allot.leader/"), so listing and watching
// the store never see candidates. A won Campaign is a Term: its Store is
// Fenced, every Txn also comparing the CreateRevision of the term's
// election key with the revision the term began at. Once the term's lease
// expires or it resigns, the key is gone and a fenced Txn writes nothing
// and returns store.ErrFenced, whatever the deposed leader still believes;
// Term.Done tells the leader as soon as its client notices. Leader reads
// the current leader's value (its API URL) without campaigning.
//
// Client exposes the etcd client and Prefix the namespace.
package etcd
