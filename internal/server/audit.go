package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// The audit log.
//
// Every change an operator may later ask "who did that?" of is recorded as
// one store key under /audit/: the Clock's time in Unix nanoseconds (20
// digits) and a counter of this process (9 digits), so keys sort by time
// and a listing can start at --since without reading what came before.
// Nothing in the API writes, rewrites or deletes an audit key; the server
// only puts new ones, each conditioned on being absent.
//
// A quota request's creation, approval and denial and a quota edit are
// written in the same transaction as the change, so a change is never
// without its record. The hooks in other operations (tokens, reservations,
// policies, cancellations by someone other than the owner) write their
// record right after the change commits: a crash between the two loses the
// record, and a failed write is logged at error level.

const prefixAudit = "/audit/"

// Audit actions (docs/audit.md).
const (
	ActionQuotaRequest   = "quota.request"
	ActionQuotaApprove   = "quota.approve"
	ActionQuotaDeny      = "quota.deny"
	ActionQuotaSet       = "quota.set"
	ActionTokenCreate    = "token.create"
	ActionTokenRevoke    = "token.revoke"
	ActionReservationNew = "reservation.create"
	ActionReservationDel = "reservation.delete"
	ActionPolicyApply    = "policy.apply"
	ActionPolicyDelete   = "policy.delete"
	ActionJobCancel      = "job.cancel"
	ActionJobRequeue     = "job.requeue"
	ActionNodeDrain      = "node.drain"
	ActionNodeResume     = "node.resume"
	// Changes of a tenant's job or endpoint by someone else (the
	// administrator); the owner's own are not recorded.
	// (The endpoint.* actions are package endpoint's.)
	ActionJobHold    = "job.hold"
	ActionJobRelease = "job.release"
	ActionJobUpdate  = "job.update"
)

// AuditRecord is one entry of the audit log.
type AuditRecord struct {
	ID     string    `json:"id"` // the key after /audit/: sorts by time
	Time   time.Time `json:"time"`
	Actor  string    `json:"actor"`           // Principal.Name: a tenant, "admin", "node:NAME", "endpoint:NAME" or "server" (the server acting on its own)
	Token  string    `json:"token,omitempty"` // the name of the token that acted, when it has one
	Action string    `json:"action"`
	Object string    `json:"object"` // what was acted on: "quota-request/qr-…", "token/ab12…", …
	Detail string    `json:"detail,omitempty"`
}

// auditSeq numbers the records of this process: two in the same nanosecond
// of a frozen test clock still get distinct keys.
var auditSeq atomic.Uint64

// MaxAuditDetail bounds a record's detail.
const MaxAuditDetail = 1024

// auditEntry makes the record of p doing action on object now, and its key.
func (s *Server) auditEntry(p Principal, action, object, detail string) (string, []byte) {
	now := s.clock.Now().UTC()
	ns := max(now.UnixNano(), 0)
	id := fmt.Sprintf("%020d-%09d", ns, auditSeq.Add(1)%1_000_000_000)
	if len(detail) > MaxAuditDetail {
		detail = detail[:MaxAuditDetail]
	}
	actor := p.Name()
	if actor == "" {
		actor = "server"
	}
	v, _ := json.Marshal(AuditRecord{ID: id, Time: now, Actor: actor, Token: p.Token, Action: action, Object: object, Detail: detail})
	return prefixAudit + id, v
}

// auditTxn adds the record of p doing action on object to txn: the record
// is committed with the change or not at all.
func (s *Server) auditTxn(txn *store.Txn, p Principal, action, object, detail string) {
	key, v := s.auditEntry(p, action, object, detail)
	txn.If = append(txn.If, store.Absent(key))
	txn.Then = append(txn.Then, store.PutOp(key, v))
}

