package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/store"
)

// TestSubmitIdempotent checks that a submit repeating an idempotency key
// returns the job the first one made and stores nothing, across a
// restart; that the key is refused for another spec, is the principal's
// own, and is free again after IdempotencyTTL; and the same for a batch.
func TestSubmitIdempotent(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	spec := batchSpecs(t, chat)[0]
	j1, replayed, err := h.srv.SubmitKeyed(ctx, copilot, "k1", spec)
	if err != nil || replayed {
		t.Fatalf("first submit: replayed %v, %v", replayed, err)
	}
	h.restart() // the record is in the store, not in memory
	j2, replayed, err := h.srv.SubmitKeyed(ctx, copilot, "k1", spec)
	if err != nil || !replayed || j2.ID != j1.ID {
		t.Fatalf("repeat: job %v replayed %v, %v; want %s replayed", j2, replayed, err, j1.ID)
	}
	if n := len(mustJobs(t, h.srv, admin, JobFilter{})); n != 1 {
		t.Fatalf("%d jobs after a repeated key, want 1", n)
	}

	other := spec
	other.Name = "chat-2"
	_, _, err = h.srv.SubmitKeyed(ctx, copilot, "k1", other)
	var se *Error
	if !errors.As(err, &se) || se.Code != CodeConflict || se.Field != IdempotencyField {
		t.Fatalf("the key with another spec: %v, want Conflict naming %s", err, IdempotencyField)
	}
	if j, replayed, err := h.srv.SubmitKeyed(ctx, admin, "k1", spec); err != nil || replayed || j.ID == j1.ID {
		t.Fatalf("another principal's k1: replayed %v, %v; want a new job", replayed, err)
	}
	h.clock.Advance(IdempotencyTTL)
	j3, replayed, err := h.srv.SubmitKeyed(ctx, copilot, "k1", other)
	if err != nil || replayed || j3.ID == j1.ID {
		t.Fatalf("after the TTL: replayed %v, %v; want a new job", replayed, err)
	}
	if j, replayed, err := h.srv.SubmitKeyed(ctx, copilot, "k1", other); err != nil || !replayed || j.ID != j3.ID {
		t.Fatalf("the renewed key: %v replayed %v, %v; want %s", j, replayed, err, j3.ID)
	}

	batch := batchSpecs(t, "name: sweep\ntenant: copilot\narray: 0-2\nresources: {gpu_milli: 100, gpu_models: [T4]}\n")
	b1, replayed, err := h.srv.SubmitBatchKeyed(ctx, copilot, "b", batch)
	if err != nil || replayed || len(b1) != 3 {
		t.Fatalf("batch: %d jobs, replayed %v, %v", len(b1), replayed, err)
	}
	b2, replayed, err := h.srv.SubmitBatchKeyed(ctx, copilot, "b", batch)
	if err != nil || !replayed || len(b2) != 3 {
		t.Fatalf("repeated batch: %d jobs, replayed %v, %v", len(b2), replayed, err)
	}
	for i := range b1 {
		if b2[i].ID != b1[i].ID {
			t.Errorf("repeated batch job %d is %s, want %s", i, b2[i].ID, b1[i].ID)
		}
	}
	if n := len(mustJobs(t, h.srv, admin, JobFilter{})); n != 6 {
		t.Fatalf("%d jobs, want 6 (chat, admin's chat, chat-2, sweep ×3)", n)
	}

	for _, bad := range []string{strings.Repeat("k", MaxIdempotencyKey+1), "tab\there", "ключ"} {
		_, _, err := h.srv.SubmitKeyed(ctx, copilot, bad, spec)
		if !errors.As(err, &se) || se.Code != CodeInvalidSpec || se.Field != IdempotencyField {
			t.Errorf("key %q: %v, want InvalidSpec naming %s", bad, err, IdempotencyField)
		}
	}
}

// TestSubmitIdempotentRace checks the path where two submits with one key
// both find it free: the one whose transaction loses answers with the
// winner's job. A store that hides the key from the first read forces the
// race; concurrent submits then check it under real timing.
func TestSubmitIdempotentRace(t *testing.T) {
	fleet, ten := servertest.Example(t)
	st := &hideKey{Store: servertest.Store(t, t.TempDir())}
	srv, err := New(t.Context(), Config{Store: st, Fleet: fleet, Tenancy: ten, Clock: NewManualClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	spec := batchSpecs(t, chat)[0]
	j1, _, err := srv.SubmitKeyed(t.Context(), copilot, "k", spec)
	if err != nil {
		t.Fatal(err)
	}
	st.hide.Store(true) // the next read of the key misses it
	j2, replayed, err := srv.SubmitKeyed(t.Context(), copilot, "k", spec)
	if err != nil || !replayed || j2.ID != j1.ID {
		t.Fatalf("lost claim: %v replayed %v, %v; want %s replayed", j2, replayed, err, j1.ID)
	}
	if st.hide.Load() {
		t.Fatal("the key was never read: the lost path did not run")
	}

	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			j, _, err := srv.SubmitKeyed(context.Background(), copilot, "race", spec)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = j.ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent submits with one key made jobs %v", ids)
		}
	}
	if n := len(mustJobs(t, srv, admin, JobFilter{})); n != 2 {
		t.Fatalf("%d jobs, want 2", n)
	}
}

