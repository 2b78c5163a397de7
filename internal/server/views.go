package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// Fleet returns the fleet as the core sees it: each node with its recorded
// health.
func (s *Server) Fleet() *model.Fleet { return s.world().fleet }

// Tenancy returns the tenancy the core sees: the tenants file with the
// reservations created through the API.
func (s *Server) Tenancy() *model.Tenancy { return s.world().tenancy }

// NodeStatus is a node with what runs on it.
type NodeStatus struct {
	Node      model.Node
	SKU       model.SKU
	FreeMilli int64    // free milli-GPU summed over the node's GPUs
	Jobs      []string // IDs of jobs holding capacity here, sorted
	Drain     *NodeDrain
}

// Nodes returns every fleet node with its health and use, in fleet order.
func (s *Server) Nodes() []NodeStatus {
	w := s.world()
	used, jobs := s.use()
	out := make([]NodeStatus, len(w.fleet.Nodes))
	for i, n := range w.fleet.Nodes {
		sku := w.fleet.Catalog[n.SKU]
		var u int64
		for _, m := range used[n.Name] {
			u += m
		}
		js := jobs[n.Name]
		sort.Strings(js)
		rec, _, _ := s.cache.node(n.Name)
		out[i] = NodeStatus{Node: n, SKU: sku, FreeMilli: int64(sku.GPUs)*model.MilliPerGPU - u, Jobs: js, Drain: rec.Drain}
	}
	return out
}

// NodeDetail is one node as 'allot node show' describes it: its status,
// what its agent registered, and each GPU's use.
type NodeDetail struct {
	NodeStatus
	Address     string    // the agent's, as it registered; "" without agents
	HealthSince time.Time // when the health last changed
	// LastHeartbeat is the agent's last heartbeat this server saw (the
	// leader keeps them in memory); zero when it saw none.
	LastHeartbeat time.Time
	GPUs          []GPUUse // by index
	// Failures are the latest attempts that failed on the node that this
	// server saw, oldest first (at most nodeFailuresShown).
	Failures []NodeFailure
	// Reservation is the reservation that holds the node in its window,
	// or keeps it for its start, in this server's last cycle; "" for none.
	// Ahead is set when its window lies ahead.
	Reservation string
	Ahead       bool
	// Images are the images the node's agent last reported it holds
	// (images.go), sorted.
	Images []string
}

// GPUUse is one GPU of a node: what the agent registered (UUID and memory
// only with agents) and the milli-GPU and jobs on it now.
type GPUUse struct {
	Index     int
	UUID      string
	Model     string
	MemoryMiB int64
	UsedMilli int64
	Jobs      []string // sorted
}

