package api

import (
	"net/url"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/server"
)

func TestParseCost(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	research := server.Principal{Tenant: "research"}
	for _, c := range []struct {
		raw   string
		p     server.Principal
		by    string
		since time.Time
		field string
	}{
		{"", research, "tenant", now.Add(-30 * 24 * time.Hour), ""},
		{"by=region&since=7d", research, "region", now.Add(-7 * 24 * time.Hour), ""},
		{"by=sku&since=2026-11-01", research, "sku", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), ""},
		{"by=job&tenant=research", research, "job", now.Add(-30 * 24 * time.Hour), ""},
		{"by=rack", research, "", time.Time{}, "by"},
		{"tenant=acme", research, "", time.Time{}, "tenant"},
		{"since=tomorrow", research, "", time.Time{}, "since"},
		{"until=2020-01-01&since=2021-01-01", research, "", time.Time{}, "since"},
		{"until=x", research, "", time.Time{}, "until"},
	} {
		q, err := url.ParseQuery(c.raw)
		if err != nil {
			t.Fatal(err)
		}
		got, e := parseCost(q, c.p, now)
		switch {
		case c.field != "" && (e == nil || e.Field != c.field || statusOf[e.Code] != 400 && statusOf[e.Code] != 403):
			t.Errorf("%q: error %+v, want a 4xx naming %s", c.raw, e, c.field)
		case c.field == "" && e != nil:
			t.Errorf("%q: %+v", c.raw, e)
		case c.field == "" && (got.By != c.by || !got.Since.Equal(c.since)):
			t.Errorf("%q: by %q since %v, want %q %v", c.raw, got.By, got.Since, c.by, c.since)
		}
	}
}

func FuzzCostQuery(f *testing.F) {
	for _, s := range []string{"", "by=region", "by=sku&since=7d", "by=job&until=1h", "by=rack", "since=2026-11-01&until=2026-12-01",
		"tenant=acme", "since=99999d", "by=tenant&by=region", "since=-5h", "by=%00"} {
		f.Add(s, false)
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw string, admin bool) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		c, e := parseCost(q, server.Principal{Tenant: "research", Admin: admin}, now)
		checkError(t, e, "since", "until", "by", "tenant")
		if e != nil {
			return
		}
		if !c.Until.After(c.Since) || c.Until.Sub(c.Since) > server.MaxAccountingPeriod {
			t.Fatalf("period %v to %v", c.Since, c.Until)
		}
		switch c.By {
		case server.ByTenant, server.ByRegion, server.BySKU, server.ByJob:
		default:
			t.Fatalf("by %q", c.By)
		}
		if !admin && c.Tenant != "" && c.Tenant != "research" {
			t.Fatalf("a tenant token's report names tenant %q", c.Tenant)
		}
	})
}
