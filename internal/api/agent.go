package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
)

// MaxWait is the longest an assignments long-poll waits.
const MaxWait = 60 * time.Second

// The agent API's bodies live in package wire, shared with the client.
type (
	RegisterRequest   = wire.RegisterRequest
	RegisterGPU       = wire.RegisterGPU
	Assignments       = wire.Assignments
	Assignment        = wire.Assignment
	AssignedGPU       = wire.AssignedGPU
	Container         = wire.Container
	Mount             = wire.Mount
	StopOrder         = wire.StopOrder
	AttemptEvent      = wire.AttemptEvent
	CheckpointRequest = wire.CheckpointRequest
	JobFilesRequest   = wire.JobFilesRequest
	JobFiles          = wire.JobFiles
	HealthReport      = wire.HealthReport
	HealthAnswer      = wire.HealthAnswer
)

// decodeBody reads a JSON body into v, refusing unknown fields.
func (h *handler) decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := h.readBody(w, r)
	if !ok {
		return false
	}
	if e := decodeStrict(body, v); e != nil {
		writeError(w, e.Code, e.Field, e.Message)
		return false
	}
	return true
}

// maxNodeName bounds a node's name in a request body, as DNS bounds a
// host's.
const maxNodeName = 253

// MaxCheckpointPath bounds the path of a reported checkpoint.
const MaxCheckpointPath = 4096

func (h *handler) register(w http.ResponseWriter, r *http.Request, _ server.Principal) {
	var req RegisterRequest
	if !h.decodeBody(w, r, &req) {
		return
	}
	gpus := make([]server.GPU, len(req.GPUs))
	for i, g := range req.GPUs {
		gpus[i] = server.GPU{Index: g.Index, UUID: g.UUID, Model: g.Model, MemoryMiB: g.MemoryMiB}
	}
	if err := h.srv.RegisterNode(r.Context(), r.PathValue("name"), gpus, req.Address); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"node": r.PathValue("name"), "health": "Ready"})
}

func (h *handler) heartbeat(w http.ResponseWriter, r *http.Request, _ server.Principal) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	var req wire.HeartbeatRequest
	if len(body) > 0 {
		if e := decodeStrict(body, &req); e != nil {
			writeError(w, e.Code, e.Field, e.Message)
			return
		}
	}
	if len(body) > 0 {
		// First: a body refused leaves the heartbeat unrecorded.
		if err := h.srv.SetNodeImages(r.PathValue("name"), req.Images); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if err := h.srv.Heartbeat(r.Context(), r.PathValue("name")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) health(w http.ResponseWriter, r *http.Request, p server.Principal) {
	var req HealthReport
	if !h.decodeBody(w, r, &req) {
		return
	}
	switch {
	case req.Healthy == nil:
		writeError(w, codeInvalidSpec, "healthy", "is required: true when the node's health check passed, false when it failed")
		return
	case len(req.Detail) > wire.MaxHealthDetail:
		writeError(w, codeInvalidSpec, "detail", fmt.Sprintf("is %d bytes, over the limit of %d", len(req.Detail), wire.MaxHealthDetail))
		return
	}
	changed, err := h.srv.ReportHealth(r.Context(), p, r.PathValue("name"), *req.Healthy, req.Detail)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, HealthAnswer{Changed: changed})
}

func (h *handler) jobFiles(w http.ResponseWriter, r *http.Request, _ server.Principal) {
	var q JobFilesRequest
	if !h.decodeBody(w, r, &q) {
		return
	}
	if len(q.Jobs) > wire.MaxJobFilesAsk {
		writeError(w, codeInvalidSpec, "jobs", fmt.Sprintf("names %d jobs, over the limit of %d a request", len(q.Jobs), wire.MaxJobFilesAsk))
		return
	}
	keep, err := h.srv.JobFilesToKeep(r.PathValue("name"), q.Jobs)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, JobFiles{Keep: keep})
}

