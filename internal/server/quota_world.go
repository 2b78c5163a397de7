package server

import (
	"encoding/json"
	"sort"

	"github.com/allot-dev/allot/internal/model"
)

// Quotas set by approvals and edits, in the cache and in the world.
//
// The cache keeps every /quotas/ key it sees (its own writes and the
// watch, ordered by ModRev like every other key) and raises the world's
// generation when one changes, so the next cycle's world carries it:
// world() lays the stored quotas over the tenants file's with withQuotas,
// and the core plans with the result (the Session is Reset when the
// tenancy differs).

// applicable drops the stored quotas of tenants or regions the files no
// longer have: a quota approved before the tenant left the tenants file
// (or its region the fleet) stays in the store but binds nothing.
func (w *world) applicable(stored []model.Quota) []model.Quota {
	out := stored[:0:0]
	for _, q := range stored {
		if _, ok := w.fleet.Region(q.Region); ok && w.tenants[q.Tenant] {
			out = append(out, q)
		}
	}
	return out
}

// withQuotas returns the file's quotas with the stored ones in their
// place (or added, sorted, when the file has none of that tenant, region
// and series).
func withQuotas(file, stored []model.Quota) []model.Quota {
	if len(stored) == 0 {
		return file
	}
	type key struct{ t, r, s string }
	set := map[key]int{}
	for _, q := range stored {
		set[key{q.Tenant, q.Region, q.Series}] = q.GPUs
	}
	out := make([]model.Quota, 0, len(file)+len(stored))
	for _, q := range file {
		k := key{q.Tenant, q.Region, q.Series}
		if g, ok := set[k]; ok {
			q.GPUs = g
			delete(set, k)
		}
		out = append(out, q)
	}
	for _, q := range stored {
		if _, ok := set[key{q.Tenant, q.Region, q.Series}]; ok {
			out = append(out, q)
		}
	}
	return out
}

// quotaEntry is a quota set by an approval or an edit, as the cache holds
// it (cache.quotas, by store key).
type quotaEntry struct {
	q      model.Quota
	modRev int64
}

// putQuotaLocked caches a stored quota; c.mu is held.
func (c *cache) putQuotaLocked(key string, value []byte, modRev int64) {
	e, ok := c.quotas[key]
	if !c.newer(key, modRev, e.modRev, ok) {
		return
	}
	var r quotaRecord
	if err := json.Unmarshal(value, &r); err != nil {
		c.log.Error("skipping unreadable quota record", "key", key, "err", err)
		return
	}
	if c.quotas == nil {
		c.quotas = map[string]quotaEntry{}
	}
	c.quotas[key] = quotaEntry{q: model.Quota{Tenant: r.Tenant, Region: r.Region, Series: r.Series, GPUs: r.GPUs}, modRev: modRev}
	c.worldGen++
}

// delQuotaLocked drops a stored quota (the file's applies again); it
// reports whether the cache held one newer than rev.
func (c *cache) delQuotaLocked(key string, rev int64) (kept bool) {
	e, ok := c.quotas[key]
	if !ok {
		return false
	}
	if e.modRev > rev {
		return true
	}
	delete(c.quotas, key)
	c.worldGen++
	return false
}

// quotaList returns the stored quotas, sorted by key.
func (c *cache) quotaList() []model.Quota {
	c.mu.RLock()
	defer c.mu.RUnlock()
	keys := make([]string, 0, len(c.quotas))
	for k := range c.quotas {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]model.Quota, len(keys))
	for i, k := range keys {
		out[i] = c.quotas[k].q
	}
	return out
}

// sweepQuotasLocked drops the stored quotas a listing at rev no longer
// has; c.mu is held.
func (c *cache) sweepQuotasLocked(live func(string) bool, rev int64) {
	for k, e := range c.quotas {
		if !live(k) && e.modRev <= rev {
			c.delLocked(k, rev)
		}
	}
}