// Node describes node name (NotFound when the fleet has none).
func (s *Server) Node(name string) (NodeDetail, error) {
	w := s.world()
	n, ok := w.nodes[name]
	if !ok {
		names := make([]string, 0, len(w.fleet.Nodes))
		for _, x := range w.fleet.Nodes {
			names = append(names, x.Name)
		}
		return NodeDetail{}, refuse(CodeNotFound, "", "no node %q in the fleet%s", name, model.DidYouMean(name, names))
	}
	sku := w.fleet.Catalog[n.SKU]
	rec, _, _ := s.cache.node(name)
	d := NodeDetail{Address: rec.Address, HealthSince: rec.UpdatedAt, Images: s.NodeImages(name)}
	if m := s.reserved.Load(); m != nil {
		for _, r := range w.tenancy.Reservations {
			if slices.Contains((*m)[r.Name], name) {
				d.Reservation, d.Ahead = r.Name, !r.ActiveAt(s.clock.Now())
			}
		}
	}
	s.beatsMu.Lock()
	d.LastHeartbeat = s.beats[name]
	fs := s.failures[name]
	d.Failures = slices.Clone(fs[max(0, len(fs)-nodeFailuresShown):])
	s.beatsMu.Unlock()
	d.GPUs = make([]GPUUse, sku.GPUs)
	for g := range d.GPUs {
		d.GPUs[g] = GPUUse{Index: g, Model: sku.GPUModel}
	}
	for _, r := range rec.GPUs {
		if r.Index >= 0 && r.Index < len(d.GPUs) {
			d.GPUs[r.Index].UUID, d.GPUs[r.Index].MemoryMiB = r.UUID, r.MemoryMiB
			if r.Model != "" {
				d.GPUs[r.Index].Model = r.Model
			}
		}
	}
	var used int64
	var jobs []string
	for _, j := range s.cache.holding() {
		for _, a := range j.Status.Allocations {
			if a.Node != name {
				continue
			}
			if len(jobs) == 0 || jobs[len(jobs)-1] != j.ID {
				jobs = append(jobs, j.ID)
			}
			for _, g := range a.GPUs {
				if g >= 0 && g < len(d.GPUs) {
					d.GPUs[g].UsedMilli += a.GPUMilli
					d.GPUs[g].Jobs = append(d.GPUs[g].Jobs, j.ID)
				}
				used += a.GPUMilli
			}
		}
	}
	for g := range d.GPUs {
		sort.Strings(d.GPUs[g].Jobs)
	}
	sort.Strings(jobs)
	d.NodeStatus = NodeStatus{Node: n, SKU: sku, FreeMilli: int64(sku.GPUs)*model.MilliPerGPU - used, Jobs: jobs, Drain: rec.Drain}
	return d, nil
}

// use returns the milli-GPU held per node and GPU, and the jobs per node.
func (s *Server) use() (map[string]map[int]int64, map[string][]string) {
	used := map[string]map[int]int64{}
	jobs := map[string][]string{}
	for _, j := range s.cache.holding() {
		for _, a := range j.Status.Allocations {
			if used[a.Node] == nil {
				used[a.Node] = map[int]int64{}
			}
			for _, g := range a.GPUs {
				used[a.Node][g] += a.GPUMilli
			}
			if js := jobs[a.Node]; len(js) == 0 || js[len(js)-1] != j.ID {
				jobs[a.Node] = append(js, j.ID)
			}
		}
	}
	return used, jobs
}

// SKUOffer is one SKU in one region with its capacity now.
type SKUOffer struct {
	SKU       model.SKU
	Region    string
	Nodes     int // nodes of the SKU in the region
	FreeNodes int // Ready nodes with nothing running
	// ReservedNodes are the nodes that reservations active now hold (at
	// most Nodes): only their owners' work, and spot work while they idle,
	// runs there.
	ReservedNodes int
	FreeGPUs      float64
	// OnDemand and Spot are the node's prices in the region now, USD per
	// node-hour: spot at the region's utilisation (cost.go).
	OnDemand, Spot float64
}

// SKUs returns the SKUs of the fleet per region, filtered by region and
// series when they are not empty, sorted by region and name.
func (s *Server) SKUs(region, series string) []SKUOffer {
	w := s.world()
	used, _ := s.use()
	idx := map[[2]string]int{}
	var out []SKUOffer
	for _, n := range w.fleet.Nodes {
		sku := w.fleet.Catalog[n.SKU]
		if (region != "" && n.Region != region) || (series != "" && !strings.EqualFold(sku.Series, series)) {
			continue
		}
		k := [2]string{n.Region, n.SKU}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, SKUOffer{SKU: sku, Region: n.Region})
		}
		o := &out[i]
		o.Nodes++
		if n.Health != model.NodeReady {
			continue
		}
		var u int64
		for _, m := range used[n.Name] {
			u += m
		}
		if u == 0 {
			o.FreeNodes++
		}
		o.FreeGPUs += float64(int64(sku.GPUs)*model.MilliPerGPU-u) / model.MilliPerGPU
	}
	now := s.clock.Now()
	for _, r := range w.tenancy.Reservations {
		if i, ok := idx[[2]string{r.Region, r.SKU}]; ok && r.ActiveAt(now) {
			out[i].ReservedNodes = min(out[i].Nodes, out[i].ReservedNodes+r.Count)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Region != out[b].Region {
			return out[a].Region < out[b].Region
		}
		return out[a].SKU.Name < out[b].SKU.Name
	})
	s.priceOffers(w, out)
	return out
}

