package ui

import (
	"embed"
	"net/http"
)

//go:embed assets
var assets embed.FS

// ContentSecurityPolicy is the policy of every /ui response: same-origin
// script, style and fetch only, no inline script, no framing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// types are the files Handler serves and their content types.
var types = map[string]string{
	"index.html": "text/html; charset=utf-8",
	"app.js":     "text/javascript; charset=utf-8",
	"style.css":  "text/css; charset=utf-8",
}

// Serve writes the dashboard's file name ("" means index.html), or 404.
func Serve(w http.ResponseWriter, name string) {
	if name == "" {
		name = "index.html"
	}
	ctype, ok := types[name] // only these names: no path reaches the FS
	var body []byte
	var err error
	if ok {
		body, err = assets.ReadFile("assets/" + name)
	}
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	if !ok || err != nil {
		http.Error(w, "no dashboard file "+name, http.StatusNotFound)
		return
	}
	h.Set("Content-Type", ctype)
	_, _ = w.Write(body)
}
