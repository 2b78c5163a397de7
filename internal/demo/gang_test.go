package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// freeAddr is a loopback address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type rankRun struct {
	steps int
	err   error
	out   strings.Builder
}

// runGang runs a gang of len(dirs) ranks to steps, rank r saving into
// dirs[r] and resuming from resume[r]; with stopRank1, rank 1 alone is told
// to stop once it printed step 5.
func runGang(t *testing.T, dirs []string, resume []string, steps int, stopRank1 bool) []*rankRun {
	t.Helper()
	master := freeAddr(t)
	runs := make([]*rankRun, len(dirs))
	var wg sync.WaitGroup
	for r := range dirs {
		runs[r] = &rankRun{}
		ctx, cancel := context.WithCancel(context.Background())
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			out := &runs[r].out
			var w strings.Builder
			sink := writerFunc(func(p []byte) {
				w.Write(p)
				out.Write(p)
				if r == 1 && stopRank1 && strings.Contains(w.String(), "step 5/") {
					cancel()
				}
			})
			runs[r].steps, runs[r].err = Train(ctx, TrainConfig{Steps: steps, StepTime: 5 * time.Millisecond, CheckpointEvery: 3,
				CheckpointDir: dirs[r], ResumeFrom: resume[r], Rank: r, WorldSize: len(dirs), Master: master}, sink)
		}()
	}
	wg.Wait()
	return runs
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// The ranks of a gang stop at the same step when one is told to stop,
// each saving its own part of that step; resumed, every rank starts from
// it and no step is done twice. Ranks that would resume from different
// steps do not start.
func TestGangStopsAndResumesInLockstep(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	runs := runGang(t, dirs, []string{"", "", ""}, 1000, true)
	stopped := runs[0].steps
	for r, run := range runs {
		if !errors.Is(run.err, ErrStopped) || run.steps != stopped {
			t.Fatalf("rank %d ended at step %d with %v, want ErrStopped at rank 0's step %d\n%s", r, run.steps, run.err, stopped, run.out.String())
		}
		if got, err := ReadCheckpoint(marker(t, dirs[r])); err != nil || got != stopped {
			t.Fatalf("rank %d's part is of step %d (%v), want %d", r, got, err, stopped)
		}
	}
	if stopped < 5 || stopped >= 1000 {
		t.Fatalf("stopped at step %d, want soon after step 5", stopped)
	}
	resume := make([]string, 3)
	for r := range dirs {
		resume[r] = marker(t, dirs[r])
	}
	runs = runGang(t, dirs, resume, stopped+4, false)
	for r, run := range runs {
		out := run.out.String()
		if run.err != nil || run.steps != stopped+4 {
			t.Fatalf("resumed rank %d: %d steps, %v\n%s", r, run.steps, run.err, out)
		}
		if !strings.Contains(out, fmt.Sprintf("every rank starts from step %d", stopped)) || strings.Contains(out, fmt.Sprintf("step %d/", stopped)) ||
			!strings.Contains(out, fmt.Sprintf("step %d/", stopped+1)) {
			t.Errorf("resumed rank %d printed:\n%s\nwant steps from %d on, none twice", r, out, stopped+1)
		}
	}

	// Rank 2 resumes from an older part: the gang refuses to start.
	old := filepath.Join(dirs[2], "old.json")
	if err := writeFile(old, []byte(`{"step": 1}`)); err != nil {
		t.Fatal(err)
	}
	runs = runGang(t, dirs, []string{resume[0], resume[1], old}, stopped+10, false)
	if runs[0].err == nil || !strings.Contains(runs[0].err.Error(), "rank 2 from 1") {
		t.Errorf("rank 0 with a mix of steps: %v", runs[0].err)
	}
	for r, run := range runs {
		if run.err == nil || strings.Contains(run.out.String(), "step ") && strings.Contains(run.out.String(), "loss") {
			t.Errorf("rank %d ran a mixed gang: %v\n%s", r, run.err, run.out.String())
		}
	}
}

// runElastic runs an elastic gang of world ranks sharing one job
// checkpoint directory, resuming from resume, until ctx ends or steps.
func runElastic(ctx context.Context, t *testing.T, jobDir, resume string, world, steps int) []*rankRun {
	t.Helper()
	master := freeAddr(t)
	runs := make([]*rankRun, world)
	var wg sync.WaitGroup
	for r := range world {
		runs[r] = &rankRun{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[r].steps, runs[r].err = Train(ctx, TrainConfig{Steps: steps, StepTime: 20 * time.Millisecond, CheckpointEvery: 5,
				CheckpointDir: filepath.Join(jobDir, fmt.Sprintf("rank-%d", r)), JobCheckpointDir: jobDir, ResumeFrom: resume,
				Rank: r, WorldSize: world, Master: master, Elastic: true}, &runs[r].out)
		}()
	}
	wg.Wait()
	return runs
}

// An elastic gang resized from 2 ranks to 3: rank 0 alone saved the job's
// checkpoint of the step the gang stopped at, and the 3 ranks resume from
// it, each step's line saying the new world size; 3 ranks take more steps
// per second than 2.
func TestElasticGangResumesWithAnotherWorld(t *testing.T) {
	jobDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	runs := runElastic(ctx, t, jobDir, "", 2, 1000)
	stopped := runs[0].steps
	if !errors.Is(runs[0].err, ErrStopped) || stopped == 0 || runs[1].steps != stopped {
		t.Fatalf("2 ranks stopped at %d and %d (%v)\n%s", stopped, runs[1].steps, runs[0].err, runs[0].out.String())
	}
	ck := marker(t, jobDir)
	if got, err := ReadCheckpoint(ck); err != nil || got != stopped {
		t.Fatalf("the job's checkpoint is of step %d (%v), want %d", got, err, stopped)
	}
	if parts, _ := filepath.Glob(filepath.Join(jobDir, "rank-*", "step-*.json")); len(parts) > 0 {
		t.Errorf("ranks saved parts of their own: %v", parts)
	}
	if !strings.Contains(runs[0].out.String(), fmt.Sprintf("step %d/1000 loss", stopped)) ||
		!strings.Contains(runs[0].out.String(), " world 2\n") {
		t.Errorf("rank 0's lines lack the step and world:\n%s", runs[0].out.String())
	}
	runs = runElastic(context.Background(), t, jobDir, ck, 3, stopped+3)
	for r, run := range runs {
		out := run.out.String()
		if run.err != nil || run.steps != stopped+3 || !strings.Contains(out, fmt.Sprintf("every rank starts from step %d", stopped)) ||
			!strings.Contains(out, fmt.Sprintf("step %d/%d loss", stopped+1, stopped+3)) || !strings.Contains(out, " world 3\n") ||
			strings.Contains(out, fmt.Sprintf("step %d/", stopped)) {
			t.Errorf("rank %d of 3: %d steps, %v\n%s", r, run.steps, run.err, out)
		}
	}
	if two, three := Throughput(2, time.Second), Throughput(3, time.Second); !(three > two && two > Throughput(1, time.Second)) || three >= 3 {
		t.Errorf("throughput 1→2→3 instances: %.2f, %.2f, %.2f steps/s; want it to grow, below linear", Throughput(1, time.Second), two, three)
	}
}
