package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/syncbuf"
)

// The server every test talks to, started once by TestMain.
var (
	root       string // the repository
	bin        string // the built allot binary
	serverURL  string
	adminToken string
	skipReason string // set when the binary cannot serve
	home       string // HOME for the CLI: no config file
	serverLog  syncBuffer
	serverHelp string // 'allot server --help', to see which flags it has
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	if root, err = filepath.Abs("../.."); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "allot-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	home = filepath.Join(tmp, "home")
	bin = filepath.Join(tmp, "allot")
	build := exec.Command("go", "build", "-o", bin, "./cmd/allot")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/allot: %v\n%s", err, out)
		return 1
	}
	out, err := exec.Command(bin, "server", "--help").CombinedOutput()
	if serverHelp = string(out); err != nil || !strings.Contains(serverHelp, "--listen") {
		skipReason = fmt.Sprintf("the allot binary has no 'server' command yet (allot server --help: %v)", err)
		return m.Run()
	}
	var stop func()
	serverURL, adminToken, stop, err = startServer(filepath.Join(tmp, "data"), &serverLog)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: start server: %v\nserver log:\n%s", err, serverLog.String())
		return 1
	}
	code := m.Run()
	stop()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "server log (last 4 KiB):\n%s\n", tail(serverLog.String(), 4096))
	}
	return code
}

var listening = regexp.MustCompile(`listening on (http://[^\s"]+)`)

// startServer runs 'allot server' on a free loopback port with the extra
// flags, waits until it says where it listens and is ready, and reads the
// admin token. Its output goes to log.
func startServer(data string, log *syncBuffer, extra ...string) (url, admin string, stop func(), err error) {
	args := []string{"server", "--data", data, "--listen", "127.0.0.1:0",
		"--fleet", filepath.Join(root, "examples/fleet.yaml"), "--tenants", filepath.Join(root, "examples/tenants.yaml")}
	if strings.Contains(serverHelp, "--agents") {
		// These tests need the simulated nodes: jobs end after their duration.
		args = append(args, "--agents", "simulated")
	}
	return startServerArgs(data, log, append(args, extra...)...)
}

// startServerArgs runs allot with args (a server command on a free
// loopback port, in data) and waits as startServer does.
//
// Every cycle of such a server also plans from scratch and the server exits
// if that Plan differs from its incremental one (--check-incremental).
func startServerArgs(data string, log *syncBuffer, args ...string) (url, admin string, stop func(), err error) {
	return startServerStop(data, log, 5*time.Second, args...)
}

// startServerStop is startServerArgs whose stop waits up to wait for the
// server to exit after SIGTERM before it kills it.
func startServerStop(data string, log *syncBuffer, wait time.Duration, args ...string) (url, admin string, stop func(), err error) {
	if len(args) > 0 && (args[0] == "server" || args[0] == "up") {
		args = append(args[:len(args):len(args)], "--check-incremental")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = root
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return "", "", nil, err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		pw.Close()
		close(exited)
	}()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(wait):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case url = <-found:
	case <-exited:
		return "", "", nil, fmt.Errorf("allot server exited before listening")
	case <-time.After(30 * time.Second):
		stop()
		return "", "", nil, fmt.Errorf("allot server did not print 'listening on http://…' within 30s")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			stop()
			return "", "", nil, fmt.Errorf("%s/readyz not 200 within 20s (last: %v)", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	tok, err := os.ReadFile(filepath.Join(data, "admin-token"))
	if err != nil {
		stop()
		return "", "", nil, err
	}
	return url, strings.TrimSpace(string(tok)), stop, nil
}

// needServer skips the test when there is no server to talk to.
func needServer(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
}

// result is what one run of the CLI did.
type result struct {
	out, err string
	code     int
}

// allot runs the CLI against the test server with token (none when empty).
func allot(t *testing.T, token string, args ...string) result {
	t.Helper()
	return allotAt(t, serverURL, token, args...)
}

// allotAt runs the CLI against the server at url.
func allotAt(t *testing.T, url, token string, args ...string) result {
	t.Helper()
	if token != "" {
		args = append(args, "--token", token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = root
	cmd.Env = append(cleanEnv(), "ALLOT_SERVER="+url, "HOME="+home)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("allot %s: %v", strings.Join(args, " "), err)
		}
		code = ee.ExitCode()
	}
	return result{out.String(), errOut.String(), code}
}

// must runs the CLI and fails the test unless it exits 0.
func must(t *testing.T, token string, args ...string) string {
	t.Helper()
	r := allot(t, token, args...)
	if r.code != 0 {
		t.Fatalf("allot %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.out, r.err)
	}
	return r.out
}

// cleanEnv is the environment without the variables the CLI reads.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ALLOT_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return env
}

var (
	tokensMu sync.Mutex // guards tokens
	tokens   = map[string]string{}
)

// tokenFor returns a token of tenant, created once through the CLI.
func tokenFor(t *testing.T, tenant string) string {
	t.Helper()
	tokensMu.Lock()
	defer tokensMu.Unlock()
	if tok, ok := tokens[tenant]; ok {
		return tok
	}
	tok := strings.TrimSpace(must(t, adminToken, "token", "create", "--tenant", tenant))
	if tok == "" || strings.ContainsAny(tok, " \n") {
		t.Fatalf("token create printed %q, want the token alone", tok)
	}
	tokens[tenant] = tok
	return tok
}

// syncBuffer is a log or output sink goroutines write while the test reads it.
type syncBuffer = syncbuf.Buffer

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// startUp runs 'allot up' with the example fleet on a free loopback port
// with its data in dir/data, stops it when the test ends (showing the end
// of its log if the test failed), and returns its URL and admin token.
func startUp(t *testing.T, dir string, more ...string) (url, admin string) {
	t.Helper()
	log := &syncBuffer{}
	data := filepath.Join(dir, "data")
	url, admin, stop, err := startServerArgs(data, log, append([]string{"up", "--data", data, "--listen", "127.0.0.1:0",
		"--fleet", filepath.Join(root, "examples/fleet.yaml"), "--tenants", filepath.Join(root, "examples/tenants.yaml"),
		"--log-level", "warn"}, more...)...)
	if err != nil {
		t.Fatalf("start allot up: %v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("server log (last 8 KiB):\n%s", tail(log.String(), 8<<10))
		}
	})
	return url, admin
}
