package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unique"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// cache is the server's in-memory copy of the store. It is fed by the store's
// watch and, so that a caller reads its own write at once, by the server's
// own acknowledged writes. Both paths go through put and del, which apply a
// change only when it is newer (by ModRev) than what the cache holds for
// the key, so their order does not matter.
//
// Cached *model.Job values are never modified: a change replaces the
// pointer. Snapshots and readers may therefore share them without copying.
// Of a job that ended the cache keeps only its listing fields (ended.go).
type cache struct {
	log *slog.Logger

	mu   sync.RWMutex // guards the fields below
	jobs map[string]jobEntry
	// live is the jobs not ended (queued or holding capacity): what a cycle
	// reads, without walking the history of finished jobs.
	live         map[string]struct{}
	liveBy       map[unique.Handle[string]]int // jobs not ended, by tenant
	reservations map[string]reservationEntry
	tokens       map[string]tokenEntry // by SHA-256 hex of the token
	nodes        map[string]nodeEntry
	quotas       map[string]quotaEntry
	tomb         map[string]int64 // deleted key -> deleting revision
	fence        int64            // ModRev of keyFence, 0 when absent
	rev          int64            // highest revision seen by the watch or a list
	worldGen     uint64           // changes when reservations or node health change
	counts       map[model.State]int
	onCount      func(model.State, int) // reports a changed count of jobs in a state
	jobRev       int64                  // highest ModRev of a job the cache applied
	jobChanged   chan struct{}          // closed (and replaced) when a job changes
	runs         *runBook               // run times of finished jobs, for estimates

	orderMu sync.Mutex // guards order and moved; taken with mu held (read or write), never the other way
	// order is the IDs of the live jobs, sorted, as the last snapshot read
	// them, and moved the IDs that joined or left the live jobs since: the
	// next snapshot merges the two instead of sorting every live job.
	// order is nil before the first snapshot, and when more moved than a
	// merge would save; moved is then not kept.
	order []string
	moved map[string]struct{}

	ownMu sync.Mutex // guards own; never held while taking mu
	// own is, by job ID, the jobs the server is writing itself, from
	// before its transaction until it returns (writing): the watch takes
	// the job from here instead of decoding its record when the record is
	// the one written, as it may apply the change before the writer does.
	own map[string]ownWrite
}

// ownWrite is a job the server writes, and its record.
type ownWrite struct {
	job *model.Job
	rec []byte
}

// jobEntry is one cached job. tenant, state and submitted are set for every
// job; job is nil once the job ended (compact in ended.go), and the store
// holds the rest.
type jobEntry struct {
	job       *model.Job
	modRev    int64
	tenant    unique.Handle[string]
	state     model.State
	submitted time.Time // UTC
	ended     int64     // Unix seconds of an ended job's end; 0 before (and for records without one)
}

type reservationEntry struct {
	r      model.Reservation
	modRev int64
}

type tokenEntry struct {
	p       Principal
	expires time.Time // zero: never
	// lastUse is when Authenticate last accepted the token (Unix ns; 0:
	// not since the server started); shared by the entry's copies.
	lastUse *atomic.Int64
	modRev  int64
}

type nodeEntry struct {
	health model.Health
	rec    nodeRecord
	modRev int64
}

func newCache(log *slog.Logger, onCount func(model.State, int)) *cache {
	if onCount == nil {
		onCount = func(model.State, int) {}
	}
	return &cache{
		log:          log,
		jobs:         map[string]jobEntry{},
		live:         map[string]struct{}{},
		liveBy:       map[unique.Handle[string]]int{},
		reservations: map[string]reservationEntry{},
		tokens:       map[string]tokenEntry{},
		nodes:        map[string]nodeEntry{},
		tomb:         map[string]int64{},
		counts:       map[model.State]int{},
		onCount:      onCount,
		jobChanged:   make(chan struct{}),
		runs:         newRunBook(),
		own:          map[string]ownWrite{},
		moved:        map[string]struct{}{},
	}
}

