package server

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// The order in which queued jobs start is the same whether or not the
// server restarted while they waited (issue 44: after a restart a
// lower-ordered job took the slot of a higher one). What orders the queue
// (class, the tenants' shares, priority value, submit time, ID) and what
// holds a job back (a requeue's state, back-offs) all live in the store.
func TestQueueOrderSurvivesRestart(t *testing.T) {
	starts := func(restart bool) []string {
		h := newHarness(t)
		// Fill eastus's H100 nodes for an hour.
		var fill []string
		for i := range 8 {
			fill = append(fill, h.submit(admin, fmt.Sprintf(`{name: fill-%d, tenant: research, duration: 1h, resources: {gpus_per_instance: 8, gpu_models: [H100]}, placement: {regions: [eastus]}}`, i)).ID)
		}
		h.cycle()
		// Queue work of three tenants, two classes and several priority
		// values, submitted a minute apart; one filler is requeued.
		docs := []string{
			`{name: q-a, tenant: research, duration: 20m, priority: standard, resources: {gpus_per_instance: 8, gpu_models: [H100]}, placement: {regions: [eastus]}}`,
			`{name: q-b, tenant: copilot, duration: 20m, priority: reserved, resources: {gpus_per_instance: 8, gpu_models: [H100]}, placement: {regions: [eastus]}}`,
			`{name: q-c, tenant: research, duration: 20m, priority: "standard:50", resources: {gpus_per_instance: 8, gpu_models: [H100]}, placement: {regions: [eastus]}}`,
			`{name: q-d, tenant: acme, duration: 20m, priority: standard, resources: {instance_count: 2, gpus_per_instance: 8, gpu_models: [H100]}, placement: {regions: [eastus], interconnect: infiniband}}`,
			`{name: q-e, tenant: copilot, duration: 20m, priority: standard, resources: {gpus_per_instance: 8, gpu_models: [H100]}, placement: {regions: [eastus]}}`,
			`{name: q-f, tenant: research, duration: 20m, priority: spot, resources: {gpus_per_instance: 8, gpu_models: [H100]}, placement: {regions: [eastus]}}`,
			`{name: q-g, tenant: acme, duration: 20m, priority: "standard:10", resources: {gpus_per_instance: 8, gpu_models: [H100]}, placement: {regions: [eastus]}}`,
		}
		for _, d := range docs {
			h.clock.Advance(time.Minute)
			h.submit(admin, d)
			h.cycle()
		}
		requeued := ""
		for _, id := range fill {
			if h.job(id).Status.State == model.StateRunning {
				requeued = id
				break
			}
		}
		if _, err := h.srv.Requeue(t.Context(), admin, requeued); err != nil {
			t.Fatal(err)
		}
		h.cycle()
		if restart {
			h.restart()
		}
		var order []string
		seen := map[string]bool{}
		for range 30 {
			h.clock.Advance(5 * time.Minute)
			h.cycle()
			jobs := mustJobs(t, h.srv, admin, JobFilter{})
			slices.SortFunc(jobs, func(a, b *model.Job) int { return a.Status.StartedAt.Compare(b.Status.StartedAt) })
			for _, j := range jobs {
				if n := len(j.Status.Attempts); n > 0 && !seen[j.ID+"/"+fmt.Sprint(n)] && j.Spec.Name[0] == 'q' || j.ID == requeued && n > 1 && !seen[j.ID+"/"+fmt.Sprint(n)] {
					seen[j.ID+"/"+fmt.Sprint(n)] = true
					order = append(order, fmt.Sprintf("%s@%s", j.Spec.Name, j.Status.Attempts[n-1].Started.Sub(t0)))
				}
			}
		}
		return order
	}
	want, got := starts(false), starts(true)
	if len(want) < 8 {
		t.Fatalf("only %d of 8 queued jobs started: %v", len(want), want)
	}
	if !slices.Equal(got, want) {
		t.Errorf("after a restart the queued jobs started as\n  %v\nwithout one as\n  %v", got, want)
	}
	t.Logf("start order: %v", want)
}
