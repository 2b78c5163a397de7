package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
)

// DefaultKeepJobFiles is how long a job's files stay on the host after its
// last instance here ended, unless Config.KeepJobFiles says otherwise.
const DefaultKeepJobFiles = 7 * 24 * time.Hour

// sweepEvery is how often the agent looks for job files to remove.
const sweepEvery = time.Hour

// trashPrefix names what a sweep moved aside and is removing; a sweep
// that an agent's stop cut short is finished by the next one.
const trashPrefix = ".swept-"

// sweep removes the files of jobs that last ran here more than keep
// before now: WORK/jobs/NAME (the job's files and checkpoints; NAME is
// jobDirName's), DATA/logs/JOB, and CHECKPOINT_ROOT/NAME with a shared
// checkpoint root. When a job last ran is the newest modification time among
// its logs, which only the agent writes (DATA is the agent's alone, and
// the log files are the agent's: a job holding one open can set its times
// to now at most); watch sets it as an instance ends. A job with files but
// no logs (the agent's data was replaced) counts from when a sweep first
// saw it. Jobs with an instance here are left alone, and so are those the
// server says may come back (a.mayReturn: they have not ended, and ran
// here or keep their checkpoint here); when the server cannot say, nothing
// is removed this time. The instances a removed job ran here are forgotten
// (a.finished). Under a.mu each directory is renamed aside, so that a start
// of the job after that makes a fresh one; the removal itself runs
// unlocked. It returns the jobs whose files it removed.
func (a *Agent) sweep(ctx context.Context, now time.Time, keep time.Duration) []string {
	jobsDir, logsDir := filepath.Join(a.cfg.Work, "jobs"), filepath.Join(a.cfg.Data, "logs")
	a.mu.Lock()
	idle, trash := a.idleJobs(now, keep, jobsDir, logsDir)
	a.mu.Unlock()
	var removed []string
	if len(idle) > 0 {
		back, err := a.mayReturn(ctx, idle)
		if err != nil {
			a.log.Warn("job files kept this time: the server did not say which jobs may run here again", "jobs", len(idle), "err", err)
			idle = nil
		}
		a.mu.Lock()
		active := a.activeJobs()
		for _, job := range idle {
			if back[job] || active[job] {
				continue
			}
			if last, ok := lastRan(filepath.Join(logsDir, job)); ok && now.Sub(last) < keep {
				continue // it ran here while the server was asked
			}
			dirs := []string{a.jobDir(job), filepath.Join(logsDir, job), filepath.Join(jobsDir, job)}
			if a.cfg.CheckpointRoot != "" {
				// The job ran here and has ended (else the server keeps it):
				// its checkpoints on the shared root go too.
				dirs = append(dirs, a.sharedCheckpoints(job), filepath.Join(a.cfg.CheckpointRoot, job))
			}
			for _, d := range dirs {
				if aside, err := moveAside(d); err == nil {
					trash = append(trash, aside)
				} else if !errors.Is(err, fs.ErrNotExist) {
					a.log.Warn("job files not removed", "job", job, "dir", d, "err", err)
				}
			}
			delete(a.firstSeen, job)
			removed = append(removed, job)
		}
		if len(removed) > 0 {
			gone := map[string]bool{}
			for _, job := range removed {
				gone[job] = true
			}
			for k := range a.finished { // the server assigns them no more: not for a keep
				if gone[k.job] {
					delete(a.finished, k)
				}
			}
		}
		a.mu.Unlock()
	}
	for _, d := range trash {
		// RemoveAll removes links, never what they point to.
		if err := os.RemoveAll(d); err != nil {
			a.log.Warn("job files not removed", "dir", d, "err", err)
		}
	}
	if len(removed) > 0 {
		a.log.Info("job files removed", "jobs", len(removed), "idle_for_at_least", keep)
	}
	return removed
}