// audit records p doing action on object after the change committed; a
// failure is logged, not returned (the change stands).
func (s *Server) audit(ctx context.Context, p Principal, action, object, detail string) {
	key, v := s.auditEntry(p, action, object, detail)
	if _, err := s.st.Txn(context.WithoutCancel(ctx), store.Txn{If: []store.Cond{store.Absent(key)},
		Then: []store.Op{store.PutOp(key, v)}}); err != nil {
		s.log.Error("audit record lost", "action", action, "object", object, "actor", p.Name(), "err", err)
	}
}

// auditOther records p doing action on object of tenant owner when p is
// someone other than the owner (the administrator acting on a tenant's job
// or endpoint); the server acting for an endpoint, on its own replicas, is
// not recorded.
func (s *Server) auditOther(ctx context.Context, p Principal, owner, action, object, detail string) {
	if p.Tenant == owner || p.Endpoint != "" {
		return
	}
	s.audit(ctx, p, action, object, fmt.Sprintf("of tenant %s: %s", owner, detail))
}

// AuditQuery selects audit records: those at or after Since (zero: all),
// by Actor when it is not empty (a principal's name or a token's name), at
// most Limit of them (oldest first; 0 means DefaultAuditLimit).
type AuditQuery struct {
	Since time.Time
	Actor string
	Limit int
}

// Limits of an audit listing.
const (
	DefaultAuditLimit = 1000
	MaxAuditLimit     = 10000
)

// Audit lists the audit log as q asks, oldest first; more reports that
// records past the last one returned were left out (ask again with Since
// after its time).
func (s *Server) Audit(ctx context.Context, p Principal, q AuditQuery) (recs []AuditRecord, more bool, err error) {
	if !p.Admin || p.Endpoint != "" {
		return nil, false, refuse(CodeForbidden, "", "the audit log needs the admin token")
	}
	switch {
	case q.Limit == 0:
		q.Limit = DefaultAuditLimit
	case q.Limit < 0 || q.Limit > MaxAuditLimit:
		return nil, false, refuse(CodeInvalidSpec, "limit", "is %d, want 1 to %d", q.Limit, MaxAuditLimit)
	}
	after := ""
	if !q.Since.IsZero() {
		// Every key of an instant at or after Since sorts after this one.
		after = fmt.Sprintf("%s%020d", prefixAudit, max(q.Since.UnixNano(), 1)-1) + "~"
	}
	const page = 500
	var rev int64
	for {
		kvs, at, next, err := s.st.ListPage(ctx, prefixAudit, after, page, rev)
		if err != nil {
			return nil, false, fmt.Errorf("list audit log: %w", err)
		}
		rev = at
		for _, kv := range kvs {
			after = kv.Key
			var r AuditRecord
			if err := json.Unmarshal(kv.Value, &r); err != nil {
				s.log.Error("skipping unreadable audit record", "key", kv.Key, "err", err)
				continue
			}
			if q.Actor != "" && !strings.EqualFold(r.Actor, q.Actor) && !strings.EqualFold(r.Token, q.Actor) {
				continue
			}
			if len(recs) == q.Limit {
				return recs, true, nil
			}
			recs = append(recs, r)
		}
		if !next {
			return recs, false, nil
		}
	}
}

func tokenAuditText(t TokenInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s token", t.Kind)
	if t.Name != "" {
		fmt.Fprintf(&b, " %q", t.Name)
	}
	switch {
	case t.Tenant != "":
		fmt.Fprintf(&b, " of tenant %s", t.Tenant)
	case t.Node != "":
		fmt.Fprintf(&b, " of node %s", t.Node)
	}
	if !t.ExpiresAt.IsZero() {
		fmt.Fprintf(&b, ", expires %s", t.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return b.String()
}

func reservationAuditText(r model.Reservation) string {
	span := func(t time.Time) string {
		if t.IsZero() {
			return "open"
		}
		return t.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%d × %s in %s for %s, %s to %s", r.Count, r.SKU, r.Region, r.Owner, span(r.Start), span(r.End))
}
