package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// Quota requests and quota edits.
//
// The tenants file sets each tenant's quotas at start. After that a quota
// changes only through an approved request or an administrator's edit:
// either writes /quotas/<tenant>/<region>/<series>, which replaces the
// file's quota of that tenant, region and series in the tenancy the core
// sees (or adds one), and survives restarts. A request asks for the quota
// it wants (the new total, not an increase) and waits, Pending, under
// /quota-requests/<id> until an administrator approves or denies it; a
// tenant cannot decide its own. Each of these changes is written with its
// audit record in one transaction (audit.go).

const (
	prefixQuotas        = "/quotas/"
	prefixQuotaRequests = "/quota-requests/"
)

// States of a quota request.
const (
	QuotaPending  = "pending"
	QuotaApproved = "approved"
	QuotaDenied   = "denied"
)

// Bounds of quota requests.
const (
	MaxQuotaGPUs       = 1_000_000 // the largest quota that may be asked for or set
	MaxQuotaReason     = 500       // bytes of a request's reason or a decision's note
	MaxPendingRequests = 20        // pending requests per tenant
)

// QuotaRequest is a tenant's request for a quota of GPUs of one series in
// one region.
type QuotaRequest struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	Region string `json:"region"`
	Series string `json:"series"`
	// GPUs is the quota wanted: the new total, not an increase.
	GPUs int `json:"gpus"`
	// Current is the quota when the request was made (nil: none).
	Current   *int      `json:"current_gpus"`
	Reason    string    `json:"reason"`
	State     string    `json:"state"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by"`
	DecidedAt time.Time `json:"decided_at,omitzero"`
	DecidedBy string    `json:"decided_by,omitempty"`
	// Note is the reason of a denial, or the note of an approval.
	Note string `json:"note,omitempty"`
}

// quotaRecord is a quota set by an approval or an edit, as stored.
type quotaRecord struct {
	Tenant  string    `json:"tenant"`
	Region  string    `json:"region"`
	Series  string    `json:"series"`
	GPUs    int       `json:"gpus"`
	SetAt   time.Time `json:"set_at"`
	SetBy   string    `json:"set_by"`
	Request string    `json:"request,omitempty"` // the approved request, when one
}

func quotaKey(q model.Quota) string {
	return prefixQuotas + q.Tenant + "/" + q.Region + "/" + q.Series
}

// checkQuota checks a quota's tenant, region, series and GPUs (least to
// MaxQuotaGPUs) against the world and returns it with the series spelled
// as the catalog does.
func checkQuota(w *world, q model.Quota, least int) (model.Quota, error) {
	if !w.tenants[q.Tenant] {
		return q, refuse(CodeInvalidSpec, "tenant", "unknown tenant %q", clipText(q.Tenant))
	}
	if _, ok := w.fleet.Region(q.Region); !ok {
		return q, refuse(CodeInvalidSpec, "region", "unknown region %q%s", clipText(q.Region),
			model.DidYouMean(q.Region, w.fleet.RegionNames()))
	}
	var sold []string
	canon := ""
	for _, n := range w.fleet.Nodes {
		s := w.fleet.Catalog[n.SKU].Series
		if n.Region != q.Region || s == "" || contains(sold, s) {
			continue
		}
		sold = append(sold, s)
		if strings.EqualFold(s, q.Series) {
			canon = s
		}
	}
	if q.Series == "" {
		return q, refuse(CodeInvalidSpec, "series", "must not be empty; sold in %s: %s", q.Region, strings.Join(sold, ", "))
	}
	if canon == "" {
		sort.Strings(sold)
		return q, refuse(CodeInvalidSpec, "series", "unknown series %q in region %s; sold there: %s", clipText(q.Series), q.Region,
			strings.Join(sold, ", "))
	}
	q.Series = canon
	if q.GPUs < least || q.GPUs > MaxQuotaGPUs {
		return q, refuse(CodeInvalidSpec, "gpus", "is %d, want %d to %d", q.GPUs, least, MaxQuotaGPUs)
	}
	return q, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// checkNote checks a reason or note: at most MaxQuotaReason bytes of
// printable text; required says whether it may be empty.
func checkNote(field, s string, required bool) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" && required {
		return s, refuse(CodeInvalidSpec, field, "must not be empty: say why")
	}
	if len(s) > MaxQuotaReason {
		return s, refuse(CodeInvalidSpec, field, "is %d bytes, over the limit of %d", len(s), MaxQuotaReason)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return s, refuse(CodeInvalidSpec, field, "must be printable text on one line")
		}
	}
	return s, nil
}

