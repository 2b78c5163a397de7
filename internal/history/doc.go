// Package history checks what a control plane did, as recorded in its
// store, against the safety properties no fault may break. The fault tests
// and the soak run (internal/e2e, scripts/soak.sh) record every change the
// servers committed, the leader election's terms and the submits clients
// saw acknowledged, and Check replays them in revision order:
//
//   - no acknowledged job lost: every acknowledged ID is in the final state;
//   - no GPU over-bound: at no revision do the jobs holding a GPU (states
//     that hold capacity, model.State.Holds) ask for more than a whole GPU
//     of it, so no whole GPU is bound to two jobs and fractions never add
//     up past one;
//   - no gang partly bound: a job that holds capacity holds an allocation
//     for every one of its instances;
//   - no job runs again on what it was told to stop: once a job stops
//     holding capacity, it holds again only in a later attempt;
//   - no Plan committed by a server that was not the leader: every write of
//     the scheduling fence names the server and term that committed it,
//     and that term was the leader's (alive, and the oldest alive) at the
//     fence's revision.
//
// Check is a pure function of the History; reading a history out of etcd
// is the caller's.
package history