// idleJobs returns the jobs with files here that last ran keep or more
// before now and have no instance here, and what earlier sweeps left
// aside. Called with a.mu held.
func (a *Agent) idleJobs(now time.Time, keep time.Duration, jobsDir, logsDir string) (idle, trash []string) {
	active := a.activeJobs()
	seen := map[string]bool{}
	if root := a.cfg.CheckpointRoot; root != "" {
		entries, _ := os.ReadDir(root) // what a sweep of any host moved aside there
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), trashPrefix) {
				trash = append(trash, filepath.Join(root, e.Name()))
			}
		}
	}
	// The job directories are named by jobDirName: those of jobs with
	// logs here are the logs' jobs' (or those of active jobs); the others
	// count by their own name (their logs were lost, or they are named by
	// their job's ID, as agents before jobDirName named them).
	named := map[string]string{}
	logs, _ := os.ReadDir(logsDir)
	for _, e := range logs {
		named[jobDirName(e.Name())] = e.Name()
	}
	for job := range active {
		named[jobDirName(job)] = job
	}
	for _, dir := range []string{logsDir, jobsDir} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			job := e.Name()
			if strings.HasPrefix(job, trashPrefix) {
				trash = append(trash, filepath.Join(dir, job))
				continue
			}
			if dir == jobsDir && named[job] != "" {
				continue // its job's logs count for it
			}
			if seen[job] || active[job] {
				continue
			}
			seen[job] = true
			last, ok := lastRan(filepath.Join(logsDir, job))
			if !ok {
				if a.firstSeen == nil {
					a.firstSeen = map[string]time.Time{}
				}
				if _, ok := a.firstSeen[job]; !ok {
					a.firstSeen[job] = now
				}
				last = a.firstSeen[job]
			}
			if now.Sub(last) >= keep {
				idle = append(idle, job)
			}
		}
	}
	return idle, trash
}

// activeJobs is the set of jobs with an instance here, those a previous
// run left included. Called with a.mu held.
func (a *Agent) activeJobs() map[string]bool {
	active := map[string]bool{}
	for k := range a.procs {
		active[k.job] = true
	}
	for k := range a.left {
		active[k.job] = true
	}
	return active
}

// mayReturn asks the server which of jobs may run here again, so that
// their files stay: by a.askKeep when set (tests), else the server's
// POST /v1/nodes/NODE/job-files, wire.MaxJobFilesAsk jobs a request.
func (a *Agent) mayReturn(ctx context.Context, jobs []string) (map[string]bool, error) {
	ask := a.askKeep
	if ask == nil {
		ask = func(ctx context.Context, jobs []string) ([]string, error) {
			return a.cfg.Client.JobFilesToKeep(ctx, a.cfg.Node, jobs)
		}
	}
	back := map[string]bool{}
	for chunk := range slices.Chunk(jobs, wire.MaxJobFilesAsk) {
		keep, err := ask(ctx, chunk)
		if err != nil {
			return nil, err
		}
		for _, job := range keep {
			back[job] = true
		}
	}
	return back, nil
}

// lastRan is the newest modification time of the log directory dir and
// the files in it; false when dir does not exist.
func lastRan(dir string) (time.Time, bool) {
	st, err := os.Lstat(dir)
	if err != nil {
		return time.Time{}, false
	}
	last := st.ModTime()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.ModTime().After(last) {
			last = info.ModTime()
		}
	}
	return last, true
}

// moveAside renames path to a hidden name beside it and returns that name.
func moveAside(path string) (string, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	aside := filepath.Join(filepath.Dir(path), trashPrefix+hex.EncodeToString(b[:]))
	if err := os.Rename(path, aside); err != nil {
		return "", err
	}
	return aside, nil
}

// keepJobFiles is how long job files stay after the job last ran here;
// negative means for ever.
func (a *Agent) keepJobFiles() time.Duration {
	if a.cfg.KeepJobFiles == 0 {
		return DefaultKeepJobFiles
	}
	return a.cfg.KeepJobFiles
}

// sweepEveryHour sweeps now and then every sweepEvery until ctx is done,
// unless job files are kept for ever.
func (a *Agent) sweepEveryHour(ctx context.Context) {
	keep := a.keepJobFiles()
	if keep < 0 {
		return
	}
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		a.sweep(ctx, time.Now(), keep)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