// clipText shortens what a client sent before it is quoted in an error.
func clipText(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// quotaOf returns the quota of tenant, region and series the world has
// (nil: none).
func quotaOf(w *world, q model.Quota) *int {
	for _, x := range w.tenancy.Quotas {
		if x.Tenant == q.Tenant && x.Region == q.Region && x.Series == q.Series {
			g := x.GPUs
			return &g
		}
	}
	return nil
}

// RequestQuota files p's request for the quota q (q.Tenant may be left
// empty by a tenant token; the administrator must name it).
func (s *Server) RequestQuota(ctx context.Context, p Principal, q model.Quota, reason string) (QuotaRequest, error) {
	switch {
	case p.Node != "" || p.Endpoint != "":
		return QuotaRequest{}, refuse(CodeForbidden, "", "only a tenant or the admin may request quota")
	case !p.Admin && q.Tenant == "":
		q.Tenant = p.Tenant
	case !p.Admin && q.Tenant != p.Tenant:
		return QuotaRequest{}, refuse(CodeForbidden, "tenant", "a token of tenant %q may not request quota for %q", p.Tenant, clipText(q.Tenant))
	case p.Admin && q.Tenant == "":
		return QuotaRequest{}, refuse(CodeInvalidSpec, "tenant", "must not be empty with the admin token")
	}
	w := s.world()
	q, err := checkQuota(w, q, 1) // the quota wanted
	if err != nil {
		return QuotaRequest{}, err
	}
	if reason, err = checkNote("reason", reason, true); err != nil {
		return QuotaRequest{}, err
	}
	cur := quotaOf(w, q)
	if cur != nil && *cur == q.GPUs {
		return QuotaRequest{}, refuse(CodeInvalidSpec, "gpus", "%d is already the quota of %s in %s for %s-series GPUs", q.GPUs, q.Tenant, q.Region, q.Series)
	}
	s.quotaMu.Lock()
	defer s.quotaMu.Unlock()
	all, err := s.quotaRequests(ctx)
	if err != nil {
		return QuotaRequest{}, err
	}
	pending := 0
	for _, x := range all {
		if x.r.Tenant == q.Tenant && x.r.State == QuotaPending {
			pending++
		}
	}
	if pending >= MaxPendingRequests {
		return QuotaRequest{}, refuse(CodeConflict, "", "tenant %q has %d pending quota requests; wait for a decision", q.Tenant, pending)
	}
	var b [5]byte
	_, _ = rand.Read(b[:])
	r := QuotaRequest{ID: "qr-" + hex.EncodeToString(b[:]), Tenant: q.Tenant, Region: q.Region, Series: q.Series, GPUs: q.GPUs,
		Current: cur, Reason: reason, State: QuotaPending, CreatedAt: s.clock.Now().UTC(), CreatedBy: p.Name()}
	key := prefixQuotaRequests + r.ID
	v, _ := json.Marshal(r)
	txn := store.Txn{If: []store.Cond{store.Absent(key)}, Then: []store.Op{store.PutOp(key, v)}}
	s.auditTxn(&txn, p, ActionQuotaRequest, "quota-request/"+r.ID, fmt.Sprintf("%s %s %s: %d GPUs wanted (quota now %s); reason: %s",
		r.Tenant, r.Region, r.Series, r.GPUs, quotaText(cur), reason))
	if _, err := s.st.Txn(ctx, txn); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return QuotaRequest{}, refuse(CodeConflict, "", "request %s exists; try again", r.ID)
		}
		return QuotaRequest{}, fmt.Errorf("store quota request: %w", err)
	}
	s.log.Info("quota requested", "request", r.ID, "tenant", r.Tenant, "region", r.Region, "series", r.Series,
		"gpus", r.GPUs, "by", p.Name())
	return r, nil
}

