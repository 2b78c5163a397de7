package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/syncbuf"
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
			want := "starting without ALLOT_RESUME_FROM: the checkpoint " + first.CheckpointPath + " was saved on node " + node + ", not on " + second
			if second == node || !strings.Contains(log.String(), want) || !strings.Contains(log.String(), "fresh start") {
				t.Errorf("retry on %s (checkpoint on drained %s) logged:\n%s\nwant a fresh start and %q", second, node, log.String(), want)
			}
		})
	}
}

// syncBuffer is a log or output sink goroutines write while the test reads it.
type syncBuffer = syncbuf.Buffer

// An agent reports what this attempt saves, and each save: a marker an
// earlier attempt left on the node is not reported again by an attempt
// that did not resume from it (the job's checkpoint stays the newer one
// on another node), and a save under the same name as the last is
// reported again.
func TestCheckpointMarkerOfThisAttempt(t *testing.T) {
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	for _, n := range []string{"h100-01", "h100-02"} {
		cfg := l.config(t, n)
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		runAgent(t, ctx, cfg)
	}
	// Attempt 1 saves c1 on one node and fails; that node is drained, so
	// attempt 2 runs on the other, saves c2 there and fails; then the
	// drain moves: attempt 3 runs on the first node, where c2 is not, and
	// leaves c1's marker alone. Each attempt saves under one name twice.
	id := l.submit(t, `name: marker
tenant: team
command: ["sh", "-c", 'if [ "$ALLOT_ATTEMPT" -eq 3 ]; then echo "resume=$ALLOT_RESUME_FROM"; sleep 0.5; exit 0; fi;
  for i in 1 2; do echo "$i" > "$ALLOT_CHECKPOINT_DIR/c$ALLOT_ATTEMPT"; echo "c$ALLOT_ATTEMPT" > "$ALLOT_CHECKPOINT_DIR/CHECKPOINT"; sleep 0.5; done;
  while [ ! -e "$ALLOT_CHECKPOINT_DIR/go" ]; do sleep 0.1; done; exit 1']
resources: {gpus_per_instance: 8}
retry: {max_retries: 2}
`)
	waitCheckpoint := func(attempt int) client.Job {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			j, err := l.cl.GetJob(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(j.CheckpointPath, fmt.Sprintf("/c%d", attempt)) && len(j.AttemptHistory) == attempt {
				return j
			}
			if time.Now().After(deadline) {
				t.Fatalf("attempt %d: no checkpoint c%d: %+v", attempt, attempt, j)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	finish := func(j client.Job) {
		t.Helper()
		time.Sleep(700 * time.Millisecond) // the second save, reported within a ship interval
		if err := os.WriteFile(filepath.Join(filepath.Dir(j.CheckpointPath), "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	first := waitCheckpoint(1)
	if _, err := l.cl.DrainNode(ctx, first.CheckpointNode, "test"); err != nil {
		t.Fatal(err)
	}
	finish(first)
	second := waitCheckpoint(2)
	if second.CheckpointNode == first.CheckpointNode {
		t.Fatalf("attempt 2 on %s, the drained node", second.CheckpointNode)
	}
	if _, err := l.cl.ResumeNode(ctx, first.CheckpointNode); err != nil {
		t.Fatal(err)
	}
	if _, err := l.cl.DrainNode(ctx, second.CheckpointNode, "test"); err != nil {
		t.Fatal(err)
	}
	finish(second)
	j := l.waitState(t, id, "Succeeded")
	if j.CheckpointPath != second.CheckpointPath || j.CheckpointNode != second.CheckpointNode {
		t.Errorf("checkpoint %s on %s after attempt 3, want attempt 2's %s on %s (attempt 1's marker is not attempt 3's)",
			j.CheckpointPath, j.CheckpointNode, second.CheckpointPath, second.CheckpointNode)
	}
	if got := strings.Count(logs.String(), "checkpoint reported"); got != 4 {
		t.Errorf("%d checkpoints reported, want 4 (two saves of c1, two of c2):\n%s", got, logs.String())
	}
}

// An agent newer than its server reports a checkpoint with its node; the
// older server refuses the unknown field, and is then told the path alone.
// Any other refusal is not retried.
func TestCheckpointReportToAnOlderServer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		refusal  string
		requests int
		ok       bool
	}{
		{"an older server", `{"code":"InvalidSpec","message":"invalid JSON: json: unknown field \"node\"","field":"node"}`, 2, true},
		{"another node", `{"code":"InvalidSpec","message":"job j's current attempt does not run on node n1","field":"node"}`, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bodies []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				bodies = append(bodies, string(b))
				w.Header().Set("Content-Type", "application/json")
				if strings.Contains(string(b), `"node"`) {
					w.WriteHeader(http.StatusBadRequest)
					io.WriteString(w, tc.refusal)
					return
				}
				io.WriteString(w, `{"id":"j","state":"Running","checkpoint_path":"/c"}`)
			}))
			defer srv.Close()
			cl, err := client.New(srv.URL, "tok")
			if err != nil {
				t.Fatal(err)
			}
			a := &Agent{cfg: Config{Client: cl, Node: "n1"}}
			err = a.reportCheckpoint(context.Background(), "j", "/c", nil, "")
			if (err == nil) != tc.ok || len(bodies) != tc.requests {
				t.Fatalf("err %v after %d requests %q; want ok %v after %d", err, len(bodies), bodies, tc.ok, tc.requests)
			}
			if tc.ok && bodies[1] != `{"path":"/c"}` {
				t.Errorf("retry sent %s, want the path alone", bodies[1])
			}
		})
	}
}

