package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// A submit may carry a client's idempotency key (HTTP's Idempotency-Key).
// The first submit with a key stores, in the same transaction as its jobs,
// a record of the key, the request and the jobs' IDs; a later submit with
// the key, by the same principal within IdempotencyTTL, stores nothing and
// returns those jobs, or is refused when it asks for something else. A
// client that sent a submit and got no answer (a dropped connection, a
// leader failing, an unavailable store) can therefore send it again
// without making a second job: the transaction either committed both the
// jobs and the record, or neither.
const (
	// IdempotencyTTL is how long a key stays bound to its jobs; after it a
	// submit with the key makes new ones.
	IdempotencyTTL = 24 * time.Hour
	// MaxIdempotencyKey is the longest key accepted, in bytes.
	MaxIdempotencyKey = 255
	// IdempotencyField names the key in refusals: the HTTP header.
	IdempotencyField = "Idempotency-Key"
)

// prefixIdempotency holds the records, one per principal and key, under
// the SHA-256 of both (a key is the client's text; its hash bounds the
// store key and keeps it out of listings).
const prefixIdempotency = "/idempotency/"

// idemRecord is the stored record of a keyed submit.
type idemRecord struct {
	Jobs    []string  `json:"jobs"`
	Request string    `json:"request"` // SHA-256 of the specs submitted
	At      time.Time `json:"at"`
}

// CheckIdempotencyKey refuses a key that is empty, longer than
// MaxIdempotencyKey or holds anything but printable ASCII (what an HTTP
// header may carry unquoted).
func CheckIdempotencyKey(key string) error {
	if key == "" || len(key) > MaxIdempotencyKey {
		return refuse(CodeInvalidSpec, IdempotencyField, "the key must hold 1 to %d characters, not %d", MaxIdempotencyKey, len(key))
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return refuse(CodeInvalidSpec, IdempotencyField, "the key may hold printable ASCII only; byte %d is %#x", i, c)
		}
	}
	return nil
}

// idemClaim is a keyed submit's claim on its key: the condition and the
// put that the submit's transaction carries.
type idemClaim struct {
	key     string // store key
	request string // the specs' hash
	cond    store.Cond
	at      time.Time
}

// claimKey looks key up for p. With no key it returns nil, nil, nil: the
// submit is not keyed. With a key already bound, within the TTL, to the
// same specs it returns the jobs it made (replay); bound to other specs, a
// Conflict refusal. Otherwise it returns the claim the submit's
// transaction must carry.
func (s *Server) claimKey(ctx context.Context, p Principal, key string, specs []model.JobSpec, now time.Time) (*idemClaim, []*model.Job, error) {
	if key == "" {
		return nil, nil, nil
	}
	if err := CheckIdempotencyKey(key); err != nil {
		return nil, nil, err
	}
	body, err := json.Marshal(specs)
	if err != nil {
		return nil, nil, fmt.Errorf("hash the request: %w", err)
	}
	h := sha256.Sum256(body)
	k := sha256.Sum256([]byte(p.Name() + "\n" + key))
	c := &idemClaim{key: prefixIdempotency + hex.EncodeToString(k[:]), request: hex.EncodeToString(h[:]), at: now}
	kv, err := s.st.Get(ctx, c.key)
	if errors.Is(err, store.ErrNotFound) {
		c.cond = store.Absent(c.key)
		return c, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read idempotency key: %w", err)
	}
	var rec idemRecord
	if err := json.Unmarshal(kv.Value, &rec); err != nil {
		return nil, nil, fmt.Errorf("decode idempotency record %s: %w", c.key, err)
	}
	if !now.Before(rec.At.Add(IdempotencyTTL)) {
		c.cond = store.ModRevIs(c.key, kv.ModRev) // expired: the key is free again
		return c, nil, nil
	}
	if rec.Request != c.request {
		return nil, nil, refuse(CodeConflict, IdempotencyField,
			"the key was used at %s for a different request; use a new key for a new submit",
			rec.At.UTC().Format(time.RFC3339))
	}
	jobs := make([]*model.Job, len(rec.Jobs))
	for i, id := range rec.Jobs {
		// From the store, not the cache: a server that took over from the
		// one that stored the jobs may not have seen them yet.
		kv, err := s.st.Get(ctx, prefixJobs+id)
		if err != nil {
			return nil, nil, fmt.Errorf("read job %s of idempotency key: %w", id, err)
		}
		if jobs[i], err = decodeJob(kv.Value); err != nil {
			return nil, nil, fmt.Errorf("decode job %s: %w", id, err)
		}
	}
	return nil, jobs, nil
}

// replay answers a keyed submit whose claim was lost: a concurrent submit
// with the key committed first. It returns what that one made, or the
// refusal claimKey gives when it asked for something else.
func (s *Server) replay(ctx context.Context, p Principal, key string, specs []model.JobSpec, now time.Time) ([]*model.Job, error) {
	_, prior, err := s.claimKey(ctx, p, key, specs, now)
	if err == nil && prior == nil {
		err = fmt.Errorf("idempotency key changed twice during one submit; send it again: %w", store.ErrUnavailable)
	}
	return prior, err
}

// bind adds the claim to txn: the key's condition and its record naming
// jobs. A nil claim adds nothing.
func (c *idemClaim) bind(txn *store.Txn, jobs []*model.Job) {
	if c == nil {
		return
	}
	rec := idemRecord{Request: c.request, At: c.at, Jobs: make([]string, len(jobs))}
	for i, j := range jobs {
		rec.Jobs[i] = j.ID
	}
	b, _ := json.Marshal(rec) // strings and a time: cannot fail
	txn.If = append(txn.If, c.cond)
	txn.Then = append(txn.Then, store.PutOp(c.key, b))
}

// lost reports whether err is the claim's condition failing: another
// submit with the key committed first.
func (c *idemClaim) lost(err error) bool {
	var ce *store.ConflictError
	return c != nil && errors.As(err, &ce) && ce.Key == c.key
}
