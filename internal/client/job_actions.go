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
	return c.UpdateJob(ctx, id, JobUpdate{Priority: priority})
}

// JobUpdate is what UpdateJob changes of a queued job: Priority when not
// empty, Begin when not nil (an RFC 3339 time, or "" to remove it),
// Nodes and ExcludeNodes when not nil (empty: none).
type JobUpdate struct {
	Priority            string
	Begin               *string
	Nodes, ExcludeNodes *[]string
}

// UpdateJob changes what u gives of a queued job, all of it or nothing,
// and returns the job as it is afterwards.
func (c *Client) UpdateJob(ctx context.Context, id string, u JobUpdate) (Job, error) {
	m := map[string]any{}
	if u.Priority != "" {
		m["priority"] = u.Priority
	}
	if u.Begin != nil {
		m["begin"] = *u.Begin
	}
	for key, list := range map[string]*[]string{"nodes": u.Nodes, "exclude_nodes": u.ExcludeNodes} {
		if list != nil {
			nodes := *list
			if nodes == nil {
				nodes = []string{}
			}
			m[key] = nodes
		}
	}
	body, err := json.Marshal(m)
	if err != nil {
		return Job{}, err
	}
	var j Job
	err = c.do(ctx, request{method: http.MethodPatch, path: "/v1/jobs/" + seg(id), body: body,
		contentType: "application/json", out: &j})
	return j, err
}
