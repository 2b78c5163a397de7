package cli

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// hostileLog is what a job may write to take over a terminal: a window
// title, a screen clear, an OSC 52 clipboard write, a carriage return that
// forges the line, a bidi override, a C1 CSI and a broken rune.
const hostileLog = "step 1\tok\n\x1b]0;owned\x07\x1b[2J\x1b]52;c;cm0gLXJmIH4K\x07\rallot: job Succeeded\u202e\u009b\x9b\xff\n"

// fakeTerminal makes every command's output count as a terminal for the
// test.
func fakeTerminal(t *testing.T) {
	t.Helper()
	old := terminal
	terminal = func(io.Writer) bool { return true }
	t.Cleanup(func() { terminal = old })
}

// job logs escapes what the job wrote when its output is a terminal, but
// newlines and tabs; --raw and a pipe get the bytes.
func TestJobLogsEscapesOnTerminal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/jobs/j-1":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"j-1","state":"Running","attempt_history":[{"number":1}]}`))
		case "/v1/jobs/j-1/logs":
			_, _ = w.Write([]byte(hostileLog))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	isolate(t)

	out, errOut, code := runCLI(t, "job", "logs", "j-1", "--server", srv.URL)
	if code != ExitOK || out != hostileLog {
		t.Errorf("to a pipe: exit %d, %q (%s), want the bytes %q", code, out, errOut, hostileLog)
	}
	fakeTerminal(t)
	want := "step 1\tok\n" + `\x1b]0;owned\a\x1b[2J\x1b]52;c;cm0gLXJmIH4K\a\rallot: job Succeeded\u202e\u009b\x9b\xff` + "\n"
	out, errOut, code = runCLI(t, "job", "logs", "j-1", "--server", srv.URL)
	if code != ExitOK || out != want {
		t.Errorf("to a terminal: exit %d, %q (%s), want %q", code, out, errOut, want)
	}
	out, errOut, code = runCLI(t, "job", "logs", "j-1", "--raw", "--server", srv.URL)
	if code != ExitOK || out != hostileLog {
		t.Errorf("--raw to a terminal: exit %d, %q (%s), want the bytes %q", code, out, errOut, hostileLog)
	}
}

// A rune or an escape split between two writes is escaped as if it came
// whole; a rune that never ends is escaped byte by byte.
func TestEscaperSplitWrites(t *testing.T) {
	in := "héllo \x1b[31m训练\n"
	want := `héllo \x1b[31m训练` + "\n"
	for cut := 0; cut <= len(in); cut++ {
		var buf bytes.Buffer
		e := &escaper{w: &buf}
		for _, part := range []string{in[:cut], in[cut:]} {
			if n, err := e.Write([]byte(part)); err != nil || n != len(part) {
				t.Fatalf("cut %d: Write = %d, %v", cut, n, err)
			}
		}
		if err := e.flush(); err != nil {
			t.Fatal(err)
		}
		if buf.String() != want {
			t.Errorf("cut %d: %q, want %q", cut, buf.String(), want)
		}
	}
	var buf bytes.Buffer
	e := &escaper{w: &buf}
	_, _ = e.Write([]byte("end\xe8\xae"))
	_ = e.flush()
	if got := buf.String(); got != `end\xe8\xae` {
		t.Errorf("an unfinished rune: %q", got)
	}
	if strings.ContainsRune(buf.String(), 0x1b) {
		t.Error("raw escape passed")
	}
}

// job run --raw without --attach is refused before anything is submitted.
func TestJobRunRawNeedsAttach(t *testing.T) {
	isolate(t)
	_, errOut, code := runCLI(t, "job", "run", "--raw", "--server", "http://127.0.0.1:1", "--", "true")
	if code != ExitUsage || !strings.Contains(errOut, "--raw") {
		t.Errorf("exit %d, %q; want a usage error naming --raw", code, errOut)
	}
}