// movedLocked records that job id joined or left the live jobs; mu is held
// for writing.
func (c *cache) movedLocked(id string) {
	c.orderMu.Lock()
	defer c.orderMu.Unlock()
	if c.order == nil {
		return
	}
	c.moved[id] = struct{}{}
	if len(c.moved) > len(c.order)/2+1024 {
		c.order, c.moved = nil, map[string]struct{}{}
	}
}

// liveOrderLocked returns the IDs of the live jobs in ascending order, a
// slice no one changes; mu is held, for reading at least.
func (c *cache) liveOrderLocked() []string {
	c.orderMu.Lock()
	defer c.orderMu.Unlock()
	if c.order == nil {
		ids := make([]string, 0, len(c.live))
		for id := range c.live {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		c.order = ids
		clear(c.moved)
		return ids
	}
	if len(c.moved) == 0 {
		return c.order
	}
	back := make([]string, 0, len(c.moved)) // of the moved, those live now
	for id := range c.moved {
		if _, ok := c.live[id]; ok {
			back = append(back, id)
		}
	}
	slices.Sort(back)
	ids := make([]string, 0, len(c.order)+len(back))
	k := 0
	for _, id := range c.order {
		if _, ok := c.moved[id]; ok {
			continue
		}
		for k < len(back) && back[k] < id {
			ids = append(ids, back[k])
			k++
		}
		ids = append(ids, id)
	}
	ids = append(ids, back[k:]...)
	c.order = ids
	clear(c.moved)
	return ids
}

// writing records that the server is about to write jobs, recs[i] being
// the record of jobs[i]; it returns what forgets them, to call once the
// write returned, whether it succeeded or not.
func (c *cache) writing(jobs []*model.Job, recs [][]byte) (forget func()) {
	c.ownMu.Lock()
	for i, j := range jobs {
		c.own[j.ID] = ownWrite{job: j, rec: recs[i]}
	}
	c.ownMu.Unlock()
	return func() {
		c.ownMu.Lock()
		for _, j := range jobs {
			if w, ok := c.own[j.ID]; ok && w.job == j {
				delete(c.own, j.ID)
			}
		}
		c.ownMu.Unlock()
	}
}

// ownJob returns the job the server is writing as record value under id,
// or nil.
func (c *cache) ownJob(id string, value []byte) *model.Job {
	c.ownMu.Lock()
	w, ok := c.own[id]
	c.ownMu.Unlock()
	if ok && bytes.Equal(w.rec, value) {
		return w.job
	}
	return nil
}

// empty reports whether the cache holds no key yet (before the first
// listing).
func (c *cache) empty() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.jobs)+len(c.reservations)+len(c.tokens)+len(c.nodes) == 0 && c.fence == 0
}

// loadPage applies one page of a listing; listed, when not nil, collects
// the keys for sweep.
func (c *cache) loadPage(kvs []store.KV, listed map[string]struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, kv := range kvs {
		if listed != nil {
			listed[kv.Key] = struct{}{}
		}
		c.putLocked(kv.Key, kv.Value, kv.ModRev)
	}
}

// loaded ends a listing at rev whose pages loadPage applied. When listed
// is not nil (the cache held keys before the listing) it drops the cached
// keys the listing no longer has: deleted while a watch was broken.
func (c *cache) loaded(listed map[string]struct{}, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rev = max(c.rev, rev)
	if listed == nil {
		return
	}
	live := func(k string) bool { _, ok := listed[k]; return ok }
	for id, e := range c.jobs {
		if !live(prefixJobs+id) && e.modRev <= rev {
			c.delLocked(prefixJobs+id, rev)
		}
	}
	for name, e := range c.reservations {
		if !live(prefixReservations+name) && e.modRev <= rev {
			c.delLocked(prefixReservations+name, rev)
		}
	}
	for h, e := range c.tokens {
		if !live(prefixTokens+h) && e.modRev <= rev {
			c.delLocked(prefixTokens+h, rev)
		}
	}
	for n, e := range c.nodes {
		if !live(prefixNodes+n) && e.modRev <= rev {
			c.delLocked(prefixNodes+n, rev)
		}
	}
	c.sweepQuotasLocked(live, rev)
}

