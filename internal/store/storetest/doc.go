// Package storetest is the conformance suite every store.Store backend must
// pass. A backend's test calls Run with a constructor for fresh, empty
// stores:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { ... })
//	}
//
// The constructor should register the store's Close with t.Cleanup; the
// suite may close a store itself and ignores the cleanup's ErrClosed.
//
// A fresh store holds no keys, and nothing else writes to its backend while
// a test runs. Its revision need not be 0 (an etcd store's is the cluster's
// revision, see package store): the suite checks revisions relative to the
// one the store starts at, and that each committed Txn adds exactly one.
package storetest
