package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rollingServer answers a restart or an update of endpoint chat with a
// rollout under way, and GETs with the rollout's progress: the new
// replica queued, then running beside the old one, then alone and done
// after doneAfter GETs (never when 0; queued for ever when negative).
func rollingServer(t *testing.T, doneAfter int32) string {
	t.Helper()
	const head = `{"name":"chat","tenant":"copilot","model":"m","desired":1,"template":"bbbbbbbbbb",`
	old := `{"job":"chat-replica-old","state":"Running","template":"aaaaaaaaaa","outdated":true}`
	rolling := func(state, reason string) string {
		return head + `"rollout_since":"2026-06-01T12:00:00Z","replicas":[` + old +
			`,{"job":"chat-replica-new","state":"` + state + `","reason":"` + reason + `","template":"bbbbbbbbbb"}]}`
	}
	done := head + `"rollout_since":null,"replicas":[{"job":"chat-replica-new","state":"Running","template":"bbbbbbbbbb"}],` +
		`"events":[{"kind":"RolledOut","reason":"every replica runs template bbbbbbbbbb"}]}`
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/endpoints/chat/restart", r.Method == "PUT" && r.URL.Path == "/v1/endpoints/chat":
			_, _ = w.Write([]byte(rolling("Queued", "QuotaExceeded")))
		case r.Method == "GET" && r.URL.Path == "/v1/endpoints/chat":
			n := gets.Add(1)
			switch {
			case doneAfter > 0 && n >= doneAfter:
				_, _ = w.Write([]byte(done))
			case doneAfter >= 0 && n >= 2:
				_, _ = w.Write([]byte(rolling("Running", "")))
			default:
				_, _ = w.Write([]byte(rolling("Queued", "QuotaExceeded")))
			}
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// --wait follows a rollout to its end, printing each change of progress;
// past its limit it exits 1 naming what the new replicas wait for.
func TestEndpointWaitForRollout(t *testing.T) {
	defer func(p time.Duration) { rolloutPoll = p }(rolloutPoll)
	rolloutPoll = 5 * time.Millisecond
	isolate(t)
	file := filepath.Join(t.TempDir(), "chat.yaml")
	if err := os.WriteFile(file, []byte("name: chat\ntenant: copilot\nmodel: m\ncommand: [serve, --v2]\nslo: {p95_ms: 120}\nthroughput: {T4: 10}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"endpoint", "restart", "chat", "--wait", "1m"}, {"endpoint", "update", file, "--wait", "1m"}} {
		out, errOut, code := runCLI(t, append(args, "--server", rollingServer(t, 4), "--token", "tok")...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		for _, want := range []string{"chat: bbbbbbbbbb, rolling out since 2026-06-01T12:00:00Z: 0 of 1 desired replicas run it",
			"chat: bbbbbbbbbb, rolling out since 2026-06-01T12:00:00Z: 1 of 1 desired replicas run it", "chat: rolled out template bbbbbbbbbb"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%v: progress lacks %q:\n%s", args, want, errOut)
			}
		}
		if strings.Count(errOut, "0 of 1 desired") != 1 {
			t.Errorf("%v: a progress line repeated:\n%s", args, errOut)
		}
	}

	out, errOut, code := runCLI(t, "endpoint", "restart", "chat", "--wait", "50ms", "--server", rollingServer(t, 0), "--token", "tok")
	if code != ExitFailure || !strings.Contains(errOut, "the rollout has not ended after 50ms, and goes on") ||
		!strings.Contains(out, "Restarting:") {
		t.Fatalf("a rollout past --wait: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "endpoint", "restart", "chat", "--wait", "20ms", "--server", rollingServer(t, -1), "--token", "tok")
	if code != ExitFailure || !strings.Contains(errOut, "waiting: chat-replica-new Queued for QuotaExceeded ('allot job why JOB')") {
		t.Fatalf("a rollout that waits for quota: exit %d\n%s%s", code, out, errOut)
	}
}