// event applies one watch event.
func (c *cache) event(ev store.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev.Type {
	case store.Put:
		c.putLocked(ev.KV.Key, ev.KV.Value, ev.KV.ModRev)
	case store.Delete:
		c.delLocked(ev.KV.Key, ev.Rev)
	}
	c.rev = max(c.rev, ev.Rev)
}

// putJobs records the server's own acknowledged writes of jobs at rev.
func (c *cache) putJobs(jobs []*model.Job, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, j := range jobs {
		c.setJobLocked(j, rev)
	}
}

// putKV records one acknowledged put at rev.
func (c *cache) putKV(key string, value []byte, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(key, value, rev)
}

// delKey records one acknowledged delete at rev.
func (c *cache) delKey(key string, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.delLocked(key, rev)
}

func (c *cache) newer(key string, modRev int64, have int64, ok bool) bool {
	if ok && have >= modRev {
		return false
	}
	if t, dead := c.tomb[key]; dead {
		if t >= modRev {
			return false
		}
		delete(c.tomb, key)
	}
	return true
}

func (c *cache) putLocked(key string, value []byte, modRev int64) {
	switch {
	case strings.HasPrefix(key, prefixJobs):
		id := key[len(prefixJobs):]
		e, ok := c.jobs[id]
		if !c.newer(key, modRev, e.modRev, ok) {
			return
		}
		if j := c.ownJob(id, value); j != nil {
			c.setJobLocked(j, modRev)
			return
		}
		id, je, run, ran, err := decodeEntry(value, modRev)
		if err != nil {
			c.log.Error("skipping unreadable job record", "key", key, "err", err)
			return
		}
		c.learnRunLocked(id, modRev, run, ran)
		c.setEntryLocked(id, je)
	case strings.HasPrefix(key, prefixReservations):
		name := key[len(prefixReservations):]
		e, ok := c.reservations[name]
		if !c.newer(key, modRev, e.modRev, ok) {
			return
		}
		r, err := decodeReservation(value)
		if err != nil {
			c.log.Error("skipping unreadable reservation record", "key", key, "err", err)
			return
		}
		c.reservations[name] = reservationEntry{r: r, modRev: modRev}
		c.worldGen++
	case strings.HasPrefix(key, prefixTokens):
		h := key[len(prefixTokens):]
		e, ok := c.tokens[h]
		if !c.newer(key, modRev, e.modRev, ok) {
			return
		}
		var t tokenRecord
		if err := json.Unmarshal(value, &t); err != nil {
			c.log.Error("skipping unreadable token record", "key", key, "err", err)
			return
		}
		use := e.lastUse
		if use == nil {
			use = new(atomic.Int64)
		}
		c.tokens[h] = tokenEntry{p: Principal{Tenant: t.Tenant, Admin: t.Admin, Node: t.Node, Endpoint: t.Endpoint, Token: t.Name,
			Metrics: t.Scope == ScopeMetrics, Gateway: t.Scope == ScopeGateway},
			expires: t.ExpiresAt, lastUse: use, modRev: modRev}
	case strings.HasPrefix(key, prefixNodes):
		n := key[len(prefixNodes):]
		e, ok := c.nodes[n]
		if !c.newer(key, modRev, e.modRev, ok) {
			return
		}
		var r nodeRecord
		if err := json.Unmarshal(value, &r); err != nil {
			c.log.Error("skipping unreadable node record", "key", key, "err", err)
			return
		}
		c.nodes[n] = nodeEntry{health: r.health(), rec: r, modRev: modRev}
		c.worldGen++
	case strings.HasPrefix(key, prefixQuotas):
		c.putQuotaLocked(key, value, modRev)
	case key == keyFence:
		c.fence = max(c.fence, modRev)
	}
}

func (c *cache) setJobLocked(j *model.Job, modRev int64) {
	run, ran := sampleOf(j)
	c.learnRunLocked(j.ID, modRev, run, ran)
	c.setEntryLocked(j.ID, entryOf(j, modRev))
}

// learnRunLocked gives the run book the run of job id, written at modRev,
// once: when the write ends the job (ran: a clean run, sampleOf).
func (c *cache) learnRunLocked(id string, modRev int64, run runSample, ran bool) {
	if !ran {
		return
	}
	if e, ok := c.jobs[id]; ok && (e.modRev >= modRev || e.state.Terminal()) {
		return // not newer, or learned when it ended
	}
	c.runs.add(run)
}

