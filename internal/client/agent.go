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

	"github.com/allot-dev/allot/internal/api/wire"
)

// The agent API's bodies are package wire's, shared with the server.
type (
	GPU          = wire.RegisterGPU
	Assignments  = wire.Assignments
	Assignment   = wire.Assignment
	AssignedGPU  = wire.AssignedGPU
	Container    = wire.Container
	RegistryAuth = wire.RegistryAuth
	Mount        = wire.Mount
	StopOrder    = wire.StopOrder
	AttemptEvent = wire.AttemptEvent
	// CheckpointRequest is a checkpoint a job saved: a path, where it
	// lies, and for a gang's rank that saves its own part, the rank and
	// the save's step.
	CheckpointRequest = wire.CheckpointRequest
)

func jsonBody(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// Register registers node with its GPUs and the address its jobs' master
// listens on.
func (c *Client) Register(ctx context.Context, node string, gpus []GPU, address string) error {
	return c.do(ctx, request{method: http.MethodPost, path: "/v1/nodes/" + seg(node) + "/register",
		body: jsonBody(wire.RegisterRequest{GPUs: gpus, Address: address}), contentType: "application/json"})
}

// Heartbeat tells the server node's agent is alive and, with images not
// nil, which images the node holds (none for an empty list); nil leaves
// what it reported before.
func (c *Client) Heartbeat(ctx context.Context, node string, images []string) error {
	r := request{method: http.MethodPost, path: "/v1/nodes/" + seg(node) + "/heartbeat", repeatable: true}
	if images != nil {
		r.body, r.contentType = jsonBody(wire.HeartbeatRequest{Images: images}), "application/json"
	}
	return c.do(ctx, r)
}

// ReportHealth reports the result of node's health check: healthy, or not
// with detail. It returns whether the report drained the node or ended its
// health-check drain.
func (c *Client) ReportHealth(ctx context.Context, node string, healthy bool, detail string) (bool, error) {
	var a wire.HealthAnswer
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/nodes/" + seg(node) + "/health",
		body: jsonBody(wire.HealthReport{Healthy: &healthy, Detail: detail}), contentType: "application/json", out: &a, repeatable: true})
	return a.Changed, err
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
		body: jsonBody(e), contentType: "application/json", repeatable: true})
}

// Checkpoint reports that job id saved the checkpoint c.
func (c *Client) Checkpoint(ctx context.Context, id string, ck CheckpointRequest) (Job, error) {
	var j Job
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/" + seg(id) + "/checkpoint",
		body: jsonBody(ck), contentType: "application/json", out: &j, repeatable: true})
	return j, err
}

// JobFilesToKeep asks which of jobs (at most wire.MaxJobFilesAsk) node
// must keep the files of: those that have not ended and may run there
// again.
func (c *Client) JobFilesToKeep(ctx context.Context, node string, jobs []string) ([]string, error) {
	var out wire.JobFiles
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/nodes/" + seg(node) + "/job-files",
		body: jsonBody(wire.JobFilesRequest{Jobs: jobs}), contentType: "application/json", out: &out, repeatable: true})
	return out.Keep, err
}

// AppendLog ships a chunk of attempt n's log of job id, a line of the
// agent's own: the server appends it as it is.
func (c *Client) AppendLog(ctx context.Context, id string, n int, chunk []byte) error {
	return c.do(ctx, request{method: http.MethodPost, path: fmt.Sprintf("/v1/jobs/%s/attempts/%d/log", seg(id), n),
		body: chunk, contentType: "application/octet-stream"})
}

// AppendLogAt ships the chunk at offset off of instance rank's log of
// attempt n of job id, and returns the offset of the next byte the server
// wants: off+len(chunk) once taken, less when the server lacks what came
// before (a new leader), which it then asks for. With skip the server
// takes the chunk even so, noting that it lacks what came before. Sending a
// chunk again is harmless: the server keeps each byte once.
func (c *Client) AppendLogAt(ctx context.Context, id string, n, rank int, off int64, skip bool, chunk []byte) (int64, error) {
	q := url.Values{"rank": {strconv.Itoa(rank)}, "offset": {strconv.FormatInt(off, 10)}}
	if skip {
		q.Set("skip", "1")
	}
	var out struct {
		Next *int64 `json:"next"`
	}
	err := c.do(ctx, request{method: http.MethodPost, path: fmt.Sprintf("/v1/jobs/%s/attempts/%d/log", seg(id), n),
		query: q, body: chunk, contentType: "application/octet-stream", out: &out, repeatable: true})
	if err != nil {
		return 0, err
	}
	if out.Next == nil {
		return off + int64(len(chunk)), nil // a server before offsets: 204, appended
	}
	return *out.Next, nil
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
	pathQuery := "/v1/jobs/" + seg(id) + "/logs"
	if len(q) > 0 {
		pathQuery += "?" + q.Encode()
	}
	target := c.base().String() + pathQuery
	hc := *c.HTTP
	hc.Timeout = 0
	resp, err := c.send(ctx, &hc, false, func(base string) (*http.Request, error) {
		target = base + pathQuery
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return nil, err
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		return req, nil
	})
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

// Routes long-polls the gateways' route table: it returns at once when
// its version is not after, else when it changes or after wait.
func (c *Client) Routes(ctx context.Context, after string, wait time.Duration) (wire.RouteTable, error) {
	var t wire.RouteTable
	q := url.Values{"after": {after}, "wait": {wait.String()}}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/routes", query: q, out: &t})
	return t, err
}

// ReportGateway posts what a gateway measured.
func (c *Client) ReportGateway(ctx context.Context, r wire.GatewayReport) error {
	return c.do(ctx, request{method: http.MethodPost, path: "/v1/gateway/reports", body: jsonBody(r), contentType: "application/json"})
}
