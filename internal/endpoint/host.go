package endpoint

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// Caller is who asks: the server's principal, as this package needs it.
type Caller interface {
	// Name names the caller in events and logs.
	Name() string
	// Sees reports whether the caller may see and change the endpoints of
	// tenant.
	Sees(tenant string) bool
}

// Records keeps the endpoints' records (record.go) in the server's store,
// under /endpoints/NAME. A change is written only if the endpoint is still
// at the revision it was read at; otherwise it fails with
// store.ErrConflict.
type Records interface {
	// List returns every endpoint's record.
	List(ctx context.Context) ([]store.KV, error)
	// Get returns endpoint name's record (store.ErrNotFound: none).
	Get(ctx context.Context, name string) (store.KV, error)
	// Create stores rec as endpoint name and token as the endpoint's
	// metrics token, created at now, in one transaction; store.ErrConflict
	// when the name is taken.
	Create(ctx context.Context, name string, rec []byte, token string, now time.Time) error
	// Put replaces endpoint name's record with rec.
	Put(ctx context.Context, name string, rec []byte, modRev int64) error
	// Delete deletes endpoint name's record and its token.
	Delete(ctx context.Context, name string, modRev int64, token string) error
	// NewToken returns a new secret token.
	NewToken() string
}

// Jobs is the server's job book: an endpoint's replicas are its jobs.
type Jobs interface {
	// Replicas returns the jobs labelled as replicas (ReplicaOf), ended
	// or not, by the endpoint their label names, oldest first.
	Replicas() map[string][]*model.Job
	// Job returns job id as the server holds it now.
	Job(id string) (*model.Job, bool)
	// JobsChanged returns a channel that is closed when a job changes.
	JobsChanged() <-chan struct{}
	// Submit submits spec, a replica of endpoint, for the endpoint: with
	// the administrator's rights, named endpoint:NAME.
	Submit(ctx context.Context, endpoint string, spec model.JobSpec) (*model.Job, error)
	// Cancel cancels job, a replica of endpoint, for the endpoint.
	Cancel(ctx context.Context, endpoint, job string) error
	// Admissible refuses spec at now as a submit refuses a job that could
	// never run (no SKU holds it, over its tenant's hard quota, …).
	Admissible(spec model.JobSpec, now time.Time) error
	// CheckLimit refuses n more jobs of tenant beyond its limit on jobs
	// not ended, naming field when it is not "".
	CheckLimit(tenant string, n int, field string) error
}

// Fleet is what the package reads of tenants, nodes and tokens.
type Fleet interface {
	// Tenant reports whether the tenancy has tenant name.
	Tenant(name string) bool
	// GPUModel returns the GPU model of node ("" when unknown).
	GPUModel(node string) string
	// Address returns the address node's agent registered, or the node's
	// name when it registered none.
	Address(node string) string
	// Callers returns, per tenant, the SHA-256 (hex) of its tokens that
	// may call its endpoints, sorted.
	Callers() map[string][]string
}

// Host is the server as the package needs it: where records are kept,
// replicas run and changes are audited, and its clock.
type Host interface {
	Records
	Jobs
	Fleet
	// Now is the server's clock.
	Now() time.Time
	// Audit records c's action on object, an endpoint of tenant owner,
	// when c is someone other than the owner.
	Audit(ctx context.Context, c Caller, owner, action, object, detail string)
}

// Config is how the server runs the package.
type Config struct {
	// URL is where replicas reach the server ("" unknown): they report
	// their load to URL/v1/endpoints/NAME/metrics. CA is the PEM of the
	// certificates to check it by, when it serves https.
	URL, CA string
	// GatewayURL is where callers reach the endpoints through the
	// gateways ("" unknown).
	GatewayURL string
	// Interval is the longest time between two reconciles
	// (DefaultInterval when 0).
	Interval time.Duration
	Log      *slog.Logger
	// Registry gets the endpoints' series (metrics.go).
	Registry prometheus.Registerer
}
