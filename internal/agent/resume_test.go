package agent

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// A job that saved a checkpoint and failed resumes from it on its retry
// when the retry runs where the checkpoint is (the scheduler prefers that
// node). When that node is drained, the retry runs elsewhere without
// ALLOT_RESUME_FROM, and its log says where the checkpoint was.
func TestResumeOnlyWhereTheCheckpointIs(t *testing.T) {
	const job = `name: ckpt
tenant: team
command: ["sh", "-c", 'if [ -n "$ALLOT_RESUME_FROM" ]; then echo "resumed from $ALLOT_RESUME_FROM"; exit 0; fi;
  if [ "$ALLOT_ATTEMPT" -gt 1 ]; then echo "fresh start"; exit 0; fi;
  echo state > "$ALLOT_CHECKPOINT_DIR/ckpt-1"; echo ckpt-1 > "$ALLOT_CHECKPOINT_DIR/CHECKPOINT"; sleep 1; exit 1']
resources: {gpus_per_instance: 8}
retry: {max_retries: 1}
`
	for _, drain := range []bool{false, true} {
		name := "back on its node"
		if drain {
			name = "its node drained"
		}
		t.Run(name, func(t *testing.T) {
			l := newLab(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			l.runAgent(t, ctx, "h100-01")
			l.runAgent(t, ctx, "h100-02")
			id := l.submit(t, job)
			deadline := time.Now().Add(15 * time.Second)
			for {
				j, err := l.cl.GetJob(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if j.CheckpointNode != "" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no checkpoint reported: %+v", j)
				}
				time.Sleep(50 * time.Millisecond)
			}
			first, err := l.cl.GetJob(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			node := first.CheckpointNode
			if len(first.Allocations) != 1 || first.Allocations[0].Node != node {
				t.Fatalf("checkpoint on %q, job on %+v", node, first.Allocations)
			}
			if drain {
				if _, err := l.cl.DrainNode(ctx, node, "test"); err != nil {
					t.Fatal(err)
				}
			}
			j := l.waitState(t, id, "Succeeded")
			if len(j.AttemptHistory) != 2 {
				t.Fatalf("%d attempts, want 2", len(j.AttemptHistory))
			}
			var log bytes.Buffer
			if err := l.cl.Logs(ctx, id, 2, false, &log); err != nil {
				t.Fatal(err)
			}
			second := j.AttemptHistory[1].Nodes[0]
			if !drain {
				if second != node || !strings.Contains(log.String(), "resumed from "+first.CheckpointPath) {
					t.Errorf("retry on %s (checkpoint on %s) logged:\n%s\nwant it resumed there", second, node, log.String())
				}
				return
			}
			want := "starting without ALLOT_RESUME_FROM: the checkpoint " + first.CheckpointPath + " was saved on node " + node + ", not here"
			if second == node || !strings.Contains(log.String(), want) || !strings.Contains(log.String(), "fresh start") {
				t.Errorf("retry on %s (checkpoint on drained %s) logged:\n%s\nwant a fresh start and %q", second, node, log.String(), want)
			}
		})
	}
}