// hideKey answers the first read of an idempotency record, once hide is
// set, as if it were absent.
type hideKey struct {
	store.Store
	hide atomic.Bool
}

func (s *hideKey) Get(ctx context.Context, key string) (store.KV, error) {
	if strings.HasPrefix(key, prefixIdempotency) && s.hide.CompareAndSwap(true, false) {
		return store.KV{}, store.ErrNotFound
	}
	return s.Store.Get(ctx, key)
}

// FuzzCheckIdempotencyKey: any header value is accepted or refused as
// InvalidSpec naming the header, never a panic, and only keys of 1 to
// MaxIdempotencyKey printable ASCII bytes are accepted.
func FuzzCheckIdempotencyKey(f *testing.F) {
	for _, s := range []string{"", "k", "deploy-42", "clé", "a\x00b", strings.Repeat("x", MaxIdempotencyKey)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := CheckIdempotencyKey(key)
		printable := key != "" && len(key) <= MaxIdempotencyKey &&
			!strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r > 0x7e })
		var se *Error
		switch {
		case err == nil && !printable:
			t.Fatalf("%q accepted", key)
		case err != nil && printable:
			t.Fatalf("%q refused: %v", key, err)
		case err != nil && (!errors.As(err, &se) || se.Code != CodeInvalidSpec || se.Field != IdempotencyField):
			t.Fatalf("%q: %v, want InvalidSpec naming %s", key, err, IdempotencyField)
		}
	})
}

// The leader deletes the records of keys that expired over
// idempotencyGrace ago, page after page and batch after batch, and keeps
// the others: a kept key still replays, a swept one makes a new job. A
// record written again since it was read is not deleted.
func TestSweepIdempotency(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	spec := batchSpecs(t, chat)[0]
	old, _, err := h.srv.SubmitKeyed(ctx, copilot, "old", spec)
	if err != nil {
		t.Fatal(err)
	}
	// Records as old as "old", straight into the store: more than a page
	// of the listing and many batches of deletes.
	stale, _ := json.Marshal(idemRecord{Jobs: []string{old.ID}, Request: "r", At: h.clock.Now()})
	for i := range 1203 {
		if _, err := h.st.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp(fmt.Sprintf("%sbulk-%04d", prefixIdempotency, i), stale)}}); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Advance(IdempotencyTTL)
	fresh, _, err := h.srv.SubmitKeyed(ctx, copilot, "fresh", spec)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := h.srv.sweepIdempotency(ctx, h.clock.Now()); err != nil || n != 0 {
		t.Fatalf("within the grace: %d deleted, %v; want none", n, err)
	}
	h.clock.Advance(idempotencyGrace)
	if n, err := h.srv.sweepIdempotency(ctx, h.clock.Now()); err != nil || n != 1204 {
		t.Fatalf("%d deleted, %v; want 1204 (old and the bulk)", n, err)
	}
	left, _, err := h.st.List(ctx, prefixIdempotency)
	if err != nil || len(left) != 1 {
		t.Fatalf("%d records left, %v; want fresh's alone", len(left), err)
	}
	if j, replayed, err := h.srv.SubmitKeyed(ctx, copilot, "fresh", spec); err != nil || !replayed || j.ID != fresh.ID {
		t.Fatalf("the kept key: %v replayed %v, %v; want %s", j, replayed, err, fresh.ID)
	}
	if j, replayed, err := h.srv.SubmitKeyed(ctx, copilot, "old", spec); err != nil || replayed || j.ID == old.ID {
		t.Fatalf("the swept key: replayed %v, %v; want a new job", replayed, err)
	}

	// A record rewritten after the read is left; the others go.
	var kvs []store.KV
	for _, k := range []string{"a", "b", "c"} {
		rev, err := h.st.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp(prefixIdempotency+k, stale)}})
		if err != nil {
			t.Fatal(err)
		}
		kvs = append(kvs, store.KV{Key: prefixIdempotency + k, ModRev: rev})
	}
	if _, err := h.st.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp(prefixIdempotency+"b", stale)}}); err != nil {
		t.Fatal(err)
	}
	if gone, _, err := h.srv.deleteRecords(ctx, kvs); err != nil || len(gone) != 2 {
		t.Fatalf("%d deleted, %v; want 2", len(gone), err)
	}
	if _, err := h.st.Get(ctx, prefixIdempotency+"b"); err != nil {
		t.Fatalf("the rewritten record: %v, want it kept", err)
	}
}
