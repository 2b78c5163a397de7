package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode"
)

// The attack tests drive the shared server the way someone on the
// internet could, one test per attack of the issue "the API faces the
// internet".

// call sends a raw request to the shared server; token may be empty.
func call(t *testing.T, method, path, token, contentType string, body []byte) (*http.Response, errorBody) {
	t.Helper()
	req, err := http.NewRequest(method, serverURL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var e errorBody
	if resp.StatusCode >= 400 {
		e = apiError(t, resp)
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, e
}

// serverPID finds the shared server's process: the built binary run with
// the data directory next to it.
func serverPID(t *testing.T) int {
	t.Helper()
	data := filepath.Join(filepath.Dir(bin), "data")
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(raw), "\x00")
		if len(args) > 0 && args[0] == bin && slices.Contains(args, data) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	return 0
}

// rssKiB reads a process's resident memory.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	t.Fatal("no VmRSS in /proc/PID/status")
	return 0
}

// openFiles raises this process's soft limit on open files to the hard
// limit and returns it.
func openFiles(t *testing.T) int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
	return int(min(rl.Cur, 1<<20))
}

// TestAttackConnectionTrickle opens 2,000 connections that send the headers
// of a POST with a missing or unknown token and then trickle the body a
// byte at a time. The server must answer each at once and close it without
// waiting for the rest of the body (before, a 401 still waited for the body
// and the connection stayed open as long as the client liked, until the
// server ran out of file descriptors), and /healthz must keep answering
// within 100 ms meanwhile.
func TestAttackConnectionTrickle(t *testing.T) {
	needServer(t)
	n := min(2000, openFiles(t)/3) // the other two thirds: the prober, the test itself, slack
	if n < 200 {
		t.Skipf("open-file limit too low for the attack (%d connections)", n)
	}
	addr := strings.TrimPrefix(serverURL, "http://")
	// victim is one attacking connection; closed is how long after it was
	// opened the server closed it, 0 while it is open.
	type victim struct {
		c      net.Conn
		opened time.Time
		closed atomic.Int64
	}
	victims := make([]atomic.Pointer[victim], n)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	defer func() {
		halt()
		for i := range victims {
			if v := victims[i].Load(); v != nil {
				v.c.Close()
			}
		}
		wg.Wait()
	}()

	// The prober: a fresh connection every 50 ms, as a load balancer does.
	probes := startProber(&wg, 2*time.Second, stop)

	// The attack: 50 dialers; a reader per connection notes when the
	// server closes it.
	dialErrs := make([]error, n)
	next := make(chan int)
	var dialers sync.WaitGroup
	for range 50 {
		dialers.Go(func() {
			for i := range next {
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					dialErrs[i] = err
					continue
				}
				// Half without a token, half with a made-up one; half
				// with a body length under what net/http would drain
				// (256 KiB), half chunked.
				auth, length := "", "Content-Length: 100000"
				if i%2 == 1 {
					auth = "Authorization: Bearer not-a-token\r\n"
				}
				if i%4 >= 2 {
					length = "Transfer-Encoding: chunked"
				}
				v := &victim{c: c, opened: time.Now()}
				victims[i].Store(v)
				_, _ = fmt.Fprintf(c, "POST /v1/jobs HTTP/1.1\r\nHost: allot\r\n%sContent-Type: application/json\r\n%s\r\n\r\n{",
					auth, length)
				wg.Go(func() {
					_ = c.SetReadDeadline(time.Now().Add(8 * time.Second))
					_, err := io.Copy(io.Discard, c)
					var ne net.Error
					if err == nil || !(errors.As(err, &ne) && ne.Timeout()) {
						v.closed.Store(int64(max(time.Since(v.opened), 1)))
					}
				})
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	dialers.Wait()
	// The trickle: a byte on every open connection every 500 ms, while
	// the readers wait up to 8 s for the server to close them.
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
			for i := range victims {
				if v := victims[i].Load(); v != nil && v.closed.Load() == 0 {
					_ = v.c.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
					_, _ = v.c.Write([]byte(" "))
				}
			}
		}
	})
	time.Sleep(9 * time.Second)
	halt()
	for i := range victims {
		if v := victims[i].Load(); v != nil {
			v.c.Close()
		}
	}
	wg.Wait()

	stillOpen, slowest := 0, time.Duration(0)
	for i := range victims {
		v := victims[i].Load()
		if v == nil {
			t.Errorf("dial %d: %v", i, dialErrs[i])
			continue
		}
		closed := time.Duration(v.closed.Load())
		if closed == 0 {
			stillOpen++
		}
		slowest = max(slowest, closed)
	}
	if stillOpen > 0 {
		t.Errorf("%d of %d trickling connections without a valid token still open after 8 s; want each closed once refused", stillOpen, n)
	}
	t.Logf("%d connections; the slowest was closed %v after it opened", n, slowest)
	slow := 0
	for _, p := range *probes {
		switch {
		case p.err != nil:
			t.Errorf("/healthz during the attack: %v", p.err)
		case p.took > 100*time.Millisecond:
			slow++
		}
	}
	t.Logf("%d probes of /healthz, %d slower than 100 ms", len(*probes), slow)
	if len(*probes) == 0 || slow > len(*probes)/10 {
		t.Errorf("%d of %d probes of /healthz took over 100 ms; want nearly all within 100 ms", slow, len(*probes))
	}
	waitUnauthenticated(t)
}

