package server

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestAppendLogOffsets: a chunk shipped with its offset is kept once when
// sent again or overlapping; a server that lost what came before (a new
// leader: a fresh log book) asks for it and gets the whole log back; with
// Skip it takes the chunk and says what it lacks; a rank the job does not
// have is refused naming the field.
func TestAppendLogOffsets(t *testing.T) {
	h := newHarness(t)
	j := h.submit(copilot, chat)
	h.clock.Advance(time.Second)
	h.cycle()
	ctx := t.Context()
	app := func(src *LogSource, chunk string) int64 {
		t.Helper()
		next, err := h.srv.AppendLog(ctx, admin, j.ID, 1, []byte(chunk), src)
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	log := func() string {
		t.Helper()
		c, err := h.srv.Log(ctx, admin, j.ID, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		return string(c.Data)
	}
	for _, step := range []struct {
		off  int64
		data string
		next int64
		log  string
	}{
		{0, "a\nb\n", 4, "a\nb\n"},
		{0, "a\nb\n", 4, "a\nb\n"},    // sent again after a lost answer
		{2, "b\nc\n", 6, "a\nb\nc\n"}, // overlapping
		{9, "x\n", 6, "a\nb\nc\n"},    // past what the server has: asks from 6
		{6, "d\n", 8, "a\nb\nc\nd\n"}, // the rest
	} {
		if got := app(&LogSource{Offset: step.off}, step.data); got != step.next || log() != step.log {
			t.Fatalf("chunk %q at %d: next %d, log %q; want %d, %q", step.data, step.off, got, log(), step.next, step.log)
		}
	}
	if app(nil, "allot: own line\n") != 0 || !strings.HasSuffix(log(), "d\nallot: own line\n") {
		t.Fatalf("a line without offset: log %q", log())
	}

	h.srv.logs = newLogBook(DefaultLogMemory) // another server leads: what this one held is gone
	if got := app(&LogSource{Offset: 8}, "e\n"); got != 0 || log() != "" {
		t.Fatalf("new leader: next %d, log %q; want 0 and nothing", got, log())
	}
	if got := app(&LogSource{Offset: 0}, "a\nb\nc\nd\ne\n"); got != 10 || log() != "a\nb\nc\nd\ne\n" {
		t.Fatalf("shipped again: next %d, log %q", got, log())
	}

	h.srv.logs = newLogBook(DefaultLogMemory)
	if got := app(&LogSource{Offset: 8, Skip: true}, "e\n"); got != 10 ||
		log() != "[allot: 8 bytes of rank 0's log are not kept here; the node keeps the whole file]\ne\n" {
		t.Fatalf("skip: next %d, log %q", got, log())
	}

	_, err := h.srv.AppendLog(ctx, admin, j.ID, 1, []byte("x\n"), &LogSource{Rank: 1})
	var se *Error
	if !errors.As(err, &se) || se.Code != CodeInvalidSpec || se.Field != "rank" {
		t.Fatalf("rank 1 of a one-instance job: %v", err)
	}
	// A node token ships only the ranks that run on its node.
	g := h.submit(admin, `{name: g, tenant: copilot, resources: {instance_count: 2, gpus_per_instance: 8, gpu_models: [H100]}, placement: {regions: [eastus]}}`)
	h.clock.Advance(time.Second)
	h.cycle()
	nodes := h.job(g.ID).Status.Attempts[0].Nodes
	if len(nodes) != 2 || nodes[0] == nodes[1] {
		t.Fatalf("gang on %v, want two nodes", nodes)
	}
	if _, err := h.srv.AppendLog(ctx, Principal{Node: nodes[1]}, g.ID, 1, []byte("r1\n"), &LogSource{Rank: 1}); err != nil {
		t.Fatalf("node %s, its own rank 1: %v", nodes[1], err)
	}
	_, err = h.srv.AppendLog(ctx, Principal{Node: nodes[1]}, g.ID, 1, []byte("r0\n"), &LogSource{Rank: 0})
	if !errors.As(err, &se) || se.Code != CodeForbidden || se.Field != "rank" {
		t.Fatalf("node %s claiming rank 0, which runs on %s: %v", nodes[1], nodes[0], err)
	}
}

// In the log of a gang each line is labeled with its rank, and a line one
// rank left unfinished is ended before another rank's; the agent's own
// lines are not labeled. A job of one instance is kept as written.
func TestGangLogLabelsRanks(t *testing.T) {
	h := newHarness(t)
	g := h.submit(admin, `{name: g, tenant: copilot, resources: {instance_count: 2, gpus_per_instance: 8, gpu_models: [H100]}, placement: {regions: [eastus]}}`)
	one := h.submit(copilot, chat)
	h.clock.Advance(time.Second)
	h.cycle()
	ctx := t.Context()
	var off [2]int64
	for _, c := range []struct {
		rank  int // -1: the agent's own line
		chunk string
	}{{1, "a\nb"}, {0, "c\n"}, {1, "d\n"}, {0, "e"}, {0, "f\ng\n"}, {-1, "allot: rank 0 on node: exited 0\n"}} {
		var src *LogSource
		if c.rank >= 0 {
			src = &LogSource{Rank: c.rank, Offset: off[c.rank]}
			off[c.rank] += int64(len(c.chunk))
		}
		if _, err := h.srv.AppendLog(ctx, admin, g.ID, 1, []byte(c.chunk), src); err != nil {
			t.Fatal(err)
		}
	}
	got, err := h.srv.Log(ctx, admin, g.ID, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "[rank 1] a\n[rank 1] b\n[rank 0] c\n[rank 1] d\n[rank 0] ef\n[rank 0] g\nallot: rank 0 on node: exited 0\n"
	if string(got.Data) != want {
		t.Errorf("gang log %q, want %q", got.Data, want)
	}
	if _, err := h.srv.AppendLog(ctx, admin, one.ID, 1, []byte("x\ny"), &LogSource{}); err != nil {
		t.Fatal(err)
	}
	if got, err := h.srv.Log(ctx, admin, one.ID, 1, 0); err != nil || string(got.Data) != "x\ny" {
		t.Errorf("one instance's log %q (%v), want it as written", got.Data, err)
	}
}

// Over its limit the log book drops whole logs of the tenant holding the
// most, least recently written first, never the one just written: a tenant
// whose jobs print a MiB each, again and again, neither grows the server's
// memory past the limit nor pushes out another tenant's log.
func TestLogMemoryBound(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	var loud []string
	for i := range 6 {
		loud = append(loud, h.submit(admin, fmt.Sprintf(`{name: loud%d, tenant: hobbyist, resources: {gpus_per_instance: 1, gpu_models: [T4]}}`, i)).ID)
	}
	quiet := h.submit(copilot, chat)
	h.clock.Advance(time.Second)
	h.cycle()
	const limit = 3 << 20
	h.srv.logs = newLogBook(limit)
	app := func(id string, chunk []byte) {
		t.Helper()
		if _, err := h.srv.AppendLog(ctx, admin, id, 1, chunk, nil); err != nil {
			t.Fatal(err)
		}
	}
	app(quiet.ID, []byte("ready\n"))
	mib := bytes.Repeat([]byte("x"), 1<<20)
	for _, id := range loud {
		app(id, mib)
		if h.srv.logs.bytes > limit {
			t.Fatalf("after %s: %d bytes kept, over the limit of %d", id, h.srv.logs.bytes, limit)
		}
	}
	logOf := func(id string) string {
		t.Helper()
		c, err := h.srv.Log(ctx, admin, id, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		return string(c.Data)
	}
	if got := logOf(quiet.ID); got != "ready\n" {
		t.Errorf("the quiet tenant's log %q, want it kept", got)
	}
	for i, id := range loud {
		kept := len(logOf(id)) == 1<<20
		if want := i >= len(loud)-2; kept != want { // room for two MiB beside the quiet log
			t.Errorf("loud%d kept %v, want %v", i, kept, want)
		}
	}
	if got := counter(t, h.srv, "allot_logs_dropped_total"); got != 4 {
		t.Errorf("allot_logs_dropped_total %v, want 4", got)
	}
}
