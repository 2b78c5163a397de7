package server

import (
	"iter"
	"slices"
	"strings"

	"github.com/allot-dev/allot/internal/model"
)

// What a tenant reads of its own jobs names no other tenant's objects. The
// core explains each decision with what it knows: the job that preempted
// this one, the job or reservation that nodes are kept for and its owner
// (package sched). The administrator and allot plan need those names; a
// tenant reading its job gets each other tenant's job ID, reservation name
// and tenant name replaced by what it is ("another tenant's job"), so a
// customer does not learn who else runs on the fleet or what their jobs
// are called.

// ForViewer returns j as p may read it: j itself for anyone but a tenant,
// else a copy whose explanations are redacted (redact). j is not changed.
func (s *Server) ForViewer(p Principal, j *model.Job) *model.Job {
	if p.Tenant == "" || j == nil {
		return j
	}
	c := *j
	c.Status.Detail = s.redact(p.Tenant, j.Status.Detail)
	if len(j.Status.Attempts) > 0 {
		c.Status.Attempts = append([]model.Attempt(nil), j.Status.Attempts...)
		for i := range c.Status.Attempts {
			c.Status.Attempts[i].Detail = s.redact(p.Tenant, c.Status.Attempts[i].Detail)
		}
	}
	return &c
}

// WhyForViewer returns why as p may read it: its job as ForViewer gives
// it, and the estimates' words (its own and each region's) redacted too.
func (s *Server) WhyForViewer(p Principal, why Why) Why {
	if p.Tenant == "" {
		return why
	}
	why.Job = s.ForViewer(p, why.Job)
	why.Estimate.Why = s.redact(p.Tenant, why.Estimate.Why)
	why.Estimate.How = s.redact(p.Tenant, why.Estimate.How)
	why.Regions = slices.Clone(why.Regions)
	for i := range why.Regions {
		e := &why.Regions[i].Estimate
		e.Why, e.How = s.redact(p.Tenant, e.Why), s.redact(p.Tenant, e.How)
	}
	return why
}

// redact replaces in text, read as words of letters, digits, '.', '_' and
// '-' (the characters of job IDs and of the names the API accepts), each
// word that is another tenant's job ID, reservation name or tenant name.
func (s *Server) redact(viewer, text string) string {
	if text == "" {
		return text
	}
	w := s.world()
	var b strings.Builder
	changed, last := false, 0
	for i, j := range words(text) {
		b.WriteString(text[last:i])
		last = j
		// A word may end a sentence: "preempted for acme." names acme.
		word := text[i:j]
		if other := s.foreignWord(w, viewer, word); other != "" {
			word, changed = other, true
		} else if name := strings.TrimRight(word, "."); name != word {
			if other := s.foreignWord(w, viewer, name); other != "" {
				word, changed = other+word[len(name):], true
			}
		}
		b.WriteString(word)
	}
	b.WriteString(text[last:])
	if !changed {
		return text
	}
	return b.String()
}

// words yields the start and end of each word of text: each longest run
// of wordByte.
func words(text string) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		for i := 0; i < len(text); {
			if !wordByte(text[i]) {
				i++
				continue
			}
			j := i
			for j < len(text) && wordByte(text[j]) {
				j++
			}
			if !yield(i, j) {
				return
			}
			i = j
		}
	}
}

func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// foreignWord says what word is when it names another tenant's object,
// and returns "" otherwise.
func (s *Server) foreignWord(w *world, viewer, word string) string {
	if tenant, ok := s.cache.jobTenant(word); ok {
		if tenant != viewer {
			return "another tenant's job"
		}
		return ""
	}
	for _, r := range w.tenancy.Reservations {
		if r.Name == word {
			if r.Owner != viewer {
				return "another tenant's reservation"
			}
			return ""
		}
	}
	if word != viewer && w.tenants[word] {
		return "another tenant"
	}
	return ""
}
