package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/gateway"
)

// A short bench gateway, with the replica and the load generator in
// processes of their own and all in this one, answers every request both
// ways and says which setup it measured.
func TestBenchGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("sends load for a few seconds")
	}
	t.Setenv(asAllot, "1") // the children this test binary starts are allot
	for _, tc := range []struct {
		flags []string
		setup string
		cpu   bool // the gateway's CPU per request is measured
	}{{[]string{"--gateway-procs", "1"}, "three processes on", true}, {[]string{"--in-process"}, "one process", false}} {
		args := append([]string{"bench", "gateway", "--rps", "200", "--duration", "300ms", "-o", "json"}, tc.flags...)
		out, errOut, code := run(t, args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", tc.flags, code, errOut)
		}
		var r gateway.BenchResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %v: %s", tc.flags, err, out)
		}
		if tc.cpu && !strings.Contains(r.Setup, "GOMAXPROCS 1)") {
			t.Errorf("%v: setup %q, want the gateway on GOMAXPROCS 1", tc.flags, r.Setup)
		}
		if r.Direct.OK == 0 || r.Through.OK == 0 || r.Direct.Failed+r.Through.Failed != 0 || r.Through.P99 <= 0 ||
			r.AddedP99 != r.Through.P99-r.Direct.P99 || !strings.HasPrefix(r.Setup, tc.setup) || (r.GatewayCPU > 0) != tc.cpu {
			t.Errorf("%v: %+v", tc.flags, r)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--direct", "http://127.0.0.1:1/"}, "--direct and --through go together"},
		{[]string{"--direct", "http://127.0.0.1:1/", "--through", "http://127.0.0.1:2/x/", "--in-process"}, "--in-process starts"},
		{[]string{"--direct", "127.0.0.1:1", "--through", "http://127.0.0.1:2/x/"}, "want an http or https URL"},
		{[]string{"--rps", "0"}, "above 0"},
		{[]string{"--in-process", "--gateway-procs", "1"}, "--gateway-procs is 0 or more, and only"},
	} {
		if _, errOut, code := run(t, append([]string{"bench", "gateway"}, tc.args...)...); code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %s; want %d and %q", tc.args, code, errOut, ExitUsage, tc.want)
		}
	}
}
