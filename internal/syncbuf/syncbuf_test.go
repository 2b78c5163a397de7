package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers in many goroutines lose nothing, and a reader may look at any
// time (go test -race checks the locking).
func TestConcurrentWriters(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if i%2 == 0 {
					_, _ = b.Write([]byte("x"))
				} else {
					_, _ = b.WriteString("x")
				}
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Fatalf("%d bytes, want 800", len(got))
	}
}
