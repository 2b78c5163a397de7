package etcdtest

import (
	"net"
	"testing"
)

// A member whose port another process took between freeAddr and the bind
// does not fail the test: the cluster starts again on other ports.
func TestStartAgainWhenAPortIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	real := freeAddr
	calls := 0
	freeAddr = func(t testing.TB) string {
		calls++
		if calls == 1 {
			return taken.Addr().String() // lost to another process
		}
		return real(t)
	}
	defer func() { freeAddr = real }()
	c := Start(t, 1)
	if calls != 4 || c.Endpoints()[0] == "http://"+taken.Addr().String() {
		t.Fatalf("%d addresses asked for, endpoints %v; want a second start on new ports", calls, c.Endpoints())
	}
	if rev := c.Rev(); rev < 1 {
		t.Fatalf("revision %d", rev)
	}
}