// Usage is a tenant's GPUs in use in one region and series, and its hard
// quota there (nil when none).
type Usage struct {
	Tenant, Region, Series string
	UsedMilli              int64
	QuotaGPUs              *int
}

// Usage returns the usage p may see, in region when it is not empty: one
// row per tenant, region and series with a quota or GPUs in use.
func (s *Server) Usage(p Principal, region string) []Usage {
	w := s.world()
	type key struct{ tenant, region, series string }
	rows := map[key]*Usage{}
	get := func(k key) *Usage {
		u := rows[k]
		if u == nil {
			u = &Usage{Tenant: k.tenant, Region: k.region, Series: k.series}
			rows[k] = u
		}
		return u
	}
	for _, q := range w.tenancy.Quotas {
		if p.Sees(q.Tenant) && (region == "" || q.Region == region) {
			g := q.GPUs
			get(key{q.Tenant, q.Region, q.Series}).QuotaGPUs = &g
		}
	}
	for _, j := range s.cache.holding() {
		if !p.Sees(j.Spec.Tenant) {
			continue
		}
		for _, a := range j.Status.Allocations {
			n, ok := w.nodes[a.Node]
			if !ok || (region != "" && n.Region != region) {
				continue
			}
			get(key{j.Spec.Tenant, n.Region, w.fleet.Catalog[n.SKU].Series}).UsedMilli += int64(len(a.GPUs)) * a.GPUMilli
		}
	}
	out := make([]Usage, 0, len(rows))
	for _, u := range rows {
		out = append(out, *u)
	}
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.Tenant != y.Tenant {
			return x.Tenant < y.Tenant
		}
		if x.Region != y.Region {
			return x.Region < y.Region
		}
		return x.Series < y.Series
	})
	return out
}

// Reservations returns the reservations p may see (the tenants file's and
// those created through the API), by name.
func (s *Server) Reservations(p Principal) []model.Reservation {
	var out []model.Reservation
	for _, r := range s.world().tenancy.Reservations {
		if p.Sees(r.Owner) {
			out = append(out, r)
		}
	}
	return out
}

// Reservation returns the reservation called name as p may see it.
func (s *Server) Reservation(p Principal, name string) (model.Reservation, error) {
	for _, r := range s.world().tenancy.Reservations {
		if r.Name != name {
			continue
		}
		if !p.Sees(r.Owner) {
			return model.Reservation{}, refuse(CodeForbidden, "", "reservation %q belongs to another tenant", name)
		}
		return r, nil
	}
	return model.Reservation{}, refuse(CodeNotFound, "", "no reservation %q", name)
}

