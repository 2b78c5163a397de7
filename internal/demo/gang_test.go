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
