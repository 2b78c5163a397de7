package server

import (
	"fmt"
	"slices"
	"strings"

	"github.com/allot-dev/allot/internal/model"
)

// explainCheckpoint says what queued job j resumes from and where: every
// rank from its part only when each rank gets the node of its part back,
// else every rank from the beginning (model.JobStatus.ResumeOf). It names
// the part nodes that cannot take the job now and why; other tenants'
// work on them is not named. Empty when the job has no checkpoint.
func explainCheckpoint(w *world, holding []*model.Job, j *model.Job) string {
	st := &j.Status
	if st.CheckpointPath == "" {
		return ""
	}
	what := st.CheckpointPath
	if len(st.CheckpointParts) > 0 {
		what = fmt.Sprintf("%s, %d parts", st.CheckpointParts[0].Step, len(st.CheckpointParts))
	}
	nodes := st.CheckpointNodes()
	if nodes == nil {
		return what + ": every node reaches it, so every rank resumes wherever it runs"
	}
	busy := map[string]bool{}
	for _, h := range holding {
		if h.ID == j.ID {
			continue
		}
		for _, a := range h.Status.Allocations {
			busy[a.Node] = true
		}
	}
	var away []string
	for r, n := range nodes {
		if n == "" || slices.ContainsFunc(away, func(s string) bool { return strings.HasPrefix(s, n+" ") }) {
			continue
		}
		who := fmt.Sprintf("rank %d's", r)
		if len(st.CheckpointParts) == 0 {
			who = "its"
		}
		node, ok := w.nodes[n]
		switch {
		case !ok:
			away = append(away, fmt.Sprintf("%s (%s part) is no longer in the fleet", n, who))
		case node.Health != model.NodeReady:
			away = append(away, fmt.Sprintf("%s (%s part) is %s", n, who, node.Health))
		case busy[n]:
			away = append(away, fmt.Sprintf("%s (%s part) is in use by other work", n, who))
		}
	}
	on := strings.Join(slices.Compact(slices.DeleteFunc(slices.Clone(nodes), func(n string) bool { return n == "" })), ", ")
	if len(away) == 0 {
		return fmt.Sprintf("%s on %s, which may take it now: every rank resumes there", what, on)
	}
	return fmt.Sprintf("%s on %s; %s: placed elsewhere, every rank starts from the beginning (placement prefers these nodes while they may take it)",
		what, on, strings.Join(away, "; "))
}