// CreateReservation stores r. A tenant owns what it creates; the
// administrator must name the owner. A tenant's reservation passes its
// limits (checkReserveLimits); an administrator's is stored whatever it
// promises, with a warning when the GPUs of its pool are then promised
// more than once over its window (model.Promise): the core keeps the
// guarantees that are not lent, so the reservation's work may wait.
func (s *Server) CreateReservation(ctx context.Context, p Principal, r model.Reservation) (model.Reservation, []string, error) {
	switch {
	case !p.Admin && r.Owner == "":
		r.Owner = p.Tenant
	case !p.Admin && r.Owner != p.Tenant:
		return r, nil, refuse(CodeForbidden, "owner", "a token of tenant %q may not reserve for %q", p.Tenant, r.Owner)
	case p.Admin && r.Owner == "":
		return r, nil, refuse(CodeInvalidSpec, "owner", "must not be empty")
	}
	if !model.ValidName(r.Name) {
		return r, nil, refuse(CodeInvalidSpec, "name", "%s", model.NameRule)
	}
	// A reservation made now holds its nodes from now at the earliest: an
	// open or past start would reach its window, and the GPU-hours it
	// bought, back to before it was made.
	if now := s.clock.Now().UTC().Truncate(time.Second); r.Start.Before(now) {
		r.Start = now
	}
	// One reservation at a time, so that two of a tenant's requests
	// cannot both pass its limits.
	s.reserveMu.Lock()
	defer s.reserveMu.Unlock()
	w := s.world()
	if err := r.Validate(w.fleet, w.tenants); err != nil {
		return r, nil, fromField(err)
	}
	for _, x := range w.tenancy.Reservations {
		if x.Name == r.Name {
			return r, nil, refuse(CodeConflict, "name", "reservation %q exists", r.Name)
		}
	}
	if !p.Admin {
		if err := s.checkLead(r, s.clock.Now()); err != nil {
			return r, nil, err
		}
		if err := checkReserveLimits(w, r, s.clock.Now()); err != nil {
			return r, nil, err
		}
		if err := s.budgetStops(r.Owner, "owner", "new reservations", s.clock.Now()); err != nil {
			return r, nil, err
		}
	}
	var beyond, spans string
	if pr, over := promiseWith(w, r, laterOf(r.Start, s.clock.Now())); over {
		beyond = "the pool's GPUs are promised more than once: " + pr.String() +
			"; guarantees that are not lent come first, so this reservation's work may wait"
	}
	if most, clusters := largestCluster(w.fleet, r.SKU, r.Region); clusters > 1 && most < r.Count {
		spans = fmt.Sprintf("no cluster of %s in %s has %d nodes (the largest of its %d has %d): the reservation "+
			"spans clusters, and a gang, which runs within one cluster, fits it only up to %d nodes", r.SKU, r.Region, r.Count, clusters, most, most)
	}
	key := prefixReservations + r.Name
	v := encodeReservation(r)
	rev, err := s.st.Txn(ctx, store.Txn{If: []store.Cond{store.Absent(key)}, Then: []store.Op{store.PutOp(key, v)}})
	if errors.Is(err, store.ErrConflict) {
		return r, nil, refuse(CodeConflict, "name", "reservation %q exists", r.Name)
	}
	if err != nil {
		return r, nil, fmt.Errorf("store reservation: %w", err)
	}
	s.cache.putKV(key, v, rev)
	s.log.Info("reservation created", "reservation", r.Name, "owner", r.Owner, "sku", r.SKU, "region", r.Region,
		"count", r.Count, "by", p.Name())
	var warnings []string
	if beyond != "" {
		s.log.Warn("reservation created beyond its pool", "reservation", r.Name, "warning", beyond)
		warnings = append(warnings, beyond)
	}
	if spans != "" {
		s.log.Warn("reservation created across clusters", "reservation", r.Name, "warning", spans)
		warnings = append(warnings, spans)
	}
	s.audit(ctx, p, ActionReservationNew, "reservation/"+r.Name, reservationAuditText(r))
	s.Kick()
	return r, warnings, nil
}

// largestCluster returns the most nodes of sku one cluster of region
// holds, and how many clusters hold some.
func largestCluster(f *model.Fleet, sku, region string) (most, clusters int) {
	by := map[string]int{}
	for _, n := range f.Nodes {
		if n.SKU == sku && n.Region == region {
			by[n.Cluster]++
		}
	}
	for _, c := range by {
		most = max(most, c)
	}
	return most, len(by)
}