func quotaText(q *int) string {
	if q == nil {
		return "none"
	}
	return strconv.Itoa(*q)
}

type storedRequest struct {
	r      QuotaRequest
	modRev int64
}

// quotaRequests reads every stored quota request, by ID.
func (s *Server) quotaRequests(ctx context.Context) ([]storedRequest, error) {
	kvs, _, err := s.st.List(ctx, prefixQuotaRequests)
	if err != nil {
		return nil, fmt.Errorf("list quota requests: %w", err)
	}
	out := make([]storedRequest, 0, len(kvs))
	for _, kv := range kvs {
		var r QuotaRequest
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			s.log.Error("skipping unreadable quota request", "key", kv.Key, "err", err)
			continue
		}
		out = append(out, storedRequest{r, kv.ModRev})
	}
	return out, nil
}

// QuotaRequests lists the requests p may see (a tenant its own, the
// administrator all), in state when it is not empty, oldest first.
func (s *Server) QuotaRequests(ctx context.Context, p Principal, state string) ([]QuotaRequest, error) {
	switch state {
	case "", QuotaPending, QuotaApproved, QuotaDenied:
	default:
		return nil, refuse(CodeInvalidSpec, "state", "%q: want pending, approved or denied", clipText(state))
	}
	all, err := s.quotaRequests(ctx)
	if err != nil {
		return nil, err
	}
	out := []QuotaRequest{}
	for _, x := range all {
		if p.Sees(x.r.Tenant) && (state == "" || x.r.State == state) {
			out = append(out, x.r)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].CreatedAt.Before(out[b].CreatedAt) })
	return out, nil
}

