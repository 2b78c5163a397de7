package launch

import (
	"os"
	"testing"
)

// A cgroup with a pids limit has it in pids.max before anything starts in
// it.
func TestCgroupPidsMax(t *testing.T) {
	c := &Cgroup{Path: t.TempDir() + "/i", PidsMax: 64}
	if err := c.make(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(c.Path + "/pids.max"); err != nil || string(b) != "64" {
		t.Errorf("pids.max = %q, %v; want 64", b, err)
	}
}
