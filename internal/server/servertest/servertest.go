// Package servertest gives tests of the control plane what a server runs
// on: the repository's example fleet and tenants (or the agent lab's, the
// three-node fleet of internal/e2e/testdata), and a bolt store that the
// test closes when it ends. It imports no part of the server, so the
// server's own tests use it too.
package servertest

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/store/bolt"
)

// root is the repository, found from this file's place in it.
func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Example reads examples/fleet.yaml and examples/tenants.yaml.
func Example(t testing.TB) (*model.Fleet, *model.Tenancy) {
	t.Helper()
	return read(t, "examples/fleet.yaml", "examples/tenants.yaml")
}

// Lab reads the agent lab's fleet and tenants: three 8×H100 nodes in
// region lab, guaranteed to tenant team.
func Lab(t testing.TB) (*model.Fleet, *model.Tenancy) {
	t.Helper()
	return read(t, "internal/e2e/testdata/agent-fleet.yaml", "internal/e2e/testdata/agent-tenants.yaml")
}

func read(t testing.TB, fleetFile, tenantsFile string) (*model.Fleet, *model.Tenancy) {
	t.Helper()
	fleet, err := spec.ReadFleet(filepath.Join(root(), fleetFile))
	if err != nil {
		t.Fatal(err)
	}
	ten, err := spec.ReadTenancy(filepath.Join(root(), tenantsFile), fleet)
	if err != nil {
		t.Fatal(err)
	}
	return fleet, ten
}

// Store opens the bolt store in dir/allot.db (dir "" means a new temporary
// directory); it is closed when the test ends.
func Store(t testing.TB, dir string) *bolt.Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	st, err := bolt.Open(filepath.Join(dir, "allot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
