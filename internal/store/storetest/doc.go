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
package storetest
