package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/allot-dev/allot/internal/api/wire"
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
	// Instances is how many instances the job holds now (or asks for to
	// start); Resizes how often an elastic job was resized.
	Instances int `json:"instances"`
	Resizes   int `json:"resizes"`
	// AttemptHistory is every attempt with how it ended.
	AttemptHistory []Attempt `json:"attempt_history"`
	CheckpointPath string    `json:"checkpoint_path"`
	CheckpointNode string    `json:"checkpoint_node"`
	// CheckpointParts are the ranks' parts of the checkpoint, when each
	// rank saves its own.
	CheckpointParts []CheckpointPart `json:"checkpoint_parts"`
	// Preparing is, of a Preparing job, each instance whose agent pulls
	// its image, and how far the pull has come.
	Preparing []Pull `json:"preparing"`
}

// CheckpointPart is one rank's part of a job's checkpoint.
type CheckpointPart struct {
	Rank int    `json:"rank"`
	Step string `json:"step"`
	Path string `json:"path"`
	Node string `json:"node"`
}

// Pull is the pull of an instance's image (wire.Pull).
type Pull = wire.Pull

// Attempt is one run of a job and how it ended.
type Attempt struct {
	Number   int      `json:"number"`
	Nodes    []string `json:"nodes"`
	Started  Time     `json:"started"`
	Ended    Time     `json:"ended"`
	ExitCode int      `json:"exit_code"`
	Reason   string   `json:"reason"`
	Detail   string   `json:"detail"`
	// FailedNode is the node whose instance's failure ended the attempt.
	FailedNode string `json:"failed_node"`
	// Pricing is how the attempt is billed (on-demand, reserved-1y,
	// reserved-3y, spot) and Rates what each instance accrues in USD per
	// hour, fixed when it started.
	Pricing string    `json:"pricing"`
	Rates   []float64 `json:"usd_per_hour"`
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
	// EstimateHow says how the estimate was made; EstimateNone why there
	// is none.
	EstimateHow  string `json:"estimate_how"`
	EstimateNone string `json:"estimate_none"`
	// ExpectedRunSeconds is how long a job that has not ended is expected
	// to run from its start, ExpectedRunBasis on what; zero when unknown.
	ExpectedRunSeconds float64 `json:"expected_run_seconds"`
	ExpectedRunBasis   string  `json:"expected_run_basis"`
	// Checkpoint says, for a queued job with a checkpoint, what it resumes
	// from and whether the nodes of its parts may take it now.
	Checkpoint string `json:"checkpoint"`
	// Placement says why an inference replica runs on an InfiniBand node.
	Placement string `json:"placement"`
	// Elastic says, for an elastic job that holds capacity, its size in
	// its range and why it is not larger.
	Elastic string `json:"elastic"`
	// For a job that holds capacity: where it runs, since when, until
	// when it is protected from preemption, and what may preempt it.
	RunningOn      []string `json:"running_on"`
	RunningSince   Time     `json:"running_since"`
	ProtectedUntil Time     `json:"protected_until"`
	PreemptibleBy  []string `json:"preemptible_by"`
	// Region is the region the server chose for a job allowed in several.
	Region string `json:"region"`
	// Regions compares the job's allowed regions, best first.
	Regions []RegionEstimate `json:"regions"`
	// Policies say what operator policies did to the job's priority in
	// the server's last cycle.
	Policies []string `json:"policies"`
	// AvoidNodes are the nodes where a queued job's attempts failed, which
	// its next attempt keeps off while another node fits.
	AvoidNodes []string `json:"avoid_nodes"`
	// Drains are, for an administrator, the drains of the nodes Detail
	// names.
	Drains []WhyDrain `json:"drains"`
}

// WhyDrain is the drain of one node a job's explanation names.
type WhyDrain struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
	By     string `json:"by"`
	At     Time   `json:"at"`
}

