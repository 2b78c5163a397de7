// Package api serves allot's HTTP API (v1, docs/api.md) over a
// server.Server with the standard library's router: bearer-token
// authentication (tokens are 32 random bytes in base64url, stored as SHA-256
// hex), a token-bucket rate limit per tenant (429 with Retry-After), errors
// as {"code","message","field"}, /metrics, /healthz, /readyz and the OpenAPI
// 3 document at /v1/openapi.json, and the web dashboard at /ui (package ui:
// embedded files, no token needed to load them; the page calls the API with
// the token it is given).
//
// Each route has a scope (the route table in api.go): anyone, tenants (and
// the admin), the admin only, agents (the admin or the node's token), or
// reporters (tenants, the admin, and a node token for the jobs bound to its
// node: the checkpoint). A node token is refused everywhere else.
//
// The API faces untrusted clients, so Limits bound what one can make the
// server hold (docs/api.md, "Limits"): the body's size and the time it may
// take to arrive, header size and time, idle connections, connections open
// at once (NewServer wraps the listener), and the rate of requests with a
// missing or unknown token per source address. The token is checked before
// any body is read, and a refusal closes the connection without reading the
// rest of the body.
//
// Instances (instances.go, POST/GET /v1/instances, GET/DELETE
// /v1/instances/{id}) are jobs leasing whole nodes of a SKU; creation
// answers with what a scheduling cycle decided, AllocationFailed (409)
// when the SKU is sold in the region but not free now.
//
// GET /v1/cost (cost.go) reports what work cost at the prices of how it
// ran, by tenant, region, SKU or job, with the budgets the token sees; a
// submit of a tenant whose budget has a hard stop and is spent is refused
// with BudgetExceeded (402).
//
// Quotas change through quota requests a tenant files and only the admin
// approves or denies (quota.go; POST /v1/quota-requests/{id}/approve is an
// admin route, so a tenant's own approval is 403 before the server looks),
// or the admin's PUT /v1/quotas; GET /v1/audit reads the server's
// append-only audit log (admin).
//
// A job is submitted as a job document, JSON or YAML, read by package spec
// exactly as a job file; a tenant token's tenant is filled in when the
// document names none. Jobs are shown with their spec in the same document
// form (NewJobDocument), so a job read back can be submitted again.
//
// GET /v1/jobs/{id}/why returns the reason and detail of the last cycle and,
// for a queued job, estimated_start with estimate_how (or estimate_none)
// from server.Server.Estimate: the scheduling core run forward on the
// server's own view (package forecast); for a job allowed in several
// regions, regions compares them (estimated start, price, distance, score)
// and region names the one the server chose.
package api
