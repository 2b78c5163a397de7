package agent

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What other users of the host may see of a job's files names neither the
// job nor its tenant, and is the same wherever and whenever it runs.
func TestJobDirNameOpaque(t *testing.T) {
	const job = "merger-plan-acme-1k8lhkvh808cr"
	n := jobDirName(job)
	if strings.Contains(n, "merger") || strings.Contains(n, "acme") || strings.Contains(n, "1k8lhkvh808cr") {
		t.Errorf("jobDirName(%q) = %q names the job", job, n)
	}
	if n != jobDirName(job) || n == jobDirName(job+"x") || len(n) != 17 || !validName(n) {
		t.Errorf("jobDirName(%q) = %q: want 17 characters, stable, one per job", job, n)
	}
	if a := opaqueName(); a == opaqueName() || len(a) != 16 {
		t.Errorf("opaqueName() = %q: want 16 hex digits, fresh each time", a)
	}
}

// A job's directories named by its ID, as older agents made them, move to
// their opaque names with their checkpoints, and a checkpoint reported in
// the old place resumes from the new one.
func TestLegacyJobDirs(t *testing.T) {
	const job = "train-1k8lhkvh808cr"
	work, root := t.TempDir(), t.TempDir()
	a := &Agent{cfg: Config{Work: work, CheckpointRoot: root}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, p := range []string{filepath.Join(work, "jobs", job, "checkpoints", "step-1"), filepath.Join(root, job, "step-2")} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range a.legacyDirs(job) {
		a.moveLegacy(d)
	}
	for _, p := range []string{filepath.Join(a.jobDir(job), "checkpoints", "step-1"), filepath.Join(a.sharedCheckpoints(job), "step-2")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("not moved: %v", err)
		}
	}
	for in, want := range map[string]string{
		filepath.Join(work, "jobs", job, "checkpoints", "step-1"): filepath.Join(a.jobDir(job), "checkpoints", "step-1"),
		filepath.Join(root, job, "step-2") + "/":                  filepath.Join(a.sharedCheckpoints(job), "step-2"),
		filepath.Join(work, "jobs", "other", "step-1"):            filepath.Join(work, "jobs", "other", "step-1"),
		"s3://bucket/" + job:                                      "s3://bucket/" + job,
	} {
		if got := a.unlegacy(job, in); got != want {
			t.Errorf("unlegacy(%q) = %q, want %q", in, got, want)
		}
	}
}
