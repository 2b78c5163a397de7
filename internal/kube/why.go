package kube

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"sort"
	"time"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// whyIndex is what the last cycle knew of each job, by job ID, and which
// job each pod (namespace/name) is part of.
type whyIndex struct {
	jobs map[string]client.Why
	pods map[string]string
}

// publish records what the cycle decided, for Why.
func (c *Controller) publish(works []*work, pending map[string]sched.Pending, now time.Time) {
	idx := whyIndex{jobs: make(map[string]client.Why, len(works)), pods: map[string]string{}}
	for _, w := range works {
		y := client.Why{ID: w.id, State: "Pending", Reason: w.reason, Detail: w.why}
		if j := w.job; j != nil {
			y.State = string(j.Status.State)
			if p, ok := pending[w.id]; ok {
				y.Reason, y.Detail = p.Reason.String(), p.Detail
			}
			if j.Status.State.Holds() {
				y.Reason, y.Detail = "", ""
				y.RunningSince = client.Time{Time: j.Status.StartedAt}
				for i, a := range j.Status.Allocations {
					on := w.pods[i].Name + " on " + a.Node
					if len(a.GPUs) > 0 {
						on += " GPUs " + formatGPUs(a.GPUs)
					}
					if a.GPUMilli > 0 && a.GPUMilli < model.MilliPerGPU {
						on += " (" + formatMilli(a.GPUMilli) + " of the GPU)"
					}
					y.RunningOn = append(y.RunningOn, on)
				}
			}
		} else if p, ok := pending[w.id]; ok { // waits for its victims
			y.Reason, y.Detail = p.Reason.String(), p.Detail
		}
		idx.jobs[w.id] = y
		for _, p := range w.pods {
			idx.pods[podKey(p)] = w.id
		}
	}
	c.mu.Lock()
	c.why = idx
	c.mu.Unlock()
}

// Why answers 'allot job why' for a job or a pod: id is a job's ID
// (namespace/pod, or namespace/pod-group/NAME for a gang) or any pod's
// namespace/name. ok is false when the last cycle saw no such work.
func (c *Controller) Why(id string) (client.Why, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if j, ok := c.why.pods[id]; ok {
		id = j
	}
	y, ok := c.why.jobs[id]
	return y, ok
}

// Jobs lists what the last cycle saw, by ID.
func (c *Controller) Jobs() []client.Why {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]client.Why, 0, len(c.why.jobs))
	for _, y := range c.why.jobs {
		out = append(out, y)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// Handler serves the part of allot's API that explains pods:
// GET /v1/jobs/{id}/why, as the server answers it for its jobs, so that
// 'allot job why NAMESPACE/POD --server URL' works against the
// controller. Requests carry token as a bearer token.
func (c *Controller) Handler(token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jobs/{id}/why", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		y, ok := c.Why(id)
		if !ok {
			writeError(w, http.StatusNotFound, client.CodeNotFound, "no pod or pod group "+id+" of scheduler "+c.cfg.SchedulerName)
			return
		}
		writeJSON(w, http.StatusOK, y)
	})
	mux.HandleFunc("GET /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"jobs": []any{}})
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"cycles": c.Cycles(), "binds": c.Binds()})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		if r.URL.Path != "/healthz" && subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+token)) != 1 {
			writeError(w, http.StatusUnauthorized, client.CodeUnauthorized, "a valid token is required (the controller's DATA/admin-token)")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"code": code, "message": msg})
}
