package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A sweep removes the files and logs of jobs that last ran here longer ago
// than the keep, by the times of their logs; it keeps what ran recently,
// what runs now, what the server says may run here again (a job queued
// after a preemption, whose checkpoint is here), and a job with files but
// no logs until the keep has passed since a sweep first saw it; when the
// server cannot say, it removes nothing; a link in a job's directory goes,
// not what it points to; what an earlier sweep left half removed goes too.
func TestSweepJobFiles(t *testing.T) {
	data, work, root := t.TempDir(), t.TempDir(), t.TempDir()
	var asked []string
	var down error
	a := &Agent{cfg: Config{Data: data, Work: work, CheckpointRoot: root}, procs: map[key]*proc{}, finished: map[key]bool{},
		log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		askKeep: func(_ context.Context, jobs []string) ([]string, error) {
			asked = append(asked, jobs...)
			if down != nil {
				return nil, down
			}
			return []string{"requeued", "not-asked"}, nil
		}}
	ctx := context.Background()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	keep := 7 * 24 * time.Hour
	outside := filepath.Join(t.TempDir(), "precious")
	write := func(path string, at time.Time) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Dir(path), at, at); err != nil {
			t.Fatal(err)
		}
	}
	write(outside, now)
	// Job directories have opaque names (jobDirName); requeued's is named
	// by its ID, as agents before those names made it.
	named := func(job string) string {
		if job == "requeued" {
			return job
		}
		return jobDirName(job)
	}
	for job, ran := range map[string]time.Duration{"old": 8 * 24 * time.Hour, "recent": time.Hour, "running": 30 * 24 * time.Hour,
		"requeued": 9 * 24 * time.Hour} {
		write(filepath.Join(data, "logs", job, "attempt-1.log"), now.Add(-ran))
		write(filepath.Join(work, "jobs", named(job), "checkpoints", "step-1"), now.Add(-ran))
	}
	if err := os.Symlink(outside, filepath.Join(work, "jobs", named("old"), "link")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(work, "jobs", "orphan", "out"), now.Add(-30*24*time.Hour))
	write(filepath.Join(work, "jobs", trashPrefix+"cut-short", "big"), now)
	// A shared checkpoint root: the ended job's checkpoints go with its
	// files, another host's job (never run here) stays, and so does the
	// requeued one's; what a sweep of any host left aside goes.
	for _, job := range []string{"old", "requeued", "elsewhere", trashPrefix + "other-host"} {
		write(filepath.Join(root, named(job), "step-1"), now.Add(-30*24*time.Hour))
	}
	a.procs[key{job: "running", attempt: 2}] = &proc{}
	a.finished[key{job: "old", attempt: 1}] = true
	a.finished[key{job: "recent", attempt: 1}] = true

	down = errors.New("server unreachable")
	if got := a.sweep(ctx, now, keep); len(got) != 0 {
		t.Errorf("with the server down: removed %v, want nothing", got)
	}
	down = nil
	asked = nil
	if got := a.sweep(ctx, now, keep); !slices.Equal(got, []string{"old"}) {
		t.Errorf("removed %v, want [old]", got)
	}
	if slices.Sort(asked); !slices.Equal(asked, []string{"old", "requeued"}) {
		t.Errorf("asked the server about %v, want the idle old and requeued", asked)
	}
	if a.finished[key{job: "old", attempt: 1}] || !a.finished[key{job: "recent", attempt: 1}] {
		t.Errorf("finished instances %v, want old's forgotten and recent's kept", a.finished)
	}
	exists := func(path string) bool { _, err := os.Lstat(path); return err == nil }
	for _, p := range []string{"jobs/" + named("old"), "jobs/" + trashPrefix + "cut-short"} {
		if exists(filepath.Join(work, p)) {
			t.Errorf("WORK/%s is still there", p)
		}
	}
	if exists(filepath.Join(data, "logs", "old")) {
		t.Error("DATA/logs/old is still there")
	}
	for _, p := range []string{named("old"), trashPrefix + "other-host"} {
		if exists(filepath.Join(root, p)) {
			t.Errorf("ROOT/%s is still there", p)
		}
	}
	for _, p := range []string{"requeued", named("elsewhere")} {
		if !exists(filepath.Join(root, p, "step-1")) {
			t.Errorf("ROOT/%s was removed", p)
		}
	}
	for _, p := range []string{filepath.Join(work, "jobs", named("recent")), filepath.Join(data, "logs", "recent"),
		filepath.Join(work, "jobs", "requeued", "checkpoints", "step-1"),
		filepath.Join(work, "jobs", named("running")), filepath.Join(work, "jobs", "orphan"), outside} {
		if !exists(p) {
			t.Errorf("%s was removed", p)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(work, "jobs")); len(entries) != 4 {
		t.Errorf("WORK/jobs holds %d entries, want recent, running, requeued and orphan", len(entries))
	}

	// The orphan counts from the first sweep that saw it.
	if got := a.sweep(ctx, now.Add(keep-2*time.Hour), keep); len(got) != 0 {
		t.Errorf("a keep after the orphan was first seen, less two hours: removed %v", got)
	}
	delete(a.procs, key{job: "running", attempt: 2})
	if got := a.sweep(ctx, now.Add(keep), keep); !slices.Equal(got, []string{"recent", "running", "orphan"}) {
		t.Errorf("a keep later: removed %v, want recent, running and orphan", got)
	}
}