// With a shared checkpoint root, a job's checkpoints lie in ROOT/JOB,
// reported without a node: a retry on another node (its first node
// drained) resumes from there, as it could on any host mounting the root.
// The sweep removes ROOT/JOB with the job's other files once it ended.
func TestResumeAnywhereFromSharedRoot(t *testing.T) {
	const job = `name: ckpt
tenant: team
command: ["sh", "-c", 'if [ -n "$ALLOT_RESUME_FROM" ]; then echo "resumed from $ALLOT_RESUME_FROM"; cat "$ALLOT_RESUME_FROM"; exit 0; fi;
  if [ "$ALLOT_ATTEMPT" -gt 1 ]; then echo "fresh start"; exit 0; fi;
  echo state-1 > "$ALLOT_CHECKPOINT_DIR/ckpt-1"; echo ckpt-1 > "$ALLOT_CHECKPOINT_DIR/CHECKPOINT"; sleep 1; exit 1']
resources: {gpus_per_instance: 8}
retry: {max_retries: 1}
`
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := workDir(t) // 0711, the agent's: as a shared mount would be set up
	for _, n := range []string{"h100-01", "h100-02"} {
		cfg := l.config(t, n)
		cfg.CheckpointRoot = root
		runAgent(t, ctx, cfg)
	}
	id := l.submit(t, job)
	var first client.Job
	for deadline := time.Now().Add(15 * time.Second); first.CheckpointPath == ""; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint reported: %+v", first)
		}
		var err error
		if first, err = l.cl.GetJob(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if want := filepath.Join(root, jobDirName(id), "ckpt-1"); first.CheckpointPath != want || first.CheckpointNode != "" {
		t.Fatalf("checkpoint %q on node %q, want %s on none", first.CheckpointPath, first.CheckpointNode, want)
	}
	node := first.Allocations[0].Node
	if _, err := l.cl.DrainNode(ctx, node, "test"); err != nil {
		t.Fatal(err)
	}
	j := l.waitState(t, id, "Succeeded")
	var log bytes.Buffer
	if err := l.cl.Logs(ctx, id, 2, false, &log); err != nil {
		t.Fatal(err)
	}
	if second := j.AttemptHistory[1].Nodes[0]; second == node || !strings.Contains(log.String(), "resumed from "+first.CheckpointPath+"\nstate-1") {
		t.Errorf("retry on %s (first on drained %s) logged:\n%s\nwant it resumed from %s", second, node, log.String(), first.CheckpointPath)
	}
}

