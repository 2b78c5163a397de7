package client

import (
	"context"
	"net/http"

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

// SubmitBatchKeyed is SubmitBatch with the caller's idempotency key, as
// SubmitKeyed.
func (c *Client) SubmitBatchKeyed(ctx context.Context, key string, body []byte, contentType string) (Batch, error) {
	var b Batch
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/batch", body: body,
		contentType: contentType, out: &b, key: key})
	return b, err
}
