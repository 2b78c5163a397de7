// Package api serves allot's HTTP API (v1, docs/api.md) over a
// server.Server with the standard library's router: bearer-token
// authentication (tokens are 32 random bytes in base64url, stored as SHA-256
// hex), a token-bucket rate limit per tenant (429 with Retry-After), a 1 MiB
// body limit (413), errors as {"code","message","field"}, /metrics,
// /healthz, /readyz and the OpenAPI 3 document at /v1/openapi.json.
//
// A job is submitted as a job document, JSON or YAML, read by package spec
// exactly as a job file; a tenant token's tenant is filled in when the
// document names none. Jobs are shown with their spec in the same document
// form (NewJobDocument), so a job read back can be submitted again.
//
// GET /v1/jobs/{id}/why returns the reason and detail of the last cycle and,
// for a queued job, estimated_start from server.Server.Estimate: the
// earliest time at which, assuming running jobs with a duration end at
// started_at + duration, the Ready nodes of an acceptable GPU model in the
// job's allowed regions have room for all its instances (ignoring topology,
// CPU, memory, power, quotas and jobs queued ahead); null when it cannot be
// told.
package api
