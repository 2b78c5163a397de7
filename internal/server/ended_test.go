package server

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/allot-dev/allot/internal/model"
)

// A job that ended is kept compact in the cache and read back from the
// store, yet job list (with each filter and as each principal) and job show
// answer as they did when the cache held it whole, before and after a
// restart.
func TestEndedJobsListAndShowAcrossRestart(t *testing.T) {
	h := newHarness(t)
	acme := Principal{Tenant: "acme"}
	canceled := h.submit(copilot, chat)
	h.clock.Advance(time.Second)
	running := h.submit(copilot, chat)
	other := h.submit(acme, `{name: train, tenant: acme, resources: {gpus_per_instance: 1, gpu_models: [H100]}, placement: {regions: [eastus]}}`)
	h.clock.Advance(time.Second)
	h.cycle()
	h.clock.Advance(time.Second)
	whole, err := h.srv.Cancel(t.Context(), admin, canceled.ID)
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Second)
	if _, err := h.srv.Cancel(t.Context(), admin, other.ID); err != nil {
		t.Fatal(err)
	}
	if ref, _, ok := h.srv.cache.job(canceled.ID); !ok || ref.job != nil {
		t.Fatalf("ended job cached whole (%v) or not at all (%v)", ref.job != nil, !ok)
	}
	if ref, _, _ := h.srv.cache.job(running.ID); ref.job == nil {
		t.Fatal("running job not cached whole")
	}
	same := cmpopts.EquateEmpty()
	if d := cmp.Diff(whole, h.job(canceled.ID), same); d != "" {
		t.Errorf("show of the ended job differs from the job as it ended (-ended +show):\n%s", d)
	}

	type view struct {
		p Principal
		f JobFilter
	}
	views := []view{
		{admin, JobFilter{}}, {admin, JobFilter{State: model.StateCanceled}}, {admin, JobFilter{State: model.StateRunning}},
		{admin, JobFilter{Tenant: "copilot"}}, {admin, JobFilter{Tenant: "acme", State: model.StateCanceled}},
		{copilot, JobFilter{}}, {copilot, JobFilter{State: model.StateCanceled}}, {acme, JobFilter{}},
	}
	read := func() (lists [][]*model.Job, shows []*model.Job, why Why) {
		for _, v := range views {
			lists = append(lists, mustJobs(t, h.srv, v.p, v.f))
		}
		for _, id := range []string{canceled.ID, running.ID, other.ID} {
			shows = append(shows, h.job(id))
		}
		if _, err := h.srv.Job(t.Context(), acme, canceled.ID); err == nil {
			t.Error("acme sees copilot's ended job")
		}
		return lists, shows, h.why(canceled.ID)
	}
	lists, shows, why := read()
	if n := len(lists[1]); n != 2 {
		t.Fatalf("%d canceled jobs listed, want 2", n)
	}
	if d := cmp.Diff(whole, lists[6][0], same); d != "" {
		t.Errorf("listed ended job differs from the job as it ended (-ended +listed):\n%s", d)
	}
	if lists[5][0].ID != running.ID || lists[5][1].ID != canceled.ID {
		t.Errorf("copilot's list not newest first: %s, %s", lists[5][0].ID, lists[5][1].ID)
	}
	h.restart()
	lists2, shows2, why2 := read()
	if d := cmp.Diff(lists, lists2, same); d != "" {
		t.Errorf("lists after the restart (-before +after):\n%s", d)
	}
	if d := cmp.Diff(shows, shows2, same); d != "" {
		t.Errorf("shows after the restart (-before +after):\n%s", d)
	}
	if why.Job.Status.Reason != why2.Job.Status.Reason || why2.Job.Status.State != model.StateCanceled {
		t.Errorf("why after the restart: %+v, before %+v", why2.Job.Status, why.Job.Status)
	}
	if ref, _, _ := h.srv.cache.job(canceled.ID); ref.job != nil {
		t.Error("ended job cached whole after the restart")
	}
	if got := h.srv.cache.stateCounts()[model.StateCanceled]; got != 2 {
		t.Errorf("%d canceled jobs counted after the restart, want 2", got)
	}
}
