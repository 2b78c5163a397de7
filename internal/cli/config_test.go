package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/allot-dev/allot/internal/client"
)

// isolate clears the environment that client commands read, so that the
// machine running the tests cannot change their outcome.
func isolate(t *testing.T) {
	t.Helper()
	t.Setenv("ALLOT_SERVER", "")
	t.Setenv("ALLOT_TOKEN", "")
	t.Setenv("ALLOT_CONFIG", "")
	t.Setenv("HOME", t.TempDir())
}

// runCLI runs allot with args and returns its output and exit code.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// exchange is one request a stub server expects and its canned answer.
type exchange struct {
	method, path, query string // path as sent, escaped; query raw
	token               string // expected bearer token
	status              int
	body                string
	header              map[string]string
	checkBody           func(t *testing.T, body []byte)
	// key is the Idempotency-Key expected: "" unchecked, "*" any.
	key string
}

// stub serves ex for every request, failing the test on a request that
// does not match it; it returns the server's URL and a counter of requests.
func stub(t *testing.T, ex exchange) (string, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		body, _ := io.ReadAll(r.Body)
		if r.Method != ex.method || r.URL.EscapedPath() != ex.path || r.URL.RawQuery != ex.query {
			t.Errorf("request %s %s?%s, want %s %s?%s", r.Method, r.URL.EscapedPath(), r.URL.RawQuery, ex.method, ex.path, ex.query)
		}
		if got, want := r.Header.Get("Authorization"), "Bearer "+ex.token; ex.token != "" && got != want {
			t.Errorf("Authorization %q, want %q", got, want)
		}
		if ex.checkBody != nil {
			ex.checkBody(t, body)
		}
		if got := r.Header.Get("Idempotency-Key"); ex.key != "" && (got == "" || ex.key != "*" && got != ex.key) {
			t.Errorf("Idempotency-Key %q, want %q", got, ex.key)
		}
		for k, v := range ex.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(ex.status)
		io.WriteString(w, ex.body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

func TestResolvePrecedence(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("server: http://file:1\ntoken: file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	homeCfg := filepath.Join(home, ".config", "allot", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(homeCfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(homeCfg, []byte("server: http://home:1\ntoken: home-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                  string
		flagServer, flagToken string
		env                   map[string]string
		wantServer, wantToken string
	}{
		{"nothing: default server, no token", "", "", nil, DefaultServer, ""},
		{"home config", "", "", map[string]string{"HOME": home}, "http://home:1", "home-token"},
		{"ALLOT_CONFIG over home", "", "", map[string]string{"HOME": home, "ALLOT_CONFIG": cfg}, "http://file:1", "file-token"},
		{"env over file", "", "", map[string]string{"ALLOT_CONFIG": cfg, "ALLOT_SERVER": "http://env:1", "ALLOT_TOKEN": "env-token"},
			"http://env:1", "env-token"},
		{"flag over env", "http://flag:1", "flag-token",
			map[string]string{"ALLOT_CONFIG": cfg, "ALLOT_SERVER": "http://env:1", "ALLOT_TOKEN": "env-token"},
			"http://flag:1", "flag-token"},
		{"each setting on its own", "", "flag-token", map[string]string{"ALLOT_CONFIG": cfg, "ALLOT_SERVER": "http://env:1"},
			"http://env:1", "flag-token"},
		{"file fills what env leaves", "", "", map[string]string{"ALLOT_CONFIG": cfg, "ALLOT_TOKEN": "env-token"},
			"http://file:1", "env-token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := connection{server: tt.flagServer, token: tt.flagToken}
			server, token, err := c.resolve(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if server != tt.wantServer || token != tt.wantToken {
				t.Errorf("got %s %q, want %s %q", server, token, tt.wantServer, tt.wantToken)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("server: http://x:1\ntokn: typo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"missing ALLOT_CONFIG": filepath.Join(dir, "none.yaml"), "unknown key": bad} {
		t.Run(name, func(t *testing.T) {
			isolate(t)
			t.Setenv("ALLOT_CONFIG", path)
			_, errOut, code := runCLI(t, "job", "list")
			if code != ExitUsage || !strings.Contains(errOut, "config") {
				t.Errorf("exit %d, stderr %q; want %d naming the config", code, errOut, ExitUsage)
			}
		})
	}
}

// TestPrecedenceThroughRun drives a command with a flag, the environment
// and a config file naming three different servers and tokens.
func TestPrecedenceThroughRun(t *testing.T) {
	list := func(token string) exchange {
		return exchange{method: "GET", path: "/v1/jobs", query: liveQuery, token: token, status: 200, body: `{"jobs":[]}`}
	}
	fileURL, fileHits := stub(t, list("file-token"))
	envURL, envHits := stub(t, list("env-token"))
	flagURL, flagHits := stub(t, list("flag-token"))
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("server: "+fileURL+"\ntoken: file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	isolate(t)
	t.Setenv("ALLOT_CONFIG", cfg)
	if _, errOut, code := runCLI(t, "job", "list"); code != 0 || fileHits.Load() != 1 {
		t.Fatalf("file: exit %d, %d hits: %s", code, fileHits.Load(), errOut)
	}
	t.Setenv("ALLOT_SERVER", envURL)
	t.Setenv("ALLOT_TOKEN", "env-token")
	if _, errOut, code := runCLI(t, "job", "list"); code != 0 || envHits.Load() != 1 {
		t.Fatalf("env: exit %d, %d hits: %s", code, envHits.Load(), errOut)
	}
	if _, errOut, code := runCLI(t, "job", "list", "--server", flagURL, "--token", "flag-token"); code != 0 || flagHits.Load() != 1 {
		t.Fatalf("flag: exit %d, %d hits: %s", code, flagHits.Load(), errOut)
	}
	if fileHits.Load() != 1 || envHits.Load() != 1 {
		t.Errorf("a lower-precedence server was asked: file %d, env %d", fileHits.Load(), envHits.Load())
	}
}

// commandCase runs one client command against a stub answering ex.
type commandCase struct {
	name     string
	args     []string // without --server and --token
	ex       exchange
	wantCode int
	wantOut  []string // substrings of stdout
	wantErr  []string // substrings of stderr
}

func runCases(t *testing.T, cases []commandCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			tc.ex.token = "tok"
			url, hits := stub(t, tc.ex)
			out, errOut, code := runCLI(t, append(tc.args, "--server", url, "--token", "tok")...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, out, errOut)
			}
			if hits.Load() != 1 {
				t.Errorf("%d requests, want 1", hits.Load())
			}
			for _, s := range tc.wantOut {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errOut)
				}
			}
		})
	}
}

// A refused token says where the CLI took it from and where allot up put
// the admin token; other refusals keep their own words.
func TestFromAPIExplainsUnauthorized(t *testing.T) {
	err := fromAPI(&client.APIError{Status: 401, Code: "Unauthorized", Message: "unknown token"})
	for _, want := range []string{"unknown token", "--token", "$ALLOT_TOKEN", "DATA/admin-token"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("401: %q lacks %q", err, want)
		}
	}
	if err := fromAPI(&client.APIError{Status: 403, Code: "Forbidden", Message: "another tenant's job"}); strings.Contains(err.Error(), "ALLOT_TOKEN") {
		t.Errorf("403 got the token hint: %q", err)
	}
}

// up's next steps name a command that runs: allot when it is on PATH, else
// go run from the repository.
func TestSelfCommand(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if got := selfCommand(); got != "go run ./cmd/allot" {
		t.Errorf("without allot on PATH: %q", got)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "allot"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if got := selfCommand(); got != "allot" {
		t.Errorf("with allot on PATH: %q", got)
	}
}
