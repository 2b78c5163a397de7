package e2e

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGangRanksStartTogether runs a 4-node gang under 'allot up': the four
// ranks' own clocks must show them starting within a second of each other
// (issue 44: the ranks of a gang had started 22 s apart). That no rank is
// handed out while a node of the gang is still held by a stopping job is
// TestGangRanksWaitForTheLastNode's (internal/server).
func TestGangRanksStartTogether(t *testing.T) {
	needServer(t)
	url, admin := startUp(t, t.TempDir())
	run := func(args ...string) string {
		t.Helper()
		// The token goes before the job's command (allotAt would append it after --).
		return strings.TrimSpace(allotAtMust(t, url, "", append([]string{"job", "run", "--token", admin, "--tenant", "research", "-o", "json"}, args...)...))
	}
	id := func(out string) string {
		m := regexp.MustCompile(`"id":\s*"([^"]+)"`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("job run printed %q, want {\"id\": …}", out)
		}
		return m[1]
	}
	gang := id(run("--name", "gang", "--instances", "4", "--gpus", "8", "--gpu-model", "H100", "--region", "eastus",
		"--", "sh", "-c", `echo "started $(date +%s.%N)"; sleep 60`))
	// Every rank prints its start; the log holds all four once they ran.
	var starts []float64
	deadline := time.Now().Add(30 * time.Second)
	for len(starts) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s the gang's log shows %d of 4 starts:\n%s", len(starts), allotAtMust(t, url, admin, "job", "logs", gang))
		}
		time.Sleep(200 * time.Millisecond)
		starts = starts[:0]
		log := allotAt(t, url, admin, "job", "logs", gang).out // no attempt yet: an error, and nothing
		for _, m := range regexp.MustCompile(`started (\d+\.\d+)`).FindAllStringSubmatch(log, -1) {
			v, _ := strconv.ParseFloat(m[1], 64)
			starts = append(starts, v)
		}
	}
	spread := slices.Max(starts) - slices.Min(starts)
	t.Logf("4 ranks started within %.3f s", spread)
	if spread > 1 {
		t.Errorf("the gang's ranks started %.3f s apart, want within 1 s", spread)
	}
	allotAtMust(t, url, admin, "job", "cancel", "--force", gang)
}
