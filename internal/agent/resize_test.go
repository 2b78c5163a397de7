package agent

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/server"
)

// When the server resizes an elastic job, the agent stops the old
// attempt's rank with its grace (SIGTERM: the job's trap saves and exits
// on its own) and starts the new attempt's ranks with the new world size;
// the rank that stays on its node starts only once the old one is gone.
func TestAgentResizesElasticJob(t *testing.T) {
	l := newLabWith(t, func(c *server.Config) { c.Sched.ResizeInterval = time.Second })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l.runAgent(t, ctx, "h100-01")
	l.runAgent(t, ctx, "h100-02")
	id := l.submit(t, `name: grow
tenant: team
command: ["sh", "-c", 'gone=no; test -e "$ALLOT_JOB_CHECKPOINT_DIR/old-done" && gone=yes;
  echo "attempt $ALLOT_ATTEMPT rank ${ALLOT_RANK:-0} of ${ALLOT_WORLD_SIZE:-1} old-gone:$gone";
  trap "sleep 0.5; touch $ALLOT_JOB_CHECKPOINT_DIR/old-done; echo stopped; exit 0" TERM;
  while :; do sleep 0.1; done']
resources: {gpus_per_instance: 8}
elastic: {min_instances: 1, max_instances: 2}
checkpoint: {grace: 20s}
`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := l.cl.GetJob(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == "Running" && j.Instances == 2 {
			if j.Resizes != 1 || len(j.AttemptHistory) != 2 || j.AttemptHistory[0].Reason != "Resized" {
				t.Fatalf("grown: %d resizes, attempts %+v", j.Resizes, j.AttemptHistory)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not grow to 2 instances: %s, %d instances (%s: %s)", j.State, j.Instances, j.Reason, j.Detail)
		}
		time.Sleep(100 * time.Millisecond)
	}
	l.logHas(t, id, "attempt 1 rank 0 of 1 old-gone:no")
	l.logHas(t, id, "stopped")
	deadline = time.Now().Add(10 * time.Second)
	for {
		var log bytes.Buffer
		if err := l.cl.Logs(ctx, id, 2, false, &log); err != nil {
			t.Fatal(err)
		}
		out := log.String()
		if strings.Contains(out, "[rank 0] attempt 2 rank 0 of 2 old-gone:yes") && strings.Contains(out, "[rank 1] attempt 2 rank 1 of 2") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt 2's log %q: want rank 0 started after the old rank was gone, and rank 1, both of world 2", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
