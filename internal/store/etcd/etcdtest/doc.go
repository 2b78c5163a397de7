// Package etcdtest runs real etcd clusters inside a test process, with
// go.etcd.io/etcd/server/v3/embed, for the tests of the etcd store backend
// and of the commands that use it.
//
// Start launches n members on loopback ports in temporary directories and
// returns once every member serves clients; the cluster is stopped by the
// test's cleanup. Stop and Restart take one member down and bring it back on
// the same ports and data, so tests can prove that clients fail over and
// that a member catches up. StartTLS does the same with clients served
// over https only, each required to present a certificate of the given
// authority (package tlstest writes such files). Members run with allot's required limits
// (MaxTxnOps at least store.MaxTxnOps, MaxRequestBytes above
// store.MaxValueLen) and without fsync, which tests do not need; the Fsync
// option turns fsync on, for benchmarks of durable writes.
package etcdtest
