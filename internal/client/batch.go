package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/allot-dev/allot/internal/api/wire"
)

// Batch is the answer of SubmitBatch: the new jobs, in the order sent.
type Batch struct {
	Jobs []Job `json:"jobs"`
}

// JobError is one problem of a refused batch.
type JobError = wire.JobError

// SubmitBatch submits the jobs of body (a JSON list of job documents, or
// YAML) all or none: when the server refuses any, it stores none and the
// *APIError lists every problem in Errors.
// It sends a new idempotency key, as Submit does.
func (c *Client) SubmitBatch(ctx context.Context, body []byte, contentType string) (Batch, error) {
	return c.SubmitBatchKeyed(ctx, NewIdempotencyKey(), body, contentType)
}

// TrySubmitBatch asks what would become of the jobs of body if they were
// submitted together now, storing nothing: the explanation of each
// would-be job in the order sent, the jobs seeing each other (the server
// runs its scheduler once with all of them). A batch the server would
// refuse is an *APIError listing every problem, as SubmitBatch's.
func (c *Client) TrySubmitBatch(ctx context.Context, body []byte, contentType string) ([]Why, error) {
	var out struct {
		Jobs []Why `json:"jobs"`
	}
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/batch", query: url.Values{"dry_run": {"true"}},
		body: body, contentType: contentType, out: &out})
	return out.Jobs, err
}

// SubmitBatchKeyed is SubmitBatch with the caller's idempotency key, as
// SubmitKeyed.
func (c *Client) SubmitBatchKeyed(ctx context.Context, key string, body []byte, contentType string) (Batch, error) {
	var b Batch
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/batch", body: body,
		contentType: contentType, out: &b, key: key})
	return b, err
}
