package client

import (
	"context"
	"encoding/json"
	"net/http"
)

// Hold keeps a queued job out of scheduling until Release; it returns the
// job as it is afterwards (reason Held).
func (c *Client) Hold(ctx context.Context, id string) (Job, error) {
	var j Job
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/" + seg(id) + "/hold", out: &j})
	return j, err
}

// Release lets a held job be scheduled again.
func (c *Client) Release(ctx context.Context, id string) (Job, error) {
	var j Job
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/" + seg(id) + "/release", out: &j})
	return j, err
}

// Requeue stops a running job's attempt and queues the job again, to
// resume from its last checkpoint; it returns the job as it is afterwards
// (Preempted while its processes stop, then Queued; reason Requeued).
func (c *Client) Requeue(ctx context.Context, id string) (Job, error) {
	var j Job
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/" + seg(id) + "/requeue", out: &j})
	return j, err
}

// SetPriority changes a queued job's priority ("standard", "spot:5").
func (c *Client) SetPriority(ctx context.Context, id, priority string) (Job, error) {
	body, err := json.Marshal(map[string]string{"priority": priority})
	if err != nil {
		return Job{}, err
	}
	var j Job
	err = c.do(ctx, request{method: http.MethodPatch, path: "/v1/jobs/" + seg(id), body: body,
		contentType: "application/json", out: &j})
	return j, err
}
