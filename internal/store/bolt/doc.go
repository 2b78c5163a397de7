// Package bolt is allot's embedded store backend: a store.Store kept in one
// bbolt file.
//
// Writes go through a single committer goroutine. Txn calls queue a request;
// the committer takes everything queued, checks and applies each request's
// conditions and operations in arrival order inside one bbolt read-write
// transaction (so later requests see the writes of earlier ones), and commits
// it with one fsync (group commit). Each Txn is acknowledged only after that
// commit returns, so an acknowledged Txn survives a crash, and because a
// bbolt commit is atomic a crash never leaves part of one.
//
// The file holds two buckets: "meta" (format version and store revision) and
// "kv" (each key with its CreateRev, ModRev and value). Watch is served from
// a bounded in-memory history of committed events; after Open the history
// starts empty at the file's revision, so a watch from an older revision gets
// store.ErrCompacted and must relist.
package bolt
