package cli

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/sched"
)

// Preemption and election flags that cannot work are refused before
// anything starts, naming the flag: a leader term under a second would be
// an etcd lease of 0 s, which meant the default without a word.
func TestServerFlagRanges(t *testing.T) {
	base := []string{"server", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--agents", "simulated",
		"--fleet", "../../examples/fleet.yaml", "--tenants", "../../examples/tenants.yaml"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--min-run-time", "-1m"}, "--min-run-time -1m0s"},
		{[]string{"--priority-gap", "-5"}, "--priority-gap -5"},
		{[]string{"--hold-after", "-1h"}, "--hold-after -1h0m0s: want 0 (off) or more"},
		{[]string{"--resize-interval", "0"}, "--resize-interval 0s: want at least 1s"},
		{[]string{"--leader-ttl", "0"}, "--leader-ttl 0s: want at least 1s"},
		{[]string{"--leader-ttl", "500ms"}, "--leader-ttl 500ms: want at least 1s"},
		{[]string{"--log-memory-mib", "1"}, "--log-memory-mib 1: want 2 to 1048576"},
		{[]string{"--job-retention", "24h"}, "--job-retention 24h0m0s: want 0 (keep for ever) or at least 768h0m0s"},
		{[]string{"--max-jobs-per-tenant", "-1"}, "--max-jobs-per-tenant -1: want 0 (no bound) or more"},
		// A missing file (allot up run outside the repository, say) says
		// which flag names another.
		{[]string{"--fleet", "nowhere/fleet.yaml"}, "no such file or directory (paths are relative to the current directory, and the defaults are the repository's examples/: run from its root, or pass --fleet FILE)"},
		{[]string{"--tenants", "nowhere/tenants.yaml"}, "or pass --tenants FILE)"},
	} {
		_, e, code := run(t, append(base[:len(base):len(base)], tc.args...)...)
		if code != ExitUsage || !strings.Contains(e, tc.want) {
			t.Errorf("%v: exit %d, want %d and %q: %s", tc.args, code, ExitUsage, tc.want, e)
		}
	}
}

// The core's flags reach the core's Config, for allot server and allot up
// alike (both register the same serveFlags).
func TestServerFlagsReachTheCore(t *testing.T) {
	var f serveFlags
	cmd := &cobra.Command{Use: "server"}
	f.register(cmd, "")
	if err := cmd.ParseFlags([]string{"--min-run-time", "7m", "--priority-gap", "3", "--hold-after", "2h", "--reservation-earmark", "48h",
		"--resize-interval", "30s"}); err != nil {
		t.Fatal(err)
	}
	want := sched.Config{MinRunTime: 7 * time.Minute, PriorityGap: 3, HoldAfter: 2 * time.Hour, EarmarkLead: 48 * time.Hour,
		ResizeInterval: 30 * time.Second}
	if got := f.schedConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("core config %+v, want %+v", got, want)
	}
}
