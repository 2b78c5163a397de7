// Package ui serves the web dashboard at /ui: a page, a script and a style
// sheet embedded in the binary, with no build step and nothing fetched from
// elsewhere.
//
// The page holds no data of its own. It asks for a token, keeps it in the
// tab's sessionStorage, and polls the JSON API (docs/api.md) with it every
// 1.5 s: the fleet map (GET /v1/nodes, admin), the queue with each pending
// job's reason and estimated start (GET /v1/jobs and /v1/jobs/{id}/why),
// running jobs on their nodes, recent preemptions (a job's attempt history),
// partitions and usage, endpoints against their SLO with what the gateways
// measured of each over the last minute (requests/s, the p95 against the
// SLO, errors, and per replica its requests in flight and p95), and alerts
// (admin). A
// section the token may not read (403) is hidden, so a tenant's token shows
// exactly what the API gives that tenant and nothing more.
//
// Serve writes the files under a Content-Security-Policy that allows
// scripts, styles and requests from the same origin only (no inline script),
// and forbids framing.
package ui
