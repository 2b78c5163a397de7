package server

import "fmt"

// DefaultMaxJobsPerTenant is how many jobs of one tenant may be not ended
// at once unless Config.MaxJobsPerTenant says otherwise: twenty arrays of a
// thousand. Without a bound a tenant's scripts could queue millions of
// jobs (a batch of ten arrays of 1,000 is one small request, and a tenant
// may send 100 a second): every scheduling cycle would walk them, and the
// store (etcd has a space quota) would fill for everyone.
const DefaultMaxJobsPerTenant = 20_000

// jobLimit is the bound on a tenant's jobs not ended; negative: none.
func (s *Server) jobLimit() int {
	if s.cfg.MaxJobsPerTenant == 0 {
		return DefaultMaxJobsPerTenant
	}
	return s.cfg.MaxJobsPerTenant
}

// checkJobLimit refuses a tenant's submit of n more jobs of its own when
// its jobs not ended would pass the bound (n ≤ 0 passes). The
// administrator is not bounded; its jobs count all the same. An
// endpoint's replicas are bounded by their tenant's limit whoever made the
// endpoint (checkReplicaLimit). Concurrent submits may pass the bound by
// their own size: it is checked before they commit.
func (s *Server) checkJobLimit(p Principal, n int) error {
	limit := s.jobLimit()
	if p.Tenant == "" || limit < 0 || n <= 0 {
		return nil
	}
	if have := s.cache.liveOf(p.Tenant); have+n > limit {
		return refuse(CodeQuotaExceeded, "tenant", "tenant %q has %d jobs that have not ended, and %d more would pass its limit of %d "+
			"(allot server --max-jobs-per-tenant): cancel some, or submit once some have ended", p.Tenant, have, n, limit)
	}
	return nil
}

// checkReplicaLimit refuses n more replicas of an endpoint of tenant when
// the tenant's jobs not ended would pass the bound: replicas are jobs of
// the tenant, so they count against its limit whoever created the
// endpoint, and the server submitting them on a scale-out is bounded as
// the tenant would be. field names what asks for them: min_replicas at a
// create, scale or update, "" for the reconcile's own submits, whose
// refusal becomes the endpoint's ReplicaRefused event.
func (s *Server) checkReplicaLimit(tenant string, n int, field string) error {
	limit := s.jobLimit()
	if limit < 0 || n <= 0 {
		return nil
	}
	have := s.cache.liveOf(tenant)
	if have+n <= limit {
		return nil
	}
	flag := fmt.Sprintf("its limit of %d jobs not ended (allot server --max-jobs-per-tenant)", limit)
	if field != "" {
		return refuse(CodeQuotaExceeded, field, "%d more replicas would pass tenant %q's %s: it has %d; ask for fewer, "+
			"or end some of its jobs first", n, tenant, flag, have)
	}
	return refuse(CodeQuotaExceeded, "", "tenant %q has %d jobs that have not ended, %s: the scale-out stops here until some end",
		tenant, have, flag)
}
