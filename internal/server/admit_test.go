package server

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
)

// TestSubmitNamesAUsableReservation: a job naming a reservation its tenant
// does not own, or one that has ended, is refused at submit, as sbatch
// refuses an invalid --reservation; another tenant's name reads as a
// missing one. A reservation whose window lies ahead is usable.
func TestSubmitNamesAUsableReservation(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	short := model.Reservation{Name: "short", Owner: "acme", SKU: "ND96-A100x8-IB", Region: "westus", Count: 1, End: t0.Add(time.Hour)}
	if _, _, err := h.srv.CreateReservation(ctx, admin, short); err != nil {
		t.Fatal(err)
	}
	job := func(tenant, res string) model.JobSpec {
		specs, err := spec.ParseJobs("t", []byte(fmt.Sprintf(`{name: r, tenant: %s, resources: {gpus_per_instance: 8, gpu_models: [A100]}, placement: {reservation: %s}}`, tenant, res)), nil)
		if err != nil {
			t.Fatal(err)
		}
		return specs[0]
	}
	acme := Principal{Tenant: "acme"}
	for _, tc := range []struct {
		p           Principal
		tenant, res string
		want        string // "" admitted
	}{
		{acme, "acme", "acme-a100-2027", ""},
		{acme, "acme", "short", ""},
		{acme, "acme", "acme-a100-202", `tenant acme has no reservation "acme-a100-202" (did you mean acme-a100-2027?)`},
		{copilot, "copilot", "globex-h100", `tenant copilot has no reservation "globex-h100" ('allot reservation create' makes one)`},
		{admin, "globex", "acme-a100-2027", `tenant globex has no reservation "acme-a100-2027" (it has globex-h100)`},
	} {
		_, err := h.srv.Submit(ctx, tc.p, job(tc.tenant, tc.res))
		var se *Error
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s naming %s: %v", tc.tenant, tc.res, err)
		case tc.want != "" && (!errors.As(err, &se) || se.Code != CodeInvalidSpec || se.Field != "placement.reservation" || se.Msg != tc.want):
			t.Errorf("%s naming %s: %v, want InvalidSpec on placement.reservation: %s", tc.tenant, tc.res, err, tc.want)
		}
	}
	h.clock.Advance(2 * time.Hour)
	if _, err := h.srv.Submit(ctx, acme, job("acme", "short")); err == nil || !strings.Contains(err.Error(), `reservation "short" ended at 2026-06-01T13:00:00Z`) {
		t.Errorf("naming an ended reservation: %v", err)
	}
}

// TestDeleteReservationInUse: a reservation that jobs not ended name is
// not deleted (they would wait for it forever); once they end, it is.
func TestDeleteReservationInUse(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	acme := Principal{Tenant: "acme"}
	r := model.Reservation{Name: "mine", Owner: "acme", SKU: "ND96-A100x8-IB", Region: "westus", Count: 1,
		Start: t0.Add(time.Hour), End: t0.Add(3 * time.Hour)}
	if _, _, err := h.srv.CreateReservation(ctx, admin, r); err != nil {
		t.Fatal(err)
	}
	j := h.submit(acme, `{name: inside, tenant: acme, resources: {gpus_per_instance: 8, gpu_models: [A100]}, placement: {reservation: mine}}`)
	h.cycle()
	err := h.srv.DeleteReservation(ctx, acme, "mine")
	if !isCode(err, CodeConflict) || !strings.Contains(err.Error(), `reservation "mine" is named by 1 job not ended (`+j.ID+`)`) {
		t.Fatalf("delete with a job waiting for it: %v", err)
	}
	if _, err := h.srv.Cancel(ctx, acme, j.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.DeleteReservation(ctx, acme, "mine"); err != nil {
		t.Fatalf("delete once the job ended: %v", err)
	}
}

// TestSubmitRefusesBadElastic: an elastic job that can never run as
// written is refused at submit with the field at fault: a range that runs
// backwards, a step that does not divide it, a fraction of a GPU, and a
// minimum larger than the reservation it names can hold (acme-a100-2027
// holds 2 nodes of 8 A100: two instances of 8 GPUs, four of 4).
func TestSubmitRefusesBadElastic(t *testing.T) {
	h := newHarness(t)
	acme := Principal{Tenant: "acme"}
	elastic := func(minN, maxN, step, gpus int, milli int64, res string) model.JobSpec {
		return model.JobSpec{Name: "e", Tenant: "acme", Command: []string{"train"}, Priority: model.Priority{Class: model.ClassStandard},
			Resources: model.Resources{InstanceCount: minN, GPUsPerInstance: gpus, GPUMilli: milli, GPUModels: []string{"A100"}},
			Placement: model.Placement{Reservation: res},
			Elastic:   &model.Elastic{MinInstances: minN, MaxInstances: maxN, Step: step}}
	}
	for _, tc := range []struct {
		name  string
		spec  model.JobSpec
		field string
		msg   string // "" admitted
	}{
		{"min over max", elastic(4, 2, 0, 8, 0, ""), "elastic.max_instances", "must be between min_instances (4) and 4096, got 2"},
		{"step not dividing", elastic(2, 7, 2, 8, 0, ""), "elastic.step", "2 does not divide max_instances - min_instances (7 - 2 = 5)"},
		{"fraction of a GPU", elastic(1, 2, 0, 1, 500, ""), "elastic", "an elastic job takes whole GPUs"},
		{"minimum over the reservation", elastic(3, 4, 0, 8, 0, "acme-a100-2027"), "elastic.min_instances",
			`reservation "acme-a100-2027" holds 2×ND96-A100x8-IB (8 GPUs a node), room for 2 instances of 8 GPUs, and the elastic job needs 3 to start`},
		{"minimum the reservation holds, maximum above", elastic(2, 6, 0, 8, 0, "acme-a100-2027"), "", ""},
		{"smaller instances fit more a node", elastic(4, 8, 0, 4, 0, "acme-a100-2027"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.srv.Submit(t.Context(), acme, tc.spec)
			var se *Error
			switch {
			case tc.msg == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.msg != "" && (!errors.As(err, &se) || se.Field != tc.field || !strings.Contains(se.Msg, tc.msg)):
				t.Errorf("error %v, want one on %s: %s", err, tc.field, tc.msg)
			}
		})
	}
}
