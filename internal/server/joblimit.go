package server

// DefaultMaxJobsPerTenant is how many jobs of one tenant may be not ended
// at once unless Config.MaxJobsPerTenant says otherwise: twenty arrays of a
// thousand. Without a bound a tenant's scripts could queue millions of
// jobs (a batch of ten arrays of 1,000 is one small request, and a tenant
// may send 100 a second): every scheduling cycle would walk them, and the
// store (etcd has a space quota) would fill for everyone.
const DefaultMaxJobsPerTenant = 20_000

// checkJobLimit refuses a tenant's submit of n more jobs of its own when
// its jobs not ended would pass the bound (n ≤ 0 passes). The
// administrator, and the server submitting an endpoint's replicas, are not
// bounded; their jobs count all the same. A tenant's endpoint is checked
// for the replicas its min_replicas asks for, as it is created or raised.
// Concurrent submits may pass the bound by their own size: it is checked
// before they commit.
func (s *Server) checkJobLimit(p Principal, n int) error {
	limit := s.cfg.MaxJobsPerTenant
	if limit == 0 {
		limit = DefaultMaxJobsPerTenant
	}
	if p.Tenant == "" || limit < 0 || n <= 0 {
		return nil
	}
	if have := s.cache.liveOf(p.Tenant); have+n > limit {
		return refuse(CodeQuotaExceeded, "tenant", "tenant %q has %d jobs that have not ended, and %d more would pass its limit of %d "+
			"(allot server --max-jobs-per-tenant): cancel some, or submit once some have ended", p.Tenant, have, n, limit)
	}
	return nil
}