// The agent refuses a checkpoint root that others may write in (a job
// could plant another's checkpoint), that does not exist (it is a shared
// mount, not the agent's to make), or that overlaps its data.
func TestCheckpointRootRefused(t *testing.T) {
	l := newLab(t)
	open := workDir(t)
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		root func(cfg Config) string
		want string
	}{
		{func(Config) string { return open }, "writable by others"},
		{func(Config) string { return filepath.Join(open, "missing") }, "no such file"},
		{func(cfg Config) string { return cfg.Data }, "overlap"},
		{func(cfg Config) string { return cfg.Work }, "overlap"},
	} {
		cfg := l.config(t, "h100-01")
		cfg.CheckpointRoot = tc.root(cfg)
		if err := os.MkdirAll(cfg.Data, 0o700); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := Run(ctx, cfg)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("root %s: %v, want an error saying %q", cfg.CheckpointRoot, err, tc.want)
		}
	}
}

// Each rank of a gang saves its own part into a directory of its own; the
// save is the job's checkpoint once both parts are in, and the retry puts
// each rank back on the node of its part and resumes it from that part.
func TestGangResumesEachRankFromItsPart(t *testing.T) {
	const job = `name: parts
tenant: team
command: ["sh", "-c", 'if [ -n "$ALLOT_RESUME_FROM" ]; then echo "rank $ALLOT_RANK resumed: $(cat "$ALLOT_RESUME_FROM")"; exit 0; fi;
  case "$ALLOT_CHECKPOINT_DIR" in "$ALLOT_JOB_CHECKPOINT_DIR/rank-$ALLOT_RANK") ;; *) echo "bad dirs $ALLOT_CHECKPOINT_DIR $ALLOT_JOB_CHECKPOINT_DIR"; exit 0;; esac;
  echo "part of rank $ALLOT_RANK" > "$ALLOT_CHECKPOINT_DIR/step-7"; echo step-7 > "$ALLOT_CHECKPOINT_DIR/CHECKPOINT"; sleep 1; exit 1']
resources: {instance_count: 2, gpus_per_instance: 8}
retry: {max_retries: 1}
`
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l.runAgent(t, ctx, "h100-01")
	l.runAgent(t, ctx, "h100-02")
	id := l.submit(t, job)
	j := l.waitState(t, id, "Succeeded")
	if len(j.AttemptHistory) != 2 {
		t.Fatalf("%d attempts, want 2: %+v", len(j.AttemptHistory), j.AttemptHistory)
	}
	first, second := j.AttemptHistory[0].Nodes, j.AttemptHistory[1].Nodes
	if len(j.CheckpointParts) != 2 {
		t.Fatalf("checkpoint parts %+v, want one per rank", j.CheckpointParts)
	}
	for r, p := range j.CheckpointParts {
		if p.Rank != r || p.Step != "step-7" || p.Node != first[r] || !strings.HasSuffix(p.Path, fmt.Sprintf("/rank-%d/step-7", r)) {
			t.Errorf("part %d: %+v, want rank %d's step-7 in rank-%d on %s", r, p, r, r, first[r])
		}
	}
	if fmt.Sprint(second) != fmt.Sprint(first) {
		t.Errorf("retry on %v, want each rank back on the node of its part %v", second, first)
	}
	var log bytes.Buffer
	if err := l.cl.Logs(ctx, id, 2, false, &log); err != nil {
		t.Fatal(err)
	}
	for r := range 2 {
		if want := fmt.Sprintf("rank %d resumed: part of rank %d", r, r); !strings.Contains(log.String(), want) {
			t.Errorf("the retry's log lacks %q:\n%s", want, log.String())
		}
	}
}
