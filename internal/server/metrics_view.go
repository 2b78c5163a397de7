package server

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Who reads which series of /metrics. A series labelled with a tenant, an
// endpoint or a partition tells of one tenant's work (its cost, its budget,
// its endpoints' load); the rest (the fleet's GPUs, the cycle, HTTP and
// process figures) of no one's in particular.
//
//   - the administrator and a metrics-reader token (ScopeMetrics) read
//     every series;
//   - a tenant's token reads the series of no one in particular and those
//     whose every such label is its own: its tenant, its endpoints, its
//     partition;
//   - a request without a token reads only the series of no one in
//     particular.

// tenantLabels are the labels whose value belongs to one tenant.
var tenantLabels = map[string]bool{"tenant": true, "endpoint": true, "partition": true}

// MetricsFor returns what p may read of the server's series.
func (s *Server) MetricsFor(ctx context.Context, p Principal) prometheus.Gatherer {
	if p.Admin || p.Metrics {
		return s.reg
	}
	own := map[string]map[string]bool{}
	if p.Tenant != "" && p.Node == "" && p.Endpoint == "" {
		own["tenant"] = map[string]bool{p.Tenant: true}
		if t, ok := s.world().tenancy.Tenant(p.Tenant); ok && t.Partition != "" {
			own["partition"] = map[string]bool{t.Partition: true}
		}
		if eps, err := s.Endpoints(ctx, p); err == nil {
			own["endpoint"] = map[string]bool{}
			for _, e := range eps {
				own["endpoint"][e.Spec.Name] = true
			}
		}
	}
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		fams, err := s.reg.Gather()
		return filterFamilies(fams, own), err
	})
}

// filterFamilies keeps, of fams, the series whose every per-tenant label
// has a value in own (none for a series of no one in particular), and the
// families that keep a series.
func filterFamilies(fams []*dto.MetricFamily, own map[string]map[string]bool) []*dto.MetricFamily {
	out := fams[:0]
	for _, f := range fams {
		kept := f.Metric[:0]
		for _, m := range f.Metric {
			if readable(m, own) {
				kept = append(kept, m)
			}
		}
		if len(kept) > 0 {
			f.Metric = kept
			out = append(out, f)
		}
	}
	return out
}

func readable(m *dto.Metric, own map[string]map[string]bool) bool {
	for _, l := range m.GetLabel() {
		if tenantLabels[l.GetName()] && !own[l.GetName()][l.GetValue()] {
			return false
		}
	}
	return true
}
