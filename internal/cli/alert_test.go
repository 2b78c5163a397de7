package cli

import (
	"net/url"
	"strings"
	"testing"
)

func TestParseWebhookURL(t *testing.T) {
	for _, tt := range []struct {
		in, want, err string
	}{
		{"", "", ""},
		{"https://hooks.example.com/allot?key=k", "https://hooks.example.com/allot?key=k", ""},
		{"http://127.0.0.1:9093/alerts", "http://127.0.0.1:9093/alerts", ""},
		{"hooks.example.com/allot", "", "http:// or https://"},
		{"ftp://h/x", "", "http:// or https://"},
		{"http:///x", "", "no host"},
		{"https://user:pw@h/x", "", "credentials"},
		{"http://h/%zz", "", "invalid URL escape"},
	} {
		got, err := parseWebhookURL(tt.in)
		if tt.err == "" && (err != nil || got != tt.want) || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("parseWebhookURL(%q) = %q, %v; want %q, error with %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func FuzzParseWebhookURL(f *testing.F) {
	for _, s := range []string{"", "https://h/x?k=v", "http://[::1]:80/", "ftp://h", "http://u@h/", "http://h/%zz", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseWebhookURL(s)
		if err != nil || got == "" {
			return
		}
		u, err := url.Parse(got)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
			t.Fatalf("parseWebhookURL(%q) accepted %q (%v)", s, got, err)
		}
		if again, err := parseWebhookURL(got); err != nil || again != got {
			t.Fatalf("not stable: %q -> %q -> %q, %v", s, got, again, err)
		}
	})
}

func TestAlertLabels(t *testing.T) {
	if got := alertLabels(map[string]string{"region": "eu", "node": "n1"}); got != "node=n1,region=eu" {
		t.Errorf("alertLabels = %q", got)
	}
	if got := alertLabels(nil); got != "" {
		t.Errorf("alertLabels(nil) = %q", got)
	}
}
