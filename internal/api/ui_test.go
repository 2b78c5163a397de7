package api

import (
	"regexp"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/ui"
)

var inlineHandler = regexp.MustCompile(`\son[a-z]+\s*=`)

// TestDashboard checks /ui is served without a token, under a strict
// Content-Security-Policy, with its script as a file and nothing inline.
func TestDashboard(t *testing.T) {
	e := newEnv(t, 0, 0)
	if rec := e.do("GET", "/ui", "", nil); rec.Code != 301 || rec.Header().Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d to %q, want 301 to /ui/", rec.Code, rec.Header().Get("Location"))
	}
	for _, tc := range []struct{ path, ctype, has string }{
		{"/ui/", "text/html", `<script src="/ui/app.js"`},
		{"/ui/app.js", "text/javascript", "/v1/jobs"},
		{"/ui/style.css", "text/css", ".gpu"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			rec := e.do("GET", tc.path, "", nil)
			if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), tc.ctype) {
				t.Fatalf("%d %q, want 200 %s", rec.Code, rec.Header().Get("Content-Type"), tc.ctype)
			}
			if csp := rec.Header().Get("Content-Security-Policy"); csp != ui.ContentSecurityPolicy ||
				strings.Contains(csp, "unsafe") || !strings.Contains(csp, "default-src 'none'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("X-Frame-Options") != "DENY" {
				t.Errorf("headers %v lack nosniff or DENY", rec.Header())
			}
			body := rec.Body.String()
			if !strings.Contains(body, tc.has) {
				t.Errorf("body lacks %q", tc.has)
			}
			if tc.ctype == "text/html" && (strings.Contains(body, "<script>") || strings.Contains(body, "http://") ||
				strings.Contains(body, "https://") || inlineHandler.MatchString(body)) {
				t.Errorf("page has inline script, an inline handler or an outside resource:\n%s", body)
			}
		})
	}
	for _, p := range []string{"/ui/nope.js", "/ui/../api.go", "/ui/assets/app.js"} {
		if rec := e.do("GET", p, "", nil); rec.Code == 200 {
			t.Errorf("GET %s: 200, want an error", p)
		}
	}
}
