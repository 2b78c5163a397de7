package cli

import (
	"strings"
	"testing"
)

// The bounds on jobs that would bound nothing are refused before anything
// starts, by every command that runs agents, naming the flag.
func TestJobLimitFlags(t *testing.T) {
	isolate(t)
	commands := map[string][]string{
		"agent":  {"agent", "--node", "n1", "--gpus", "virtual:1xT4", "--data", t.TempDir()},
		"up":     {"up", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--fleet", "../../examples/fleet.yaml", "--tenants", "../../examples/tenants.yaml"},
		"server": {"server", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--fleet", "../../examples/fleet.yaml", "--tenants", "../../examples/tenants.yaml"},
	}
	for name, base := range commands {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--job-pids", "3"}, "--job-pids 3: want 8 or more"},
			{[]string{"--job-log-mib", "0"}, "--job-log-mib 0: want 1 or more"},
			{[]string{"--stop-timeout", "0s"}, "--stop-timeout 0s: want a duration above 0"},
			{[]string{"--stop-timeout", "-5s"}, "--stop-timeout -5s"},
		} {
			_, e, code := runCLI(t, append(base[:len(base):len(base)], tc.args...)...)
			if code != ExitUsage || !strings.Contains(e, tc.want) {
				t.Errorf("%s %v: exit %d, want %d and %q: %s", name, tc.args, code, ExitUsage, tc.want, e)
			}
		}
	}
}
