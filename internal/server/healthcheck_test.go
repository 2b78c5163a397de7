package server

import (
	"context"
	"errors"
	"testing"
)

// TestReportHealth: a failed check drains the node by health-check with
// its output on one line, a passing one resumes it; reports change no
// other drain; only the node's agent (or the administrator) reports.
func TestReportHealth(t *testing.T) {
	ctx := context.Background()
	srv, clock, must := labWithNodes(t)
	agent := Principal{Node: "h100-01"}
	drainOf := func(node string) *NodeDrain {
		rec, _, _ := srv.cache.node(node)
		return rec.Drain
	}
	report := func(p Principal, node string, healthy bool, detail string) bool {
		t.Helper()
		changed, err := srv.ReportHealth(ctx, p, node, healthy, detail)
		must(err)
		return changed
	}
	var e *Error
	if _, err := srv.ReportHealth(ctx, Principal{Node: "h100-02"}, "h100-01", false, "x"); !errors.As(err, &e) || e.Code != CodeForbidden {
		t.Errorf("another node's report: %v, want Forbidden", err)
	}
	if _, err := srv.ReportHealth(ctx, Principal{Tenant: "team"}, "h100-01", false, "x"); !errors.As(err, &e) || e.Code != CodeForbidden {
		t.Errorf("a tenant's report: %v, want Forbidden", err)
	}
	if _, err := srv.ReportHealth(ctx, admin, "h100-9", false, "x"); !errors.As(err, &e) || e.Code != CodeNotFound {
		t.Errorf("a report of no node: %v, want NotFound", err)
	}
	if report(agent, "h100-01", true, "") || drainOf("h100-01") != nil {
		t.Fatal("a passing check of a node in service changed it")
	}

	srv.noteFailure("h100-01", NodeFailure{Job: "j1", Tenant: "team", Attempt: 1, ExitCode: 1, At: clock.Now()})
	clock.Advance(1)
	if !report(agent, "h100-01", false, "exit status 1: GPU 0:\n\tuncorrectable ECC\x00") {
		t.Fatal("a failed check did not drain the node")
	}
	d := drainOf("h100-01")
	if d == nil || d.By != "health-check" || d.Reason != "health check failed: exit status 1: GPU 0: uncorrectable ECC" {
		t.Fatalf("drain %+v", d)
	}
	if got := autoDrained(t, srv, "h100-01"); got != 1 {
		t.Errorf("allot_node_auto_drained = %v while the health check holds it drained, want 1", got)
	}
	recs, _, err := srv.Audit(ctx, admin, AuditQuery{})
	must(err)
	if r := recs[len(recs)-1]; r.Actor != "node:h100-01" || r.Action != ActionNodeDrain {
		t.Errorf("audit %+v, want node.drain by node:h100-01", r)
	}
	if report(agent, "h100-01", false, "another text") || drainOf("h100-01").Reason != d.Reason {
		t.Error("a second failed check changed the drain")
	}
	clock.Advance(1)
	if !report(agent, "h100-01", true, "") || drainOf("h100-01") != nil {
		t.Fatalf("a passing check left the drain %+v", drainOf("h100-01"))
	}
	srv.beatsMu.Lock()
	ev := hostFailures(srv.failures["h100-01"], srv.resumed["h100-01"], clock.Now(), func(string) bool { return false })
	srv.beatsMu.Unlock()
	if len(ev.failures) != 0 {
		t.Errorf("failures from before the health check's resume still count: %+v", ev.failures)
	}

	// Others' drains stay as they are.
	_, err = srv.DrainNode(ctx, admin, "h100-02", "BIOS update")
	must(err)
	if report(Principal{Node: "h100-02"}, "h100-02", false, "x") || report(Principal{Node: "h100-02"}, "h100-02", true, "") {
		t.Error("a report changed the administrator's drain")
	}
	if d := drainOf("h100-02"); d == nil || d.By != "admin" {
		t.Errorf("the administrator's drain became %+v", d)
	}
	for i, tenant := range []string{"team", "rival", "team"} {
		srv.noteFailure("h100-03", NodeFailure{Job: string(rune('a' + i)), Tenant: tenant, Attempt: 1, ExitCode: 1, At: clock.Now()})
	}
	srv.drainIfFailing(ctx, "h100-03")
	if report(Principal{Node: "h100-03"}, "h100-03", true, "") {
		t.Error("a passing check ended the server's drain of a node that fails jobs")
	}
	if d := drainOf("h100-03"); d == nil || d.By != "server" {
		t.Errorf("the server's drain became %+v", d)
	}
}
