package etcdtest

import "testing"

// Members skip fsync unless the Fsync option asks for it.
func TestFsyncOption(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []Option
		noSync bool
	}{{"default", nil, true}, {"Fsync", []Option{Fsync()}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cluster{t: t}
			for _, o := range tc.opts {
				o(c)
			}
			if got := c.config(&member{name: "m0", dir: t.TempDir()}).UnsafeNoFsync; got != tc.noSync {
				t.Fatalf("UnsafeNoFsync %v, want %v", got, tc.noSync)
			}
		})
	}
}
