package endpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Routes: what gateways (internal/gateway) need to send callers' requests
// to replicas, watched with a long poll (GET /v1/routes?after=V&wait=D,
// as agents watch their assignments), never read per request.
//
// A replica is in its endpoint's route when its job runs, its current
// attempt has said which port it serves on (Report.Port, which
// allot demo serve sends), and it is not draining (drain.go). Its
// address is its node's address, as the node's agent registered it, with
// that port: a replica names only a port, never a host, so a tenant cannot
// point a gateway at a machine outside the fleet. The gateway still checks
// a replica's readiness before it sends it a request.

// Route is one endpoint as gateways route to it.
type Route struct {
	Endpoint  string
	Tenant    string
	Access    string                  // model.AccessTenant or model.AccessPublic
	Readiness model.EndpointReadiness // with the defaults filled in
	Replicas  []RouteReplica          // by job ID
	// Callers are the SHA-256 hashes (hex) of the tokens that may call the
	// endpoint when its access is tenant: its tenant's tokens that have not
	// expired. A gateway compares the hash of a caller's bearer token with
	// them; the token itself never reaches a gateway's memory for longer
	// than a request, nor a replica.
	Callers []string
}

// RouteReplica is one replica a gateway may send requests to.
type RouteReplica struct {
	Job     string
	Address string // host:port
}

// RouteTable is every endpoint's route, and a version that changes
// whenever one of them does.
type RouteTable struct {
	Version string
	Routes  []Route
}

// routesRecheck is how often a watch recomputes the table while nothing
// woke it: endpoint records and tokens change without a signal of their
// own.
const routesRecheck = time.Second

// Routes returns the route table (the server gives it only to a gateway
// token or the administrator) once its version differs from after, or
// when wait has passed (at once when wait ≤ 0).
func (b *Book) Routes(ctx context.Context, after string, wait time.Duration) (RouteTable, error) {
	timer := time.NewTimer(max(wait, 0))
	defer timer.Stop()
	for {
		jobsChanged := b.host.JobsChanged()
		b.metricsMu.Lock()
		routesChanged := b.routesChanged
		b.metricsMu.Unlock()
		t, err := b.routeTable(ctx)
		if err != nil {
			return RouteTable{}, err
		}
		if t.Version != after || wait <= 0 {
			return t, nil
		}
		recheck := time.NewTimer(routesRecheck)
		select {
		case <-jobsChanged:
		case <-routesChanged:
		case <-recheck.C:
		case <-timer.C:
			recheck.Stop()
			return t, nil
		case <-ctx.Done():
			recheck.Stop()
			return RouteTable{}, ctx.Err()
		}
		recheck.Stop()
	}
}

// routeTable computes the route table from the records, the jobs and the
// replicas' reports.
func (b *Book) routeTable(ctx context.Context) (RouteTable, error) {
	known := b.known(ctx)
	jobs := b.host.Replicas()
	callers := b.host.Callers()
	t := RouteTable{Routes: make([]Route, 0, len(known))}
	b.metricsMu.Lock()
	for name, e := range known {
		r := Route{Endpoint: name, Tenant: e.Spec.Tenant, Access: e.Spec.Access, Readiness: e.Spec.Readiness.Or(), Replicas: []RouteReplica{}}
		if r.Access == "" {
			r.Access = model.AccessTenant
		}
		if r.Access == model.AccessTenant {
			r.Callers = callers[e.Spec.Tenant]
		}
		live, _ := splitReplicas(e, jobs[name])
		for _, j := range live {
			if j.Status.State != model.StateRunning || len(j.Status.Allocations) == 0 {
				continue
			}
			if _, drain := b.draining[name][j.ID]; drain {
				continue
			}
			rep, ok := b.reports[name][j.ID]
			if !ok || rep.r.Port == 0 || rep.attempt != len(j.Status.Attempts) {
				continue
			}
			addr := net.JoinHostPort(b.host.Address(j.Status.Allocations[0].Node), strconv.Itoa(rep.r.Port))
			r.Replicas = append(r.Replicas, RouteReplica{Job: j.ID, Address: addr})
		}
		slices.SortFunc(r.Replicas, func(a, b RouteReplica) int { return strings.Compare(a.Job, b.Job) })
		t.Routes = append(t.Routes, r)
	}
	b.metricsMu.Unlock()
	slices.SortFunc(t.Routes, func(a, b Route) int { return strings.Compare(a.Endpoint, b.Endpoint) })
	body, err := json.Marshal(t.Routes)
	if err != nil {
		return RouteTable{}, err
	}
	sum := sha256.Sum256(body)
	t.Version = hex.EncodeToString(sum[:8])
	return t, nil
}
