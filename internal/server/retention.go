package server

import (
	"context"
	"fmt"
	"time"

	"github.com/allot-dev/allot/internal/price"
)

// Ended jobs are kept in the store, by default for ever: their records are
// the bills (cost and usage reports read them) and the history of job
// show. With Config.JobRetention the leader deletes those that ended
// longer ago than that, so that the store (an etcd cluster has a space
// quota, 2 GiB by default, past which it takes no writes) does not grow
// with every job ever run. What they ran is kept in per-day roll-ups
// (usage_rollup.go), which reports by tenant, region or SKU add up; a
// report by job, or over part of a day, lacks it and says so
// (RetentionWarning).
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
// ended more than the retention before now, adding what they ran to the
// usage roll-ups (usage_rollup.go); it returns how many.
func (s *Server) purgeEnded(ctx context.Context, now time.Time) (int, error) {
	if s.cfg.JobRetention <= 0 {
		return 0, nil
	}
	batches, err := s.usageBatches(ctx, s.cache.endedBefore(now.Add(-s.cfg.JobRetention), purgeMax))
	w := s.world()
	tb := price.NewTable(w.fleet)
	deleted := 0
	for _, batch := range batches {
		gone, rev, perr := s.purgeJobs(ctx, batch, w, tb)
		for _, kv := range gone {
			s.cache.delKey(kv.Key, rev)
		}
		deleted += len(gone)
		s.m.jobsPurged.Add(float64(len(gone)))
		if perr != nil {
			return deleted, fmt.Errorf("purge ended jobs: %w", perr)
		}
	}
	if err != nil {
		return deleted, fmt.Errorf("purge ended jobs: %w", err)
	}
	return deleted, nil
}

// RetentionWarning is the warning for a report by by over [since, until)
// that lacks some of what jobs deleted past the retention ran: a report by
// job, or a period that covers a day before the retention in part; "" when
// it lacks nothing.
func (s *Server) RetentionWarning(since, until time.Time, by string) string {
	r := s.cfg.JobRetention
	if r <= 0 {
		return ""
	}
	return retentionText(since, until, s.clock.Now().Add(-r), by, r)
}

// Audit records are kept for Config.AuditRetention (allot server's
// --audit-retention, DefaultAuditRetention), then deleted by the leader
// with the other purges: the log would otherwise grow with every change
// for good.
const (
	// DefaultAuditRetention is --audit-retention's default: 90 days.
	DefaultAuditRetention = 90 * 24 * time.Hour
	// MinAuditRetention is the shortest audit retention.
	MinAuditRetention = 24 * time.Hour
)

// purgeAudit deletes, in conditional batches, up to purgeMax audit records
// written more than the retention before now; it returns how many. Their
// keys sort by time, so it reads only what it deletes.
func (s *Server) purgeAudit(ctx context.Context, now time.Time) (int, error) {
	if s.cfg.AuditRetention <= 0 {
		return 0, nil
	}
	cutoff := fmt.Sprintf("%s%020d", prefixAudit, max(now.Add(-s.cfg.AuditRetention).UnixNano(), 0))
	deleted := 0
	for deleted < purgeMax {
		kvs, _, _, err := s.st.ListPage(ctx, prefixAudit, "", deleteBatch, 0)
		if err != nil {
			return deleted, fmt.Errorf("list audit records: %w", err)
		}
		old := kvs[:0]
		for _, kv := range kvs {
			if kv.Key < cutoff {
				old = append(old, kv)
			}
		}
		if len(old) == 0 {
			return deleted, nil
		}
		gone, _, err := s.deleteRecords(ctx, old)
		deleted += len(gone)
		if err != nil {
			return deleted, fmt.Errorf("delete audit records past their retention: %w", err)
		}
		if len(gone) == 0 {
			return deleted, nil
		}
	}
	return deleted, nil
}
