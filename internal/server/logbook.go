package server

import "container/list"

// DefaultLogMemory is the bytes of job logs a server keeps in memory, all
// attempts together, unless Config.LogMemory says otherwise: 256 attempts
// that each printed a MiB or more.
const DefaultLogMemory = 256 << 20

// tenantLogs are the logs of one tenant's jobs that hold data.
type tenantLogs struct {
	bytes int64
	lru   list.List // of *attemptLog, least recently written first
}

// written records that l, a log of tenant's job, now holds grown more
// bytes and was just written.
func (b *logBook) written(l *attemptLog, tenant string, grown int64) {
	t := b.byTenant[tenant]
	if t == nil {
		t = &tenantLogs{}
		b.byTenant[tenant] = t
	}
	if l.at == nil {
		l.tenant, l.at = tenant, t.lru.PushBack(l)
	} else {
		t.lru.MoveToBack(l.at)
	}
	t.bytes += grown
	b.bytes += grown
}

// shed drops whole logs until the book holds at most its limit, and
// returns how many it dropped. Each comes from the tenant that holds the
// most bytes, its least recently written log first; keep, the log just
// written, is dropped last of all, and never when it alone is over (it
// holds MaxLogBytes at most). A dropped log's followers are woken; what
// its agents ship next starts it afresh, and the node keeps the whole
// file.
func (b *logBook) shed(keep *attemptLog) int {
	dropped := 0
	for b.bytes > b.limit {
		var most *tenantLogs
		for _, t := range b.byTenant {
			if t.lru.Len() > 0 && (most == nil || t.bytes > most.bytes) && !(t.lru.Len() == 1 && t.lru.Front().Value == keep) {
				most = t
			}
		}
		if most == nil {
			return dropped
		}
		victim := most.lru.Front().Value.(*attemptLog)
		if victim == keep {
			victim = most.lru.Front().Next().Value.(*attemptLog)
		}
		b.drop(victim)
		dropped++
	}
	return dropped
}

// drop forgets log l.
func (b *logBook) drop(l *attemptLog) {
	t := b.byTenant[l.tenant]
	t.lru.Remove(l.at)
	t.bytes -= int64(len(l.data))
	b.bytes -= int64(len(l.data))
	if t.lru.Len() == 0 {
		delete(b.byTenant, l.tenant)
	}
	delete(b.logs, l.key)
	close(l.changed)
}
