package server

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/spec"
)

// fillEastT4 fills every eastus T4 GPU (10) with copilot jobs of one hour
// at priority value, and binds them.
func fillEastT4(h *harness, value int) {
	for i := range 10 {
		h.submit(copilot, fmt.Sprintf(`{name: fill-%d, tenant: copilot, duration: 1h, priority: "standard:%d",
			resources: {gpu_models: [T4]}, placement: {regions: [eastus]}}`, i, value))
	}
}

func nodeRegion(h *harness, j *model.Job) string {
	h.t.Helper()
	if len(j.Status.Allocations) == 0 {
		h.t.Fatalf("%s is %s (%s: %s), not bound", j.ID, j.Status.State, j.Status.Reason, j.Status.Detail)
	}
	for _, n := range h.srv.cfg.Fleet.Nodes {
		if n.Name == j.Status.Allocations[0].Node {
			return n.Region
		}
	}
	return ""
}

// TestSubmitChoosesRegion: eastus's T4s are busy for an hour, westus has
// free ones; a job allowed in both, with its data in eastus, goes west
// (an hour's wait outweighs one step of distance) and binds there, and
// why compares the two.
func TestSubmitChoosesRegion(t *testing.T) {
	h := newHarness(t)
	fillEastT4(h, 0)
	h.cycle()
	j := h.submit(copilot, `{name: x, tenant: copilot, duration: 30m, resources: {gpu_models: [T4]},
		placement: {regions: [eastus, westus], data_region: eastus}}`)
	if j.Status.Region != "westus" || !j.Status.RegionAt.Equal(t0) {
		t.Fatalf("chosen region %q at %v, want westus at submit", j.Status.Region, j.Status.RegionAt)
	}
	w, err := h.srv.Explain(t.Context(), copilot, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.EstimatedStart == nil || !w.EstimatedStart.Equal(t0) || !strings.Contains(w.Estimate.How, "core run forward") {
		t.Fatalf("estimate %v (%+v), want now", w.EstimatedStart, w.Estimate)
	}
	if len(w.Regions) != 2 || w.Regions[0].Region != "westus" || !w.Regions[0].Chosen || w.Regions[1].Chosen ||
		!w.Regions[1].Estimate.Start.Equal(t0.Add(time.Hour)) || w.Regions[0].Distance != 1 || w.Regions[1].Distance != 0 {
		t.Fatalf("regions %+v", w.Regions)
	}
	h.cycle()
	if r := nodeRegion(h, h.job(j.ID)); r != "westus" {
		t.Fatalf("bound in %s, want westus", r)
	}
	// The choice survives the store: a restart reads it back.
	h.restart()
	if got := h.job(j.ID); got.Status.Region != "westus" || !got.Status.RegionAt.Equal(t0) {
		t.Fatalf("after restart: region %q at %v", got.Status.Region, got.Status.RegionAt)
	}
}

// TestMoveWaiting: a job goes to eastus, near its data, while both regions
// are free; work of higher priority then takes every eastus T4. Before the
// threshold it stays; past it, it moves west, where it starts at once.
func TestMoveWaiting(t *testing.T) {
	h := newHarness(t)
	j := h.submit(copilot, `{name: x, tenant: copilot, duration: 30m, resources: {gpu_models: [T4]},
		placement: {regions: [eastus, westus], data_region: eastus}}`)
	if j.Status.Region != "eastus" {
		t.Fatalf("chosen %q, want eastus (free, and where the data is)", j.Status.Region)
	}
	fillEastT4(h, 10)
	h.cycle()
	if got := h.job(j.ID); got.Status.State != model.StateQueued {
		t.Fatalf("x is %s, want queued behind the higher priority work", got.Status.State)
	}
	h.clock.Advance(DefaultRegionMoveAfter - time.Minute)
	if n, err := h.srv.MoveWaiting(t.Context()); err != nil || n != 0 {
		t.Fatalf("before the threshold: moved %d, %v", n, err)
	}
	h.clock.Advance(2 * time.Minute)
	if n, err := h.srv.MoveWaiting(t.Context()); err != nil || n != 1 {
		t.Fatalf("past the threshold: moved %d, %v", n, err)
	}
	moved := h.job(j.ID)
	if moved.Status.Region != "westus" || !moved.Status.RegionAt.Equal(h.clock.Now()) {
		t.Fatalf("region %q at %v, want westus now", moved.Status.Region, moved.Status.RegionAt)
	}
	h.cycle()
	if r := nodeRegion(h, h.job(j.ID)); r != "westus" {
		t.Fatalf("bound in %s, want westus", r)
	}
	if n, err := h.srv.MoveWaiting(t.Context()); err != nil || n != 0 {
		t.Fatalf("a bound job moved: %d, %v", n, err)
	}
}

// TestSingleRegionNotPinned: a job that allows one region, or names none,
// gets no chosen region; the core keeps its own choice.
func TestSingleRegionNotPinned(t *testing.T) {
	h := newHarness(t)
	for _, doc := range []string{
		`{name: one, tenant: copilot, resources: {gpu_models: [T4]}, placement: {regions: [eastus]}}`,
		`{name: any, tenant: copilot, resources: {gpu_models: [T4]}, placement: {data_region: westus}}`,
		`{name: eu, tenant: copilot, resources: {gpu_models: [T4]}, placement: {regions: [eastus, westeurope], residency: eu}}`,
		// Only westus has nodes of 8 A100s.
		`{name: a100, tenant: copilot, resources: {gpus_per_instance: 8, gpu_models: [A100]}, placement: {regions: [eastus, westus]}}`,
	} {
		if j := h.submit(copilot, doc); j.Status.Region != "" {
			t.Errorf("%s: chosen region %q, want none", j.Spec.Name, j.Status.Region)
		}
	}
	// A job naming a reservation runs where the reservation is: eastus's
	// idle H100s are no choice for it, and why weighs no regions.
	globex := Principal{Tenant: "globex"}
	j := h.submit(globex, `{name: r, tenant: globex, resources: {gpus_per_instance: 8, gpu_models: [H100]},
		placement: {reservation: globex-h100, regions: [eastus, westeurope]}}`)
	if j.Status.Region != "" {
		t.Errorf("reservation job: chosen region %q, want none", j.Status.Region)
	}
	w, err := h.srv.Explain(t.Context(), globex, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Regions) != 0 {
		t.Errorf("reservation job: regions weighed %+v", w.Regions)
	}
}

// BenchmarkExplain times 'job why' of a job allowed in two regions on the
// example fleet, with eastus's T4s busy: its estimate and both regions.
func BenchmarkExplain(b *testing.B) {
	fleet, ten := servertest.Example(b)
	srv, err := New(b.Context(), Config{Store: servertest.Store(b, b.TempDir()), Fleet: fleet, Tenancy: ten,
		Clock: NewManualClock(t0)})
	if err != nil {
		b.Fatal(err)
	}
	submit := func(doc string) *model.Job {
		specs, err := spec.ParseJobs("bench", []byte(doc), nil)
		if err != nil {
			b.Fatal(err)
		}
		j, err := srv.Submit(b.Context(), copilot, specs[0])
		if err != nil {
			b.Fatal(err)
		}
		return j
	}
	for i := range 10 {
		submit(fmt.Sprintf(`{name: fill-%d, tenant: copilot, duration: 1h, resources: {gpu_models: [T4]}, placement: {regions: [eastus]}}`, i))
	}
	if err := srv.Cycle(b.Context()); err != nil {
		b.Fatal(err)
	}
	j := submit(`{name: x, tenant: copilot, duration: 30m, resources: {gpu_models: [T4]},
		placement: {regions: [eastus, westus], data_region: eastus}}`)
	for b.Loop() {
		if w, err := srv.Explain(b.Context(), copilot, j.ID); err != nil || len(w.Regions) != 2 || w.EstimatedStart == nil {
			b.Fatal(err, w.Regions)
		}
	}
}

// TestBatchChoosesRegionOnce: the members of an array alike but for their
// index cost one region choice (one forecast per region), not one each,
// and all go where it chose.
func TestBatchChoosesRegionOnce(t *testing.T) {
	var log bytes.Buffer
	fleet, ten := servertest.Example(t)
	srv, err := New(t.Context(), Config{Store: servertest.Store(t, t.TempDir()), Fleet: fleet, Tenancy: ten,
		Clock: NewManualClock(t0), Logger: slog.New(slog.NewTextHandler(&log, nil)), CheckIncremental: true})
	if err != nil {
		t.Fatal(err)
	}
	specs := batchSpecs(t, `{name: sweep, tenant: copilot, array: 0-9, duration: 30m, resources: {gpu_models: [T4]},
		placement: {regions: [eastus, westus], data_region: eastus}}`)
	jobs, err := srv.SubmitBatch(t.Context(), copilot, specs)
	if err != nil || len(jobs) != 10 {
		t.Fatalf("batch: %d jobs, %v", len(jobs), err)
	}
	for _, j := range jobs {
		if j.Status.Region != jobs[0].Status.Region || j.Status.Region == "" {
			t.Fatalf("job %s chose %q, job %s %q: want one region for the array", j.ID, j.Status.Region, jobs[0].ID,
				jobs[0].Status.Region)
		}
	}
	if n := strings.Count(log.String(), "job region chosen"); n != 1 {
		t.Fatalf("%d region choices logged for an array of 10, want 1:\n%s", n, log.String())
	}
}