func (c *cache) setEntryLocked(id string, n jobEntry) {
	e, ok := c.jobs[id]
	if ok && e.modRev >= n.modRev {
		return
	}
	wasLive := ok && !e.state.Terminal()
	if ok {
		c.count(e.state, -1)
		if wasLive {
			c.liveBy[e.tenant]--
		}
	}
	c.jobs[id] = n
	if n.state.Terminal() {
		delete(c.live, id)
	} else {
		c.live[id] = struct{}{}
		c.liveBy[n.tenant]++
	}
	if wasLive == n.state.Terminal() {
		c.movedLocked(id)
	}
	c.count(n.state, +1)
	c.jobRev = max(c.jobRev, n.modRev)
	close(c.jobChanged)
	c.jobChanged = make(chan struct{})
}

// jobsChanged returns the highest job ModRev the cache holds and a channel
// closed at the next change of a job.
func (c *cache) jobsChanged() (int64, <-chan struct{}) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.jobRev, c.jobChanged
}

func (c *cache) count(s model.State, d int) {
	c.counts[s] += d
	c.onCount(s, c.counts[s])
}

func (c *cache) delLocked(key string, rev int64) {
	if t, ok := c.tomb[key]; ok && t >= rev {
		return
	}
	switch {
	case strings.HasPrefix(key, prefixJobs):
		id := key[len(prefixJobs):]
		if e, ok := c.jobs[id]; ok {
			if e.modRev > rev {
				return
			}
			c.count(e.state, -1)
			if !e.state.Terminal() {
				c.liveBy[e.tenant]--
				c.movedLocked(id)
			}
			delete(c.jobs, id)
			delete(c.live, id)
		}
	case strings.HasPrefix(key, prefixReservations):
		name := key[len(prefixReservations):]
		if e, ok := c.reservations[name]; ok {
			if e.modRev > rev {
				return
			}
			delete(c.reservations, name)
			c.worldGen++
		}
	case strings.HasPrefix(key, prefixTokens):
		h := key[len(prefixTokens):]
		if e, ok := c.tokens[h]; ok {
			if e.modRev > rev {
				return
			}
			delete(c.tokens, h)
		}
	case strings.HasPrefix(key, prefixNodes):
		n := key[len(prefixNodes):]
		if e, ok := c.nodes[n]; ok {
			if e.modRev > rev {
				return
			}
			delete(c.nodes, n)
			c.worldGen++
		}
	case strings.HasPrefix(key, prefixQuotas):
		if c.delQuotaLocked(key, rev) {
			return
		}
	default:
		return
	}
	c.tomb[key] = rev
}

// job returns the cached job and its ModRev; ok is true and the job nil
// when the job ended and the cache keeps it compact (Server.job reads it).
func (c *cache) job(id string) (ref jobRef, modRev int64, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.jobs[id]
	return jobRef{id: id, job: e.job}, e.modRev, ok
}

// jobTenant returns the tenant of the job with id, ended or not.
func (c *cache) jobTenant(id string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.jobs[id]
	if !ok {
		return "", false
	}
	return e.tenant.Value(), true
}

// jobList returns the jobs whose tenant and state keep accepts, newest
// first.
func (c *cache) jobList(keep func(tenant string, st model.State) bool) []jobRef {
	type item struct {
		ref       jobRef
		submitted time.Time
	}
	c.mu.RLock()
	items := make([]item, 0, 64)
	for id, e := range c.jobs {
		if keep(e.tenant.Value(), e.state) {
			items = append(items, item{jobRef{id: id, job: e.job}, e.submitted})
		}
	}
	c.mu.RUnlock()
	sort.Slice(items, func(a, b int) bool {
		x, y := items[a], items[b]
		if !x.submitted.Equal(y.submitted) {
			return x.submitted.After(y.submitted)
		}
		return x.ref.id > y.ref.id
	})
	out := make([]jobRef, len(items))
	for i, it := range items {
		out[i] = it.ref
	}
	return out
}