// RegionEstimate is one allowed region of a queued job: its estimated
// start there, price per GPU-hour, distance from the job's data, and the
// score that ranks the regions (lower first).
type RegionEstimate struct {
	Region          string  `json:"region"`
	EstimatedStart  Time    `json:"estimated_start"` // zero when unknown
	NoEstimate      string  `json:"no_estimate"`
	PricePerGPUHour float64 `json:"price_per_gpu_hour"`
	Distance        int     `json:"distance"`
	Score           float64 `json:"score"`
	Chosen          bool    `json:"chosen"`
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
// returns the new job. It sends a new idempotency key, so a submit that
// got no answer is sent again without the risk of a second job.
func (c *Client) Submit(ctx context.Context, body []byte, contentType string) (Job, error) {
	return c.SubmitKeyed(ctx, NewIdempotencyKey(), body, contentType)
}

// SubmitKeyed is Submit with the caller's idempotency key: a submit that
// repeats a key used within the last 24 h for the same document returns
// the job the first one made; for another document, a 409 Conflict.
func (c *Client) SubmitKeyed(ctx context.Context, key string, body []byte, contentType string) (Job, error) {
	var j Job
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs", body: body,
		contentType: contentType, out: &j, key: key})
	return j, err
}

// TrySubmit asks what would become of a job document if it were
// submitted now, storing nothing: the explanation of the would-be job (no
// reason and its nodes when it would start at once; else the core's
// reason and the estimated start), or the refusal a submit would get.
func (c *Client) TrySubmit(ctx context.Context, body []byte, contentType string) (Why, error) {
	var w Why
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs", query: url.Values{"dry_run": {"true"}}, body: body,
		contentType: contentType, out: &w})
	return w, err
}

// NewIdempotencyKey returns a random key for SubmitKeyed: 128 bits as 32
// hex digits.
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// JobFilter narrows ListJobs; empty fields match everything.
type JobFilter struct {
	State  string   // one state; kept for older callers
	States []string // any of these states
	Tenant string
	// Name is a substring of the job's name, or a glob (* ? [) of all of it.
	Name string
	// Limit asks for one page of at most Limit jobs, in ID order, and
	// Continue for the page after the one that returned it.
	Limit    int
	Continue string
}

func (f JobFilter) query() url.Values {
	q := url.Values{}
	if f.State != "" {
		q.Add("state", f.State)
	}
	for _, s := range f.States {
		q.Add("state", s)
	}
	if f.Tenant != "" {
		q.Set("tenant", f.Tenant)
	}
	if f.Name != "" {
		q.Set("name", f.Name)
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Continue != "" {
		q.Set("continue", f.Continue)
	}
	return q
}

// JobList is one answer of GET /v1/jobs: the jobs, and when the listing
// was paged and more may follow, the token that continues it.
type JobList struct {
	Jobs     []Job  `json:"jobs"`
	Continue string `json:"continue,omitempty"`
}

// ListJobs returns the jobs the token may see, newest first (one page in ID
// order when f.Limit or f.Continue is set).
func (c *Client) ListJobs(ctx context.Context, f JobFilter) ([]Job, error) {
	l, err := c.ListJobPage(ctx, f)
	return l.Jobs, err
}

// ListJobPage returns the jobs as ListJobs does, with the token that
// continues a paged listing.
func (c *Client) ListJobPage(ctx context.Context, f JobFilter) (JobList, error) {
	var out JobList
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/jobs", query: f.query(), out: &out})
	return out, err
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

// ForceCancel cancels a job and has its processes killed at once, without
// their grace.
func (c *Client) ForceCancel(ctx context.Context, id string) (Job, error) {
	var j Job
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/" + seg(id) + "/cancel", query: url.Values{"force": {"true"}}, out: &j})
	return j, err
}

// Why explains the job's state: its reason, the detail a person needs, and
// an estimated start when the scheduler has one.
func (c *Client) Why(ctx context.Context, id string) (Why, error) {
	var w Why
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/jobs/" + seg(id) + "/why", out: &w})
	return w, err
}