// DeleteReservation removes a reservation created through the API.
func (s *Server) DeleteReservation(ctx context.Context, p Principal, name string) error {
	r, modRev, ok := s.cache.reservation(name)
	if ok && !p.Sees(r.Owner) {
		return refuse(CodeForbidden, "", "reservation %q belongs to another tenant", name)
	}
	if !ok {
		for _, x := range s.cfg.Tenancy.Reservations {
			if x.Name == name && !p.Sees(x.Owner) {
				return refuse(CodeForbidden, "", "reservation %q belongs to another tenant", name)
			}
			if x.Name == name {
				return refuse(CodeConflict, "", "reservation %q is defined in the tenants file; change it there", name)
			}
		}
		return refuse(CodeNotFound, "", "no reservation %q", name)
	}
	if err := s.reservationIdle(p, name); err != nil {
		return err
	}
	key := prefixReservations + name
	txn := store.Txn{If: []store.Cond{store.ModRevIs(key, modRev)}, Then: []store.Op{store.DeleteOp(key)}}
	bill, rec, owed := releaseOp(r, p, s.clock.Now())
	if owed { // deleted inside its window: still billed to its end
		txn.Then = append(txn.Then, store.PutOp(bill, rec))
	}
	rev, err := s.st.Txn(ctx, txn)
	if errors.Is(err, store.ErrConflict) {
		return refuse(CodeConflict, "", "reservation %q changed meanwhile; try again", name)
	}
	if err != nil {
		return fmt.Errorf("delete reservation: %w", err)
	}
	s.cache.delKey(key, rev)
	s.log.Info("reservation deleted", "reservation", name, "owner", r.Owner, "by", p.Name(), "billed_to_end", owed)
	s.audit(ctx, p, ActionReservationDel, "reservation/"+name, reservationAuditText(r))
	s.Kick()
	return nil
}

// reservationIdle refuses the deletion of reservation name while jobs not
// ended name it, as Slurm refuses to delete a reservation in use: queued
// ones would wait for it forever, and running ones could not come back
// after a preemption. The answer names the jobs p may see.
func (s *Server) reservationIdle(p Principal, name string) error {
	snap := s.cache.snapshot()
	var ids []string
	n := 0
	for _, jobs := range [][]*model.Job{snap.jobs, snap.blocked} {
		for _, j := range jobs {
			if j.Spec.Placement.Reservation != name {
				continue
			}
			n++
			if p.Sees(j.Spec.Tenant) && len(ids) < 5 {
				ids = append(ids, j.ID)
			}
		}
	}
	if n == 0 {
		return nil
	}
	if more := n - len(ids); more > 0 {
		ids = append(ids, fmt.Sprintf("%d more", more))
	}
	which := strings.Join(ids, ", ")
	jobs := "jobs"
	if n == 1 {
		jobs = "job"
	}
	return refuse(CodeConflict, "", "reservation %q is named by %d %s not ended (%s): cancel them, or let them end, first",
		name, n, jobs, which)
}

// HashToken returns the SHA-256 hex digest under which a token is stored.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// newToken returns 32 random bytes in URL-safe base64 that does not begin
// with '-' or '_': a token passed as "--token -k…" reads as flags to a
// shell completion or to tools that parse their arguments less carefully
// than allot's own (1 token in 32 would).
func newToken() string {
	for {
		var b [32]byte
		_, _ = rand.Read(b[:])
		if t := base64.RawURLEncoding.EncodeToString(b[:]); t[0] != '-' && t[0] != '_' {
			return t
		}
	}
}

// Authenticate returns whom token speaks for.
func (s *Server) Authenticate(token string) (Principal, bool) {
	if token == "" {
		return Principal{}, false
	}
	e, ok := s.cache.tokenEntry(HashToken(token))
	now := s.clock.Now()
	if !ok || e.expired(now) {
		return Principal{}, false
	}
	if e.lastUse != nil {
		e.lastUse.Store(now.UnixNano())
	}
	return e.p, true
}

// CreateToken makes a token for tenant and stores only its hash.
func (s *Server) CreateToken(ctx context.Context, tenant string) (string, error) {
	if !s.world().tenants[tenant] {
		return "", refuse(CodeInvalidSpec, "tenant", "unknown tenant %q", tenant)
	}
	tok := newToken()
	if err := s.storeToken(ctx, tok, tokenRecord{Tenant: tenant, CreatedAt: s.clock.Now()}); err != nil {
		return "", err
	}
	s.log.Info("token created", "tenant", tenant)
	return tok, nil
}