func (h *handler) assignments(w http.ResponseWriter, r *http.Request, _ server.Principal) {
	q := r.URL.Query()
	var after int64
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, codeInvalidSpec, "after", fmt.Sprintf("after=%q: want a revision (an integer ≥ 0)", v))
			return
		}
		after = n
	}
	var wait time.Duration
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			writeError(w, codeInvalidSpec, "wait", fmt.Sprintf("wait=%q: want a duration such as 30s", v))
			return
		}
		wait = min(d, MaxWait)
	}
	a, err := h.srv.NodeAssignments(r.Context(), r.PathValue("name"), after, wait)
	if err != nil {
		if r.Context().Err() != nil {
			return // the agent hung up
		}
		h.fail(w, r, err)
		return
	}
	out := Assignments{Rev: a.Rev, Run: make([]Assignment, len(a.Run)), Stop: make([]StopOrder, len(a.Stop))}
	for i, x := range a.Run {
		timeout := "" // none
		if x.Timeout > 0 {
			timeout = x.Timeout.String()
		}
		as := Assignment{Job: x.Job, Attempt: x.Attempt, Rank: x.Rank, WorldSize: x.WorldSize, Command: x.Command,
			Env: x.Env, ArrayIndex: x.ArrayIndex, GPUs: make([]AssignedGPU, len(x.GPUs)), GPUMilli: x.GPUMilli, MasterAddr: x.MasterAddr,
			MasterPort: x.MasterPort, ResumeFrom: x.ResumeFrom, ResumeNode: x.ResumeNode, NoResume: x.NoResume, Timeout: timeout,
			Grace: x.Grace.String(), Started: x.Started, Container: wireContainer(x.Container), CPUMilli: x.CPUMilli, MemoryMiB: x.MemoryMiB}
		for k, g := range x.GPUs {
			as.GPUs[k] = AssignedGPU{Index: g.Index, UUID: g.UUID}
		}
		if ra := x.RegistryAuth; ra != nil {
			as.RegistryAuth = &wire.RegistryAuth{Registry: ra.Registry, Auth: ra.Auth}
		}
		out.Run[i] = as
	}
	for i, x := range a.Stop {
		out.Stop[i] = StopOrder{Job: x.Job, Attempt: x.Attempt, Rank: x.Rank, Grace: x.Grace.String(), Reason: x.Reason}
	}
	writeJSON(w, http.StatusOK, out)
}

// wireContainer is c on the wire, nil for nil.
func wireContainer(c *model.Container) *Container {
	if c == nil {
		return nil
	}
	w := &Container{Image: c.Image, Args: c.Args, Workdir: c.Workdir}
	for _, m := range c.Mounts {
		w.Mounts = append(w.Mounts, Mount{Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	return w
}

// attempt reads the {n} path segment.
func attempt(w http.ResponseWriter, r *http.Request) (int, bool) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 1 {
		writeError(w, codeInvalidSpec, "attempt", fmt.Sprintf("attempt %q: want a number ≥ 1", r.PathValue("n")))
		return 0, false
	}
	return n, true
}

func (h *handler) event(w http.ResponseWriter, r *http.Request, p server.Principal) {
	n, ok := attempt(w, r)
	if !ok {
		return
	}
	var e AttemptEvent
	if !h.decodeBody(w, r, &e) {
		return
	}
	if !printable(w, "message", e.Message, wire.MaxEventMessage) {
		return
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"pulled", e.Pulled}, {"pull_total", e.PullTotal}} {
		if f.v < 0 {
			writeError(w, codeInvalidSpec, f.name, fmt.Sprintf("%d: a count of bytes cannot be negative", f.v))
			return
		}
	}
	j, err := h.srv.ReportEvent(r.Context(), p, r.PathValue("id"), n, server.Event{Type: e.Type, Rank: e.Rank, Node: e.Node,
		ExitCode: e.ExitCode, Outcome: e.Outcome, Killed: e.Killed, Message: e.Message, Pulled: e.Pulled, PullTotal: e.PullTotal})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, NewJob(j))
}

// printable refuses (400 naming field) a value over limit bytes or with
// characters that are not printable, and reports whether it passed.
func printable(w http.ResponseWriter, field, v string, limit int) bool {
	if len(v) > limit {
		writeError(w, codeInvalidSpec, field, fmt.Sprintf("is %d bytes, over the limit of %d", len(v), limit))
		return false
	}
	var fe *model.FieldError
	if errors.As(model.Printable(field, v), &fe) {
		writeError(w, codeInvalidSpec, fe.Field, fe.Msg)
		return false
	}
	return true
}

