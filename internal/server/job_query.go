package server

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// JobQuery selects jobs for a listing or a bulk action: a job matches when
// it matches every field that is set.
type JobQuery struct {
	// States keeps jobs in any of these states.
	States []model.State
	// Tenant keeps one tenant's jobs.
	Tenant string
	// Name keeps jobs whose name contains it or, when it has a glob
	// character (* ? [), whose whole name matches it as path.Match reads
	// it. CheckNamePattern says whether it is well formed.
	Name string
}

// CheckNamePattern returns an error when name is a malformed glob.
func CheckNamePattern(name string) error {
	if !isGlob(name) {
		return nil
	}
	if _, err := path.Match(name, ""); err != nil {
		return fmt.Errorf("%q is not a valid glob (* ? [a-z] match within a name): %w", name, err)
	}
	return nil
}

func isGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// Match reports whether j matches q.
func (q JobQuery) Match(j *model.Job) bool {
	return q.matchTenantState(j.Spec.Tenant, j.Status.State) && q.matchName(j.Spec.Name)
}

func (q JobQuery) matchTenantState(tenant string, st model.State) bool {
	if q.Tenant != "" && tenant != q.Tenant {
		return false
	}
	if len(q.States) == 0 {
		return true
	}
	for _, s := range q.States {
		if s == st {
			return true
		}
	}
	return false
}

func (q JobQuery) matchName(name string) bool {
	switch {
	case q.Name == "":
		return true
	case strings.Contains(name, q.Name):
		return true // also "sweep[3]", an array job's name, as written
	case isGlob(q.Name):
		ok, _ := path.Match(q.Name, name)
		return ok
	}
	return false
}

// QueryJobs returns every job p may see that matches q, newest first. Jobs
// that ended are read from the store, one Get each.
func (s *Server) QueryJobs(ctx context.Context, p Principal, q JobQuery) ([]*model.Job, error) {
	keep := func(tenant string, st model.State) bool { return p.Sees(tenant) && q.matchTenantState(tenant, st) }
	refs := s.cache.jobList(keep)
	out := make([]*model.Job, 0, len(refs))
	for _, ref := range refs {
		j, ok, err := s.jobFrom(ctx, ref)
		if err != nil {
			return nil, err
		}
		// The store may be ahead of the cache: match what it holds.
		if ok && p.Sees(j.Spec.Tenant) && q.Match(j) {
			out = append(out, j)
		}
	}
	return out, nil
}

// MaxJobPage is the most jobs one page of a listing holds.
const MaxJobPage = 1000

// maxPageScan bounds the records one page reads while it looks for
// matches; a selective query returns a short page and a cursor instead of
// reading the whole store in one request.
const maxPageScan = 20 * MaxJobPage

// JobPage is one page of a paged listing.
type JobPage struct {
	Jobs []*model.Job
	// Next continues the listing after this page; nil when it is the last.
	Next *JobCursor
}

// JobCursor is where a paged listing continues: after job ID After, in
// the store as it was at revision Rev, so that the pages of one listing
// neither repeat nor skip a job however the jobs change meanwhile.
type JobCursor struct {
	Rev   int64
	After string
}

// PageJobs returns at most limit jobs that p may see and that match q, in
// ID order (by name, then submit time: IDs are the name and a sortable
// time), from the store's revision at the first page. Start with a nil
// cursor; pass each page's Next to read the next. A page may be short while
// Next is set. A cursor whose revision the store no longer keeps is a
// Conflict: list again from the start.
func (s *Server) PageJobs(ctx context.Context, p Principal, q JobQuery, from *JobCursor, limit int) (JobPage, error) {
	if limit < 1 || limit > MaxJobPage {
		return JobPage{}, refuse(CodeInvalidSpec, "limit", "is %d, want 1 to %d", limit, MaxJobPage)
	}
	var rev int64
	after := ""
	if from != nil {
		rev, after = from.Rev, from.After
	}
	var page JobPage
	scanned := 0
	for {
		batch := min(max(limit-len(page.Jobs), 64), MaxJobPage)
		kvs, at, more, err := s.st.ListPage(ctx, prefixJobs, prefixJobsAfter(after), batch, rev)
		switch {
		case errors.Is(err, store.ErrCompacted):
			return JobPage{}, refuse(CodeConflict, "continue", "the listing's revision %d is no longer kept; list again without continue", rev)
		case errors.Is(err, store.ErrInvalid):
			return JobPage{}, refuse(CodeInvalidSpec, "continue", "%v", err)
		case err != nil:
			return JobPage{}, fmt.Errorf("list jobs: %w", err)
		}
		rev = at
		for i, kv := range kvs {
			scanned++
			j, err := decodeJob(kv.Value)
			if err != nil {
				return JobPage{}, fmt.Errorf("read %s: %w", kv.Key, err)
			}
			after = j.ID
			if p.Sees(j.Spec.Tenant) && q.Match(j) {
				page.Jobs = append(page.Jobs, j)
			}
			if len(page.Jobs) == limit || scanned >= maxPageScan {
				if more || i < len(kvs)-1 {
					page.Next = &JobCursor{Rev: rev, After: after}
				}
				return page, nil
			}
		}
		if !more {
			return page, nil
		}
	}
}

// prefixJobsAfter is the store key a listing continues after: none for a
// listing's start.
func prefixJobsAfter(id string) string {
	if id == "" {
		return ""
	}
	return prefixJobs + id
}
