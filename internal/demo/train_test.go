package demo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// marker returns the checkpoint the CHECKPOINT marker in dir names, as the
// agent resolves it (relative to dir).
func marker(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "CHECKPOINT"))
	if err != nil {
		t.Fatal(err)
	}
	p := strings.TrimSpace(string(b))
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return p
}

// A run checkpoints every 3 steps into the directory, keeps the last two
// checkpoints and names the newest in the marker; a second attempt
// resumes from it and runs only the remaining steps.
func TestTrainCheckpointsAndResumes(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	n, err := Train(context.Background(), TrainConfig{Steps: 10, StepTime: time.Millisecond, CheckpointEvery: 3, CheckpointDir: dir, JobID: "j", Attempt: "1"}, &out)
	if err != nil || n != 10 {
		t.Fatalf("Train = %d, %v\n%s", n, err, out.String())
	}
	ck := marker(t, dir)
	if step, err := ReadCheckpoint(ck); err != nil || step != 9 {
		t.Fatalf("marker names %s at step %d (%v), want step 9", ck, step, err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "step-*.json"))
	if len(files) != 2 || filepath.Base(files[0]) != "step-00000006.json" {
		t.Errorf("checkpoint files %v, want steps 6 and 9", files)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	out.Reset()
	n, err = Train(context.Background(), TrainConfig{Steps: 12, StepTime: time.Millisecond, CheckpointEvery: 3, CheckpointDir: dir, ResumeFrom: ck}, &out)
	if err != nil || n != 12 {
		t.Fatalf("resumed Train = %d, %v", n, err)
	}
	log := out.String()
	if !strings.Contains(log, "resuming from step 9") || strings.Count(log, "\nstep ") != 3 || !strings.Contains(log, "step 10/12") {
		t.Errorf("resumed run printed:\n%s\nwant a resume from 9 and steps 10 to 12 only", log)
	}
}

// Stopped (SIGTERM reaches the command as a cancelled context), a run
// writes a checkpoint of its last finished step and says it stopped.
func TestTrainStopWritesCheckpoint(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	var out strings.Builder
	n, err := Train(ctx, TrainConfig{Steps: 1000, StepTime: 10 * time.Millisecond, CheckpointDir: dir}, &out)
	if !errors.Is(err, ErrStopped) || n == 0 || n >= 1000 {
		t.Fatalf("Train = %d, %v; want ErrStopped after some steps", n, err)
	}
	if step, err := ReadCheckpoint(marker(t, dir)); err != nil || step != n {
		t.Errorf("last checkpoint at step %d (%v), want %d", step, err, n)
	}
}

func TestTrainBadCheckpoint(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("not json"), 0o600)
	for _, from := range []string{bad, filepath.Join(dir, "missing.json")} {
		if _, err := Train(context.Background(), TrainConfig{Steps: 3, ResumeFrom: from}, &strings.Builder{}); err == nil {
			t.Errorf("resume from %s: no error", from)
		}
	}
	// Without a checkpoint directory the run works and says it cannot resume.
	var out strings.Builder
	if n, err := Train(context.Background(), TrainConfig{Steps: 2, CheckpointEvery: 1}, &out); err != nil || n != 2 ||
		!strings.Contains(out.String(), "no checkpoint directory") {
		t.Errorf("Train without a directory = %d, %v\n%s", n, err, out.String())
	}
}
