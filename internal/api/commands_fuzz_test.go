package api

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/server"
)

// checkError fails unless e is nil or a 4xx error naming one of fields.
func checkError(t *testing.T, e *Error, fields ...string) {
	t.Helper()
	if e == nil {
		return
	}
	if s := statusOf[e.Code]; s < 400 || s >= 500 {
		t.Fatalf("error %+v has status %d, want a 4xx", e, s)
	}
	if strings.Contains(e.Message, "unknown field") {
		return // it names the field the client sent
	}
	for _, f := range fields {
		if e.Field == f {
			return
		}
	}
	t.Fatalf("error %+v names field %q, want one of %v", e, e.Field, fields)
}

func FuzzJobListQuery(f *testing.F) {
	for _, s := range []string{"state=Queued", "state=queued,running&state=Failed", "name=train-*&limit=10",
		"name=[", "limit=0", "limit=1001", "continue=c1.MTI6YQ", "continue=c1.%FF", "limit=x&continue=", "tenant=acme",
		"state=,,&name=%00", "continue=" + encodeCursor(server.JobCursor{Rev: 7, After: "a-1"})} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, raw string, admin bool) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		p := server.Principal{Tenant: "research", Admin: admin}
		jq, e := parseJobQuery(q, p)
		checkError(t, e, "state", "tenant", "name")
		if e == nil {
			if !admin && jq.Tenant != "" && jq.Tenant != "research" {
				t.Fatalf("a tenant token's query names tenant %q", jq.Tenant)
			}
			if server.CheckNamePattern(jq.Name) != nil {
				t.Fatalf("accepted a bad name pattern %q", jq.Name)
			}
		}
		paged, limit, from, e := parsePage(q)
		checkError(t, e, "limit", "continue")
		if e == nil && paged && (limit < 1 || limit > server.MaxJobPage) {
			t.Fatalf("page size %d", limit)
		}
		if from != nil && (from.Rev < 1 || from.After == "") {
			t.Fatalf("cursor %+v", *from)
		}
	})
}

func FuzzContinueToken(f *testing.F) {
	for _, s := range []string{"", "c1.", "c1.MTI6YQ", "c1.LTE6YQ", "c2.MTI6YQ", "c1.OTk5OTk5OTk5OTk5OTk5OTk5OTk6eA", "c1.MTI6"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeCursor(s)
		if err != nil {
			if !strings.Contains(err.Error(), "continue token") {
				t.Fatalf("error %q does not say what was wrong", err)
			}
			return
		}
		if c.Rev < 1 || c.After == "" {
			t.Fatalf("decoded %+v", c)
		}
		if back, err := decodeCursor(encodeCursor(c)); err != nil || back != c {
			t.Fatalf("round trip %+v -> %+v, %v", c, back, err)
		}
	})
}

func FuzzTokenRequest(f *testing.F) {
	for _, s := range []string{`{"tenant":"acme"}`, `{"tenant":"acme","ttl":"720h","name":"ci"}`, `{"node":"n1","ttl":"30d"}`,
		`{"tenant":"a","node":"b"}`, `{"ttl":"-1h","tenant":"a"}`, `{"ttl":"99999999999d","tenant":"a"}`, `{"ttl":3}`,
		`{"tenant":"a","ttl":"1ns"}`, `{}`, `[`, `{"tenant":"a","extra":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o, e := parseTokenRequest(body)
		checkError(t, e, "", "tenant", "node", "ttl", "name", "extra")
		if e != nil {
			return
		}
		if (o.Tenant == "") == (o.Node == "") {
			t.Fatalf("accepted %+v: want tenant or node", o)
		}
		if o.TTL != 0 && (o.TTL < time.Second || o.TTL > server.MaxTokenTTL) {
			t.Fatalf("accepted ttl %v", o.TTL)
		}
	})
}

func FuzzAccountingQuery(f *testing.F) {
	for _, s := range []string{"", "since=30d", "since=2026-11-01&until=2026-12-01", "by=job", "by=node", "since=12h&until=1h",
		"since=1h&until=12h", "since=99999d", "since=2026-11-01T00:00:00Z", "since=-5h", "tenant=acme", "since=0d"} {
		f.Add(s, false)
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw string, admin bool) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		a, e := parseAccounting(q, server.Principal{Tenant: "research", Admin: admin}, now)
		checkError(t, e, "since", "until", "by", "tenant")
		if e != nil {
			return
		}
		if !a.Until.After(a.Since) || a.Until.Sub(a.Since) > server.MaxAccountingPeriod {
			t.Fatalf("period %v to %v", a.Since, a.Until)
		}
		if a.By != server.ByJob && a.By != server.ByTenant {
			t.Fatalf("by %q", a.By)
		}
		if !admin && a.Tenant != "" && a.Tenant != "research" {
			t.Fatalf("a tenant token's report names tenant %q", a.Tenant)
		}
	})
}

func FuzzJobChange(f *testing.F) {
	for _, s := range []string{`{"priority":"standard:5"}`, `{"priority":{"class":"spot","value":3}}`, `{"priority":"urgent"}`,
		`{"priority":null}`, `{}`, `{"priority":5}`, `{"priority":{"class":"x"}}`, `{"priority":"spot:1e9"}`, `{"name":"x"}`,
		`{"begin":"2026-12-24T02:00:00Z"}`, `{"begin":""}`, `{"begin":"tomorrow","priority":"spot"}`, `{"begin":null}`, `{"begin":5}`,
		`{"exclude_nodes":["n1","n2"]}`, `{"exclude_nodes":[]}`, `{"exclude_nodes":null}`, `{"exclude_nodes":"n1"}`, `{"exclude_nodes":[5]}`, `{"nodes":["n1"],"exclude_nodes":["n1"]}`, `{"nodes":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, e := parseJobChange(body)
		checkError(t, e, "", "priority", "begin", "nodes", "exclude_nodes", "name")
	})
}

func TestParseTTL(t *testing.T) {
	for in, want := range map[string]time.Duration{"720h": 720 * time.Hour, "30d": 30 * 24 * time.Hour, "1s": time.Second,
		" 90m ": 90 * time.Minute} {
		if got, err := parseTTL(in); err != nil || got != want {
			t.Errorf("parseTTL(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "0s", "500ms", "-1h", "d", "1.5d", "3651d", "87601h", "forever"} {
		if _, err := parseTTL(in); err == nil {
			t.Errorf("parseTTL(%q) accepted", in)
		}
	}
}