// CreateNodeToken makes a token for the agent of fleet node node: it may
// register, heartbeat and poll that node, and report events, logs and
// checkpoints of the jobs running on it, nothing else.
func (s *Server) CreateNodeToken(ctx context.Context, node string) (string, error) {
	if _, ok := s.world().nodes[node]; !ok {
		return "", refuse(CodeInvalidSpec, "node", "no node %q in the fleet", node)
	}
	tok := newToken()
	if err := s.storeToken(ctx, tok, tokenRecord{Node: node, CreatedAt: s.clock.Now()}); err != nil {
		return "", err
	}
	s.log.Info("node token created", "node", node)
	return tok, nil
}

func (s *Server) storeToken(ctx context.Context, tok string, rec tokenRecord) error {
	key := prefixTokens + HashToken(tok)
	v, _ := json.Marshal(rec)
	rev, err := s.st.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp(key, v)}})
	if err != nil {
		return fmt.Errorf("store token: %w", err)
	}
	s.cache.putKV(key, v, rev)
	return nil
}

// EnsureAdminToken makes sure the administrator token kept in the file at
// path is valid. When the file does not exist it creates a token, writes it
// there (mode 0600, synced) and only then stores its hash, so a crash can
// never leave a stored token that nobody has. It returns the token and
// whether it was created now.
func (s *Server) EnsureAdminToken(ctx context.Context, path string) (string, bool, error) {
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		tok := strings.TrimSpace(string(data))
		if tok == "" {
			return "", false, fmt.Errorf("admin token file %s is empty; delete it to make a new token", path)
		}
		if p, ok := s.Authenticate(tok); ok && p.Admin {
			return tok, false, nil
		}
		return tok, false, s.storeToken(ctx, tok, tokenRecord{Admin: true, CreatedAt: s.clock.Now()})
	case !errors.Is(err, os.ErrNotExist):
		return "", false, fmt.Errorf("read admin token: %w", err)
	}
	tok := newToken()
	if err := writeFileSync(path, []byte(tok+"\n")); err != nil {
		return "", false, fmt.Errorf("write admin token: %w", err)
	}
	if err := s.storeToken(ctx, tok, tokenRecord{Admin: true, CreatedAt: s.clock.Now()}); err != nil {
		return "", false, err
	}
	s.log.Info("admin token created", "file", path)
	return tok, true, nil
}

// writeFileSync writes data to path atomically (temporary file, fsync,
// rename, fsync of the directory) with mode 0600.
func writeFileSync(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".admin-token-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// JobCounts returns how many jobs are in each state, as the allot_jobs
// gauge shows them, without gathering every metric: for in-process
// drivers that poll it (allot bench e2e).
func (s *Server) JobCounts() map[model.State]int { return s.cache.stateCounts() }

// storeProbeTimeout bounds StoreReachable.
const storeProbeTimeout = time.Second

// StoreReachable reads the store's revision within a second: an error
// when the store does not answer (an etcd cluster cut off from this
// server), so that /readyz sends load balancers and clients elsewhere.
func (s *Server) StoreReachable(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, storeProbeTimeout)
	defer cancel()
	_, err := s.st.Rev(ctx)
	return err
}

// UnknownTenant is the warning for an administrator's filter that names
// tenant when the tenants file has no such tenant: the answer (cost,
// usage, jobs) holds only what a tenant of that name left before it was
// removed, most likely nothing, and an empty answer would read as a tenant
// that ran nothing. It is "" otherwise (a tenant token may name only its
// own tenant).
func (s *Server) UnknownTenant(p Principal, tenant string) string {
	if tenant == "" || !p.Admin {
		return ""
	}
	ts := s.world().tenancy.Tenants
	names := make([]string, len(ts))
	for i, t := range ts {
		if t.Name == tenant {
			return ""
		}
		names[i] = t.Name
	}
	return fmt.Sprintf("no tenant %q in the tenants file%s: this shows only what a tenant of that name left before it was removed",
		tenant, model.DidYouMean(tenant, names))
}