// wholeJobs returns the jobs the cache holds whole (not ended, or ended
// replicas) for which keep reports true, newest first.
func (c *cache) wholeJobs(keep func(*model.Job) bool) []*model.Job {
	c.mu.RLock()
	out := make([]*model.Job, 0, 64)
	for _, e := range c.jobs {
		if e.job != nil && keep(e.job) {
			out = append(out, e.job)
		}
	}
	c.mu.RUnlock()
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if !x.Status.SubmittedAt.Equal(y.Status.SubmittedAt) {
			return x.Status.SubmittedAt.After(y.Status.SubmittedAt)
		}
		return x.ID > y.ID
	})
	return out
}

// holding returns the jobs that hold capacity now.
func (c *cache) holding() []*model.Job {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*model.Job
	for id := range c.live {
		if e := c.jobs[id]; e.job.Status.State.Holds() {
			out = append(out, e.job)
		}
	}
	return out
}

func (c *cache) token(hash string) (Principal, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.tokens[hash]
	return e.p, ok
}

func (c *cache) hasAdminToken() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.tokens {
		if e.p.Admin {
			return true
		}
	}
	return false
}

// reservationList returns the reservations created through the API, by name.
func (c *cache) reservationList() []model.Reservation {
	c.mu.RLock()
	out := make([]model.Reservation, 0, len(c.reservations))
	for _, e := range c.reservations {
		out = append(out, e.r)
	}
	c.mu.RUnlock()
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

func (c *cache) reservation(name string) (model.Reservation, int64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.reservations[name]
	return e.r, e.modRev, ok
}

func (c *cache) nodeHealth() (map[string]model.Health, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[string]model.Health, len(c.nodes))
	for n, e := range c.nodes {
		out[n] = e.health
	}
	return out, c.worldGen
}

// node returns the node's record and its ModRev.
func (c *cache) node(name string) (nodeRecord, int64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.nodes[name]
	return e.rec, e.modRev, ok
}

func (c *cache) gen() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.worldGen
}

// snapshot is one consistent read of what a cycle needs.
type snapshot struct {
	jobs   []*model.Job // queued and holding jobs
	modRev map[string]int64
	fence  int64
	gen    uint64
	// blocked is the Blocked jobs (their ModRevs are in modRev), and
	// preds the state of every job they wait for that the cache knows.
	blocked []*model.Job
	preds   map[string]model.State
}

func (c *cache) snapshot() snapshot {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := c.counts[model.StateQueued] + c.counts[model.StatePreparing] + c.counts[model.StateRunning] + c.counts[model.StatePreempted]
	s := snapshot{jobs: make([]*model.Job, 0, n), modRev: make(map[string]int64, n), fence: c.fence, gen: c.worldGen}
	// In ID order: the core must see the same input for the same state.
	for _, id := range c.liveOrderLocked() {
		e := c.jobs[id]
		st := e.job.Status.State
		if st == model.StateQueued || st.Holds() {
			s.jobs = append(s.jobs, e.job)
			s.modRev[id] = e.modRev
		}
		if st == model.StateBlocked {
			c.addBlockedLocked(&s, e)
		}
	}
	return s
}

// stateCounts returns how many jobs are in each state.
func (c *cache) stateCounts() map[model.State]int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[model.State]int, len(c.counts))
	for s, n := range c.counts {
		out[s] = n
	}
	return out
}

// liveOf returns how many jobs of tenant have not ended.
func (c *cache) liveOf(tenant string) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.liveBy[unique.Make(tenant)]
}

// endedSince returns the IDs of the ended jobs that ended at t or later.
func (c *cache) endedSince(t time.Time) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for id, e := range c.jobs {
		if e.state.Terminal() && e.ended >= t.Unix() {
			out = append(out, id)
		}
	}
	return out
}

// endedBefore returns up to n ended jobs that ended before t, as keys at
// the ModRevs the cache holds.
func (c *cache) endedBefore(t time.Time, n int) []store.KV {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []store.KV
	for id, e := range c.jobs {
		if len(out) == n {
			break
		}
		if e.state.Terminal() && e.ended != 0 && e.ended < t.Unix() {
			out = append(out, store.KV{Key: prefixJobs + id, ModRev: e.modRev})
		}
	}
	return out
}
