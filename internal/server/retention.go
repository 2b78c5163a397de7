package server

import (
	"context"
	"fmt"
	"time"
)

// Ended jobs are kept in the store, by default for ever: their records are
// the bills (cost and usage reports read them) and the history of job
// show. With Config.JobRetention the leader deletes those that ended
// longer ago than that, so that the store (an etcd cluster has a space
// quota, 2 GiB by default, past which it takes no writes) does not grow
// with every job ever run. Reports over a period before the retention
// lack what those jobs ran, and say so (RetentionWarning).
const (
	// MinJobRetention is the shortest retention: a month's budget reads
	// the month's jobs.
	MinJobRetention = 32 * 24 * time.Hour
	// purgeEvery is how often the leader purges.
	purgeEvery = 10 * time.Minute
	// purgeMax bounds the jobs one purge deletes; the next goes on.
	purgeMax = 10_000
)

// purgeEnded deletes, in conditional batches, up to purgeMax jobs that
// ended more than the retention before now; it returns how many.
func (s *Server) purgeEnded(ctx context.Context, now time.Time) (int, error) {
	if s.cfg.JobRetention <= 0 {
		return 0, nil
	}
	refs := s.cache.endedBefore(now.Add(-s.cfg.JobRetention), purgeMax)
	deleted := 0
	for len(refs) > 0 {
		batch := refs[:min(len(refs), deleteBatch)]
		refs = refs[len(batch):]
		gone, rev, err := s.deleteRecords(ctx, batch)
		for _, kv := range gone {
			s.cache.delKey(kv.Key, rev)
		}
		deleted += len(gone)
		s.m.jobsPurged.Add(float64(len(gone)))
		if err != nil {
			return deleted, fmt.Errorf("purge ended jobs: %w", err)
		}
	}
	return deleted, nil
}

// RetentionWarning is the warning for a report over a period from since
// when jobs that ended before since's end of retention may have been
// purged; "" when none can have been.
func (s *Server) RetentionWarning(since time.Time) string {
	r := s.cfg.JobRetention
	if r <= 0 {
		return ""
	}
	horizon := s.clock.Now().Add(-r)
	if !since.Before(horizon) {
		return ""
	}
	return fmt.Sprintf("jobs that ended before %s are deleted (allot server --job-retention %s): what they ran is not in this report",
		horizon.UTC().Format(time.RFC3339), r)
}