func (h *handler) checkpoint(w http.ResponseWriter, r *http.Request, p server.Principal) {
	var c CheckpointRequest
	if !h.decodeBody(w, r, &c) {
		return
	}
	if !printable(w, "path", c.Path, MaxCheckpointPath) || !printable(w, "node", c.Node, maxNodeName) ||
		!printable(w, "step", c.Step, MaxCheckpointPath) {
		return
	}
	j, err := h.srv.ReportCheckpoint(r.Context(), p, r.PathValue("id"), server.CheckpointReport{Path: c.Path, Node: c.Node, Shared: c.Shared, Rank: c.Rank, Step: c.Step})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, NewJob(j))
}

func (h *handler) appendLog(w http.ResponseWriter, r *http.Request, p server.Principal) {
	n, ok := attempt(w, r)
	if !ok {
		return
	}
	src, ok := logSource(w, r)
	if !ok {
		return
	}
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	next, err := h.srv.AppendLog(r.Context(), p, r.PathValue("id"), n, body, src)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if src == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, LogAppended{Next: next})
}

// LogAppended answers a log chunk sent with its offset: the offset in the
// instance's log of the next byte the server wants. Lower than the end of
// the chunk, it asks for what the server lacks (see server.AppendLog).
type LogAppended struct {
	Next int64 `json:"next"`
}

// logSource reads the ?rank=R&offset=O[&skip=1] of a log chunk; nil when
// offset is absent (a line of the agent's own).
func logSource(w http.ResponseWriter, r *http.Request) (*server.LogSource, bool) {
	q := r.URL.Query()
	if !q.Has("offset") {
		return nil, true
	}
	var src server.LogSource
	num := func(name string, limit int64) (int64, bool) {
		v := q.Get(name)
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil || x < 0 || x > limit {
			writeError(w, codeInvalidSpec, name, fmt.Sprintf("%s %q: want a whole number from 0 to %d", name, v, limit))
			return 0, false
		}
		return x, true
	}
	off, ok := num("offset", 1<<62)
	if !ok {
		return nil, false
	}
	src.Offset = off
	if q.Has("rank") {
		rank, ok := num("rank", 1<<20)
		if !ok {
			return nil, false
		}
		src.Rank = int(rank)
	}
	switch q.Get("skip") {
	case "", "0":
	case "1":
		src.Skip = true
	default:
		writeError(w, codeInvalidSpec, "skip", fmt.Sprintf("skip %q: want 1 or 0", q.Get("skip")))
		return nil, false
	}
	return &src, true
}

// logs answers an attempt's log as text; with follow=1 it streams what
// comes until the attempt ends, the client hangs up, or the request's token
// is revoked or expires (checked at least every half second).
func (h *handler) logs(w http.ResponseWriter, r *http.Request, p server.Principal) {
	q := r.URL.Query()
	n := 0
	if v := q.Get("attempt"); v != "" {
		x, err := strconv.Atoi(v)
		if err != nil || x < 1 {
			writeError(w, codeInvalidSpec, "attempt", fmt.Sprintf("attempt=%q: want a number ≥ 1", v))
			return
		}
		n = x
	}
	follow := q.Get("follow") == "1" || q.Get("follow") == "true"
	id := r.PathValue("id")
	c, err := h.srv.Log(r.Context(), p, id, n, 0)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Allot-Attempt", strconv.Itoa(c.Attempt))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(c.Data)
	if !follow {
		return
	}
	// The route's writers wrap w: flush through them, each time the
	// client is to wait, so that a line reaches it as soon as it came.
	rc := http.NewResponseController(w)
	for !c.Done {
		_ = rc.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-c.Changed:
		case <-time.After(500 * time.Millisecond): // the attempt may have ended
		}
		if !h.tokenValid(r) {
			return
		}
		next, err := h.srv.Log(r.Context(), p, id, c.Attempt, c.Next)
		if err != nil {
			return
		}
		c = next
		if _, err := w.Write(c.Data); err != nil {
			return
		}
	}
}
