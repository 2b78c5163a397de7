package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
)

// Instance is an instance as the API shows it (docs/api.md, Instances): a
// lease of Count whole nodes of one SKU, backed by the job of the same ID.
type Instance struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Tenant   string   `json:"tenant"`
	SKU      string   `json:"sku"`
	Region   string   `json:"region"`
	Count    int      `json:"count"`
	Priority string   `json:"priority"`
	Grace    string   `json:"grace"`
	State    string   `json:"state"`
	Reason   string   `json:"reason"`
	Detail   string   `json:"detail"`
	Nodes    []string `json:"nodes"`
	// Evictions counts how often the instance lost its nodes.
	Evictions int        `json:"evictions"`
	CreatedAt *time.Time `json:"created_at"`
	StartedAt *time.Time `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at"`
	// EvictionDeadline is set while the instance is Preempted: when its
	// eviction notice ends and its nodes are taken back.
	EvictionDeadline *time.Time `json:"eviction_deadline"`
}

func newInstance(j *model.Job) Instance {
	st := &j.Status
	region := st.Region
	if len(j.Spec.Placement.Regions) > 0 {
		region = j.Spec.Placement.Regions[0]
	}
	out := Instance{ID: j.ID, Name: j.Spec.Name, Tenant: j.Spec.Tenant, SKU: j.Spec.Placement.SKU, Region: region,
		Count: j.Spec.Resources.InstanceCount, Priority: j.Spec.Priority.String(),
		Grace: j.Spec.Checkpoint.GraceOrDefault().String(), State: string(st.State), Reason: st.Reason, Detail: st.Detail,
		Nodes: []string{}, Evictions: st.Preemptions,
		CreatedAt: timePtr(st.SubmittedAt), StartedAt: timePtr(st.StartedAt), EndedAt: timePtr(st.EndedAt)}
	for _, a := range st.Allocations {
		out.Nodes = append(out.Nodes, a.Node)
	}
	if n := len(st.Attempts); st.State == model.StatePreempted && n > 0 {
		// Told to stop at StopOrdered (at its end, in records from before
		// it was kept); its processes run on, billed, until they stop.
		at := st.Attempts[n-1].StopOrdered
		if at.IsZero() {
			at = st.Attempts[n-1].Ended
		}
		if !at.IsZero() {
			out.EvictionDeadline = timePtr(at.Add(j.Spec.Checkpoint.GraceOrDefault()))
		}
	}
	return out
}

// parseInstance checks the body of POST /v1/instances field by field; the
// server checks the rest against the fleet.
func parseInstance(body []byte) (server.InstanceRequest, *Error) {
	var req wire.InstanceRequest
	if e := decodeStrict(body, &req); e != nil {
		return server.InstanceRequest{}, e
	}
	out := server.InstanceRequest{Name: req.Name, Tenant: req.Tenant, SKU: req.SKU, Region: req.Region, Count: 1, Wait: req.Wait}
	if req.Count != nil {
		out.Count = *req.Count
	}
	if req.Priority != "" {
		p, err := model.ParsePriority(req.Priority)
		if err != nil {
			return out, &Error{Code: codeInvalidSpec, Field: "priority", Message: err.Error()}
		}
		out.Priority = p
	}
	if req.Grace != "" {
		g, err := time.ParseDuration(req.Grace)
		if err != nil {
			return out, &Error{Code: codeInvalidSpec, Field: "grace",
				Message: "want a duration such as 30s or 2m, got " + strconv.Quote(req.Grace)}
		}
		out.Grace = g
	}
	return out, nil
}

func (h *handler) createInstance(w http.ResponseWriter, r *http.Request, p server.Principal) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	req, e := parseInstance(body)
	if e != nil {
		writeError(w, e.Code, e.Field, e.Message)
		return
	}
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	j, replayed, err := h.srv.CreateInstanceKeyed(r.Context(), p, key, req)
	if err != nil {
		if replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/instances/"+j.ID)
	writeJSON(w, created(w, replayed), newInstance(h.srv.ForViewer(p, j)))
}

func (h *handler) listInstances(w http.ResponseWriter, r *http.Request, p server.Principal) {
	q := r.URL.Query()
	all := false
	if v := q.Get("all"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, codeInvalidSpec, "all", "want true or false, got "+strconv.Quote(v))
			return
		}
		all = b
	}
	js, err := h.srv.Instances(r.Context(), p, q.Get("tenant"), all)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]Instance, len(js))
	for i, j := range js {
		out[i] = newInstance(h.srv.ForViewer(p, j))
	}
	writeJSON(w, http.StatusOK, map[string][]Instance{"instances": out})
}

func (h *handler) getInstance(w http.ResponseWriter, r *http.Request, p server.Principal) {
	j, err := h.srv.Instance(r.Context(), p, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newInstance(h.srv.ForViewer(p, j)))
}

func (h *handler) deleteInstance(w http.ResponseWriter, r *http.Request, p server.Principal) {
	j, err := h.srv.DeleteInstance(r.Context(), p, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newInstance(h.srv.ForViewer(p, j)))
}