// waitUnauthenticated waits until a request without a token is answered
// 401 again (the attack used up this address's budget of unauthenticated
// requests), so that the tests after this one find the server as it was.
func waitUnauthenticated(t *testing.T) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(serverURL + "/v1/jobs")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				time.Sleep(time.Second) // and a little budget for the next test
				return
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			t.Fatalf("requests without a token not answered 401 15 s after the attack: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAttackAliasBomb posts a job whose 1,500 env values alias one 200 KiB
// string: small as YAML, 300 MB once the aliases are copied. The server
// must refuse it at once (413, naming the limit) without growing (before,
// it copied every alias into the stored form, grew by gigabytes and
// answered 500).
func TestAttackAliasBomb(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	var b strings.Builder
	b.WriteString("name: bomb\ncommand: [x]\nresources: {gpu_milli: 250, gpu_models: [T4]}\nenv:\n  A0: &v " +
		strings.Repeat("x", 200<<10) + "\n")
	for i := 1; i < 1500; i++ {
		fmt.Fprintf(&b, "  A%d: *v\n", i)
	}
	pid := serverPID(t)
	before := 0
	if pid != 0 {
		before = rssKiB(t, pid)
	}
	start := time.Now()
	resp, e := call(t, "POST", "/v1/jobs", research, "application/yaml", []byte(b.String()))
	took := time.Since(start)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(e.Message, "limit:") {
		t.Errorf("alias bomb (%d KiB): %d %+v; want 413 naming the limit", b.Len()>>10, resp.StatusCode, e)
	}
	if took > 2*time.Second {
		t.Errorf("alias bomb answered after %v; want at once", took)
	}
	if pid == 0 {
		t.Log("server process not found: RSS not checked")
		return
	}
	after := rssKiB(t, pid)
	t.Logf("server RSS %d MiB before, %d MiB after; answered in %v", before>>10, after>>10, took)
	if after-before > 100<<10 {
		t.Errorf("server RSS grew by %d MiB on one alias bomb; want under 100 MiB", (after-before)>>10)
	}
}

// TestAttackOversizedAfterEscaping posts a 300 KiB job whose env value is
// all '<', which the stored JSON writes as \u003c: 1.8 MB, over what the
// store keeps. It must be 413 naming the limit (before: 500 from the
// store).
func TestAttackOversizedAfterEscaping(t *testing.T) {
	needServer(t)
	body := `{"name":"escapes","command":["x"],"resources":{"gpu_milli":250,"gpu_models":["T4"]},"env":{"A":"` +
		strings.Repeat("<", 300<<10) + `"}}`
	resp, e := call(t, "POST", "/v1/jobs", tokenFor(t, "research"), "application/json", []byte(body))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || e.Code != "BodyTooLarge" || !strings.Contains(e.Message, "limit:") {
		t.Errorf("300 KiB body, 1.8 MB stored: %d %+v; want 413 BodyTooLarge naming the limit", resp.StatusCode, e)
	}
}

// TestAttackEmptyCommand submits jobs with an empty command or program
// name: 400 naming the field (before: accepted).
func TestAttackEmptyCommand(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	for _, tc := range []struct{ command, field string }{{`[]`, "command"}, {`[""]`, "command[0]"}, {`["  ", "x"]`, "command[0]"}} {
		body := `{"name":"empty","command":` + tc.command + `,"resources":{"gpu_milli":250,"gpu_models":["T4"]}}`
		resp, e := call(t, "POST", "/v1/jobs", research, "application/json", []byte(body))
		if resp.StatusCode != http.StatusBadRequest || e.Field != tc.field {
			t.Errorf("command %s: %d %+v; want 400 with field %s", tc.command, resp.StatusCode, e, tc.field)
		}
	}
}

// TestAttackCheckpointUnknownField reports a checkpoint with a field the
// API does not know: 400 naming it (before: ignored, and recorded).
func TestAttackCheckpointUnknownField(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	id := submit(t, research, writeFile(t, "t4.yaml", smallT4))
	defer allot(t, research, "job", "cancel", id)
	resp, e := call(t, "POST", "/v1/jobs/"+id+"/checkpoint", research, "application/json", []byte(`{"path":"/ckpt/1","pth":"/x"}`))
	if resp.StatusCode != http.StatusBadRequest || e.Field != "pth" {
		t.Errorf("checkpoint with an unknown field: %d %+v; want 400 with field pth", resp.StatusCode, e)
	}
}

// TestAttackNodeTokenScope uses a node token on tenant endpoints: 403
// (before: 200, reading jobs, usage and SKUs).
func TestAttackNodeTokenScope(t *testing.T) {
	needServer(t)
	node := strings.TrimSpace(must(t, adminToken, "token", "create", "--node", "eastus-t4x1-01"))
	for _, path := range []string{"/v1/jobs", "/v1/usage", "/v1/skus", "/v1/reservations"} {
		if resp, e := call(t, "GET", path, node, "", nil); resp.StatusCode != http.StatusForbidden || e.Code != "Forbidden" {
			t.Errorf("node token GET %s: %d %+v; want 403 Forbidden", path, resp.StatusCode, e)
		}
	}
	if resp, _ := call(t, "POST", "/v1/jobs", node, "application/json", []byte(`{"name":"n","resources":{"cpu":1,"gpus_per_instance":0}}`)); resp.StatusCode != http.StatusForbidden {
		t.Errorf("node token submits a job: %d; want 403", resp.StatusCode)
	}
}

// TestAttackControlCharacterName submits a job whose name holds terminal
// escapes: 400 naming the field (before: accepted, and printed raw by
// 'allot job list'); the list an admin prints holds no raw control bytes.
func TestAttackControlCharacterName(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	for _, name := range []string{"evil\x1b[2J\x1b[H", "bell\a", "two\nlines", "rtl\u202eexe"} {
		body, _ := json.Marshal(map[string]any{"name": name, "command": []string{"x"},
			"resources": map[string]any{"gpu_milli": 250, "gpu_models": []string{"T4"}}})
		resp, e := call(t, "POST", "/v1/jobs", research, "application/json", body)
		if resp.StatusCode != http.StatusBadRequest || e.Field != "name" {
			t.Errorf("name %q: %d %+v; want 400 with field name", name, resp.StatusCode, e)
		}
	}
	out := must(t, adminToken, "job", "list")
	for i, r := range out {
		if r != '\n' && !unicode.IsPrint(r) {
			t.Fatalf("job list prints %U at byte %d:\n%q", r, i, out)
		}
	}
}

// TestAttackOtherTenantReservation reads and deletes another tenant's
// reservations: 403 as docs/api.md says (before: 404 for a reservation of
// the tenants file, and no GET of one reservation).
func TestAttackOtherTenantReservation(t *testing.T) {
	needServer(t)
	acme, research := tokenFor(t, "acme"), tokenFor(t, "research")
	must(t, acme, "reservation", "create", "--sku", "ND96-A100x8-IB", "--region", "westus", "--count", "1",
		"--start", "now", "--end", "+24h", "--name", "attack-acme")
	defer allot(t, acme, "reservation", "delete", "attack-acme")
	for _, name := range []string{"attack-acme", "globex-h100"} {
		for _, m := range []string{"GET", "DELETE"} {
			resp, e := call(t, m, "/v1/reservations/"+url.PathEscape(name), research, "", nil)
			if resp.StatusCode != http.StatusForbidden || e.Code != "Forbidden" {
				t.Errorf("research %s %s: %d %+v; want 403 Forbidden", m, name, resp.StatusCode, e)
			}
		}
	}
	resp, err := http.NewRequest("GET", serverURL+"/v1/reservations/attack-acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Header.Set("Authorization", "Bearer "+acme)
	got, err := http.DefaultClient.Do(resp)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Body.Close()
	var r struct{ Name, Owner string }
	if err := json.NewDecoder(bufio.NewReader(got.Body)).Decode(&r); err != nil || got.StatusCode != 200 || r.Owner != "acme" {
		t.Errorf("acme GET its reservation: %d %+v %v", got.StatusCode, r, err)
	}
}

// probe is one request of startProber: how long it took, and how it failed.
type probe struct {
	took time.Duration
	err  error
}

// startProber asks the shared server's /healthz on a fresh connection every
// 50 ms, as a load balancer does, each within timeout, until stop closes;
// wg waits for it. Read the probes once wg.Wait has returned.
func startProber(wg *sync.WaitGroup, timeout time.Duration, stop <-chan struct{}) *[]probe {
	var probes []probe
	wg.Go(func() {
		cl := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			start := time.Now()
			resp, err := cl.Get(serverURL + "/healthz")
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			probes = append(probes, probe{time.Since(start), err})
		}
	})
	return &probes
}