// DecideQuotaRequest approves (the quota becomes the request's) or denies
// the pending request id; only the administrator may, and a denial needs a
// note saying why.
func (s *Server) DecideQuotaRequest(ctx context.Context, p Principal, id string, approve bool, note string) (QuotaRequest, error) {
	if !p.Admin || p.Endpoint != "" {
		return QuotaRequest{}, refuse(CodeForbidden, "", "only an administrator approves or denies quota requests; a tenant cannot decide its own")
	}
	note, err := checkNote("reason", note, !approve)
	if err != nil {
		return QuotaRequest{}, err
	}
	if !strings.HasPrefix(id, "qr-") || len(id) > 32 || strings.ContainsAny(id, "/?#") {
		return QuotaRequest{}, refuse(CodeNotFound, "id", "no quota request %q", clipText(id))
	}
	s.quotaMu.Lock()
	defer s.quotaMu.Unlock()
	key := prefixQuotaRequests + id
	kv, err := s.st.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return QuotaRequest{}, refuse(CodeNotFound, "id", "no quota request %q", id)
	}
	if err != nil {
		return QuotaRequest{}, fmt.Errorf("read quota request: %w", err)
	}
	var r QuotaRequest
	if err := json.Unmarshal(kv.Value, &r); err != nil {
		return QuotaRequest{}, fmt.Errorf("read quota request %s: %w", id, err)
	}
	if r.State != QuotaPending {
		return QuotaRequest{}, refuse(CodeConflict, "id", "request %s was already %s by %s", id, r.State, r.DecidedBy)
	}
	r.DecidedAt, r.DecidedBy, r.Note = s.clock.Now().UTC(), p.Name(), note
	txn := store.Txn{If: []store.Cond{store.ModRevIs(key, kv.ModRev)}}
	var qkey string
	var qv []byte
	if approve {
		r.State = QuotaApproved
		q := model.Quota{Tenant: r.Tenant, Region: r.Region, Series: r.Series, GPUs: r.GPUs}
		qkey = quotaKey(q)
		qv, _ = json.Marshal(quotaRecord{Tenant: q.Tenant, Region: q.Region, Series: q.Series, GPUs: q.GPUs,
			SetAt: r.DecidedAt, SetBy: p.Name(), Request: id})
		txn.Then = append(txn.Then, store.PutOp(qkey, qv))
		s.auditTxn(&txn, p, ActionQuotaApprove, "quota-request/"+id, fmt.Sprintf("%s %s %s: quota %s → %d GPUs%s",
			r.Tenant, r.Region, r.Series, quotaText(quotaOf(s.world(), q)), r.GPUs, noteText(note)))
	} else {
		r.State = QuotaDenied
		s.auditTxn(&txn, p, ActionQuotaDeny, "quota-request/"+id, fmt.Sprintf("%s %s %s: %d GPUs wanted; reason: %s",
			r.Tenant, r.Region, r.Series, r.GPUs, note))
	}
	v, _ := json.Marshal(r)
	txn.Then = append(txn.Then, store.PutOp(key, v))
	rev, err := s.st.Txn(ctx, txn)
	if errors.Is(err, store.ErrConflict) {
		return QuotaRequest{}, refuse(CodeConflict, "id", "request %s changed meanwhile; look again", id)
	}
	if err != nil {
		return QuotaRequest{}, fmt.Errorf("decide quota request %s: %w", id, err)
	}
	if approve {
		s.cache.putKV(qkey, qv, rev)
		s.Kick()
	}
	s.log.Info("quota request decided", "request", id, "state", r.State, "tenant", r.Tenant, "region", r.Region,
		"series", r.Series, "gpus", r.GPUs, "by", p.Name())
	return r, nil
}

func noteText(note string) string {
	if note == "" {
		return ""
	}
	return "; note: " + note
}

// SetQuota is the administrator's edit of a quota: q replaces the quota
// of its tenant, region and series (0 GPUs forbids that series there).
func (s *Server) SetQuota(ctx context.Context, p Principal, q model.Quota, note string) (model.Quota, error) {
	if !p.Admin || p.Endpoint != "" {
		return q, refuse(CodeForbidden, "", "only an administrator sets quotas; a tenant asks with a quota request")
	}
	note, err := checkNote("reason", note, false)
	if err != nil {
		return q, err
	}
	w := s.world()
	if q, err = checkQuota(w, q, 0); err != nil {
		return q, err
	}
	s.quotaMu.Lock()
	defer s.quotaMu.Unlock()
	old := quotaOf(s.world(), q)
	key := quotaKey(q)
	v, _ := json.Marshal(quotaRecord{Tenant: q.Tenant, Region: q.Region, Series: q.Series, GPUs: q.GPUs,
		SetAt: s.clock.Now().UTC(), SetBy: p.Name()})
	txn := store.Txn{Then: []store.Op{store.PutOp(key, v)}}
	s.auditTxn(&txn, p, ActionQuotaSet, "quota/"+q.Tenant+"/"+q.Region+"/"+q.Series,
		fmt.Sprintf("quota %s → %d GPUs%s", quotaText(old), q.GPUs, noteText(note)))
	rev, err := s.st.Txn(ctx, txn)
	if err != nil {
		return q, fmt.Errorf("set quota: %w", err)
	}
	s.cache.putKV(key, v, rev)
	s.log.Info("quota set", "tenant", q.Tenant, "region", q.Region, "series", q.Series, "gpus", q.GPUs, "by", p.Name())
	s.Kick()
	return q, nil
}
