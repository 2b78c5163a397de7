// Package client is a small typed client of allot's HTTP API (v1), the
// contract in docs/api.md.
//
// A Client holds the server's base URL and a bearer token; every method is
// one request. A response other than the expected 2xx status is returned as
// an *APIError carrying the HTTP status and the error body's code, message
// and field, so callers branch with errors.As:
//
//	var apiErr *client.APIError
//	if errors.As(err, &apiErr) && apiErr.Code == client.CodeNotFound { … }
//
// Submit sends a job document as the user wrote it (JSON or YAML);
// JobDocument builds the JSON document of a model.JobSpec, so that a file
// read and checked locally by package spec reaches the server unchanged.
// Timestamps decode from RFC 3339, null or "" into Time, whose zero value
// means "not set".
package client
