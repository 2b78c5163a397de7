package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// Job is a submitted job as the API shows it.
type Job struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Tenant      string          `json:"tenant"`
	State       string          `json:"state"`
	Reason      string          `json:"reason"`
	Detail      string          `json:"detail"`
	Priority    Priority        `json:"priority"`
	Spec        json.RawMessage `json:"spec,omitempty"` // the job document
	SubmittedAt Time            `json:"submitted_at"`
	StartedAt   Time            `json:"started_at"`
	EndedAt     Time            `json:"ended_at"`
	Allocations []Allocation    `json:"allocations"`
	Attempts    Count           `json:"attempts"`
	Preemptions int             `json:"preemptions"`
	// AttemptHistory is every attempt with how it ended.
	AttemptHistory []Attempt `json:"attempt_history"`
	CheckpointPath string    `json:"checkpoint_path"`
}

// Attempt is one run of a job and how it ended.
type Attempt struct {
	Number   int      `json:"number"`
	Nodes    []string `json:"nodes"`
	Started  Time     `json:"started"`
	Ended    Time     `json:"ended"`
	ExitCode int      `json:"exit_code"`
	Reason   string   `json:"reason"`
	Detail   string   `json:"detail"`
}

// Allocation is what one instance of a job holds on one node: GPU indices
// and the milli-GPU share of each (1000 for whole GPUs).
type Allocation struct {
	Node     string `json:"node"`
	GPUs     []int  `json:"gpus"`
	GPUMilli int64  `json:"gpu_milli"`
}

// Why is the scheduler's explanation of a job's state.
type Why struct {
	ID             string `json:"id"`
	State          string `json:"state"`
	Reason         string `json:"reason"`
	Detail         string `json:"detail"`
	EstimatedStart Time   `json:"estimated_start"` // zero when unknown
	// Policies say what operator policies did to the job's priority in
	// the server's last cycle.
	Policies []string `json:"policies"`
}

// Priority is a job's priority as text: "standard", "spot:5". It decodes
// from that text, from a number, or from {"class": …, "value": …}.
type Priority string

// UnmarshalJSON accepts "standard:10", 10 or {"class":"standard","value":10}.
func (p *Priority) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
		*p = ""
		return nil
	case len(data) > 0 && data[0] == '"':
		var s string
		err := json.Unmarshal(data, &s)
		*p = Priority(s)
		return err
	case len(data) > 0 && data[0] == '{':
		var v struct {
			Class string          `json:"class"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			return err
		}
		s := v.Class
		if len(v.Value) > 0 && string(v.Value) != "0" && string(v.Value) != "null" {
			s += ":" + string(v.Value)
		}
		*p = Priority(s)
		return nil
	}
	*p = Priority(data) // a number
	return nil
}

// Count is a number that the server may also send as a list of the counted
// things (a job's attempts); it decodes to the list's length then.
type Count int

// UnmarshalJSON reads a number, null or a list.
func (c *Count) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(data, &list); err != nil {
			return err
		}
		*c = Count(len(list))
		return nil
	}
	if bytes.Equal(data, []byte("null")) {
		*c = 0
		return nil
	}
	n, err := strconv.Atoi(string(data))
	*c = Count(n)
	return err
}

// Submit posts a job document (JSON or YAML, named by contentType) and
// returns the new job.
func (c *Client) Submit(ctx context.Context, body []byte, contentType string) (Job, error) {
	var j Job
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs", body: body,
		contentType: contentType, out: &j})
	return j, err
}

// JobFilter narrows ListJobs; empty fields match everything.
type JobFilter struct {
	State  string
	Tenant string
}

// ListJobs returns the jobs the token may see, newest first.
func (c *Client) ListJobs(ctx context.Context, f JobFilter) ([]Job, error) {
	q := url.Values{}
	if f.State != "" {
		q.Set("state", f.State)
	}
	if f.Tenant != "" {
		q.Set("tenant", f.Tenant)
	}
	var out struct {
		Jobs []Job `json:"jobs"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/jobs", query: q, out: &out})
	return out.Jobs, err
}

// GetJob returns the job with this ID.
func (c *Client) GetJob(ctx context.Context, id string) (Job, error) {
	var j Job
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/jobs/" + seg(id), out: &j})
	return j, err
}

// Cancel cancels the job and returns it as it is afterwards.
func (c *Client) Cancel(ctx context.Context, id string) (Job, error) {
	var j Job
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/" + seg(id) + "/cancel", out: &j})
	return j, err
}

// Why explains the job's state: its reason, the detail a person needs, and
// an estimated start when the scheduler has one.
func (c *Client) Why(ctx context.Context, id string) (Why, error) {
	var w Why
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/jobs/" + seg(id) + "/why", out: &w})
	return w, err
}
