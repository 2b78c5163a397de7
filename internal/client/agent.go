package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// GPU is one GPU an agent registers.
type GPU struct {
	Index     int    `json:"index"`
	UUID      string `json:"uuid"`
	Model     string `json:"model"`
	MemoryMiB int64  `json:"memory_mib"`
}

// Assignments is what a node should run and stop as of Rev.
type Assignments struct {
	Rev  int64        `json:"rev"`
	Run  []Assignment `json:"run"`
	Stop []StopOrder  `json:"stop"`
}

// Assignment is one instance of an attempt a node should run.
type Assignment struct {
	Job        string            `json:"job"`
	Attempt    int               `json:"attempt"`
	Rank       int               `json:"rank"`
	WorldSize  int               `json:"world_size"`
	Command    []string          `json:"command"`
	Env        map[string]string `json:"env,omitempty"`
	GPUs       []AssignedGPU     `json:"gpus"`
	GPUMilli   int64             `json:"gpu_milli"`
	MasterAddr string            `json:"master_addr"`
	MasterPort int               `json:"master_port"`
	ResumeFrom string            `json:"resume_from,omitempty"`
	Timeout    string            `json:"timeout,omitempty"`
	Grace      string            `json:"grace"`
	Started    bool              `json:"started"`
}

// AssignedGPU is one GPU of an assignment.
type AssignedGPU struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
}

// StopOrder is an instance a node must stop within grace.
type StopOrder struct {
	Job     string `json:"job"`
	Attempt int    `json:"attempt"`
	Rank    int    `json:"rank"`
	Grace   string `json:"grace"`
	Reason  string `json:"reason"`
}

// AttemptEvent is what an agent reports of one instance of an attempt.
type AttemptEvent struct {
	Type     string `json:"type"` // started or exited
	Rank     int    `json:"rank"`
	Node     string `json:"node"`
	ExitCode int    `json:"exit_code"`
	Outcome  string `json:"outcome,omitempty"` // Exited, Stopped, TimedOut, NodeLost
	Killed   bool   `json:"killed,omitempty"`
}

func jsonBody(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// Register registers node with its GPUs and the address its jobs' master
// listens on.
func (c *Client) Register(ctx context.Context, node string, gpus []GPU, address string) error {
	return c.do(ctx, request{method: http.MethodPost, path: "/v1/nodes/" + seg(node) + "/register",
		body: jsonBody(map[string]any{"gpus": gpus, "address": address}), contentType: "application/json"})
}

// Heartbeat tells the server node's agent is alive.
func (c *Client) Heartbeat(ctx context.Context, node string) error {
	return c.do(ctx, request{method: http.MethodPost, path: "/v1/nodes/" + seg(node) + "/heartbeat"})
}

// Assignments long-polls what node should run: it returns at once when
// something changed after rev, else after wait.
func (c *Client) Assignments(ctx context.Context, node string, after int64, wait time.Duration) (Assignments, error) {
	var a Assignments
	q := url.Values{"after": {strconv.FormatInt(after, 10)}, "wait": {wait.String()}}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/nodes/" + seg(node) + "/assignments", query: q, out: &a})
	return a, err
}

// Event reports what happened to one instance of attempt n of job id.
func (c *Client) Event(ctx context.Context, id string, n int, e AttemptEvent) error {
	return c.do(ctx, request{method: http.MethodPost, path: fmt.Sprintf("/v1/jobs/%s/attempts/%d/events", seg(id), n),
		body: jsonBody(e), contentType: "application/json"})
}

// Checkpoint reports that job id saved a checkpoint at path.
func (c *Client) Checkpoint(ctx context.Context, id, path string) (Job, error) {
	var j Job
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/" + seg(id) + "/checkpoint",
		body: jsonBody(map[string]string{"path": path}), contentType: "application/json", out: &j})
	return j, err
}

// AppendLog ships a chunk of attempt n's log of job id.
func (c *Client) AppendLog(ctx context.Context, id string, n int, chunk []byte) error {
	return c.do(ctx, request{method: http.MethodPost, path: fmt.Sprintf("/v1/jobs/%s/attempts/%d/log", seg(id), n),
		body: chunk, contentType: "application/octet-stream"})
}

// Logs copies attempt n (0: the latest) of job id's log to w; with follow
// it keeps copying until the attempt ends or ctx does. It does not use the
// client's timeout.
func (c *Client) Logs(ctx context.Context, id string, n int, follow bool, w io.Writer) error {
	q := url.Values{}
	if n > 0 {
		q.Set("attempt", strconv.Itoa(n))
	}
	if follow {
		q.Set("follow", "1")
	}
	target := c.base.String() + "/v1/jobs/" + seg(id) + "/logs"
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := *c.HTTP
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("GET %s: %w", target, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
		return decodeError(resp, data)
	}
	_, err = io.Copy(w, resp.Body)
	if err != nil && ctx.Err() != nil {
		return nil
	}
	return err
}
