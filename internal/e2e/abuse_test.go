package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	abuseFor   = flag.Duration("abuse", 15*time.Second, "how long TestAbuse attacks the server (the security issue's run: -abuse 60s)")
	abuseConns = flag.Int("abuse-conns", 1500, "connections TestAbuse keeps trickling at once")
)

// TestAbuse attacks an 'allot up' on loopback for -abuse (15 s in CI; run
// 'go test ./internal/e2e -run TestAbuse -abuse 60s -v' for the minute the
// security issue asks for) with everything at once: connections that
// trickle a body or their headers without a valid token, YAML alias bombs,
// oversized bodies, and jobs that try to kill their agent, while tenants
// submit ordinary jobs. Throughout, a prober opens a new connection every
// 50 ms and must get /healthz answered within 100 ms (in the short run, all
// but 1 % of probes); afterwards every acknowledged job must be intact.
func TestAbuse(t *testing.T) {
	needServer(t)
	dir := t.TempDir()
	url, admin := startUp(t, dir)
	copilot := strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", "copilot"))
	hobbyist := strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", "hobbyist"))
	host := strings.TrimPrefix(url, "http://")

	deadline := time.Now().Add(*abuseFor)
	var wg sync.WaitGroup
	done := make(chan struct{})
	run := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}

	// The prober: a new connection per probe, as a load balancer's would.
	var probes, slow, failed atomic.Int64
	var worstNs atomic.Int64
	probe := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	run(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			start := time.Now()
			resp, err := probe.Get(url + "/healthz")
			took := time.Since(start)
			probes.Add(1)
			if err != nil {
				failed.Add(1)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				failed.Add(1)
			}
			if took > 100*time.Millisecond {
				slow.Add(1)
			}
			for {
				w := worstNs.Load()
				if int64(took) <= w || worstNs.CompareAndSwap(w, int64(took)) {
					break
				}
			}
		}
	})

	// Tricklers: half send a POST's headers with a wrong token and then a
	// byte of body now and then, half never finish their headers.
	var opened atomic.Int64
	for i := range *abuseConns {
		run(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", host, time.Second)
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				opened.Add(1)
				trickle(c, i%2 == 0, done)
				c.Close()
			}
		})
	}

	// Alias bombs and oversized bodies from a real tenant. Each must be
	// refused: a 4xx, or the connection closed on it (the server stops
	// reading an oversized body, so the client may see a reset first);
	// a 2xx or 5xx is a failure.
	var bombs, bombsRefused, oversized, oversizedRefused, accepted atomic.Int64
	bomb := aliasBomb()
	big := bytes.Repeat([]byte(`"\u0000"`), 300<<10) // 2.4 MB
	attack := func(body []byte, sent, refused *atomic.Int64, ctype string) {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		cl := &http.Client{Timeout: 10 * time.Second}
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			req, _ := http.NewRequest("POST", url+"/v1/jobs", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+hobbyist)
			req.Header.Set("Content-Type", ctype)
			resp, err := cl.Do(req)
			sent.Add(1)
			if err != nil {
				refused.Add(1)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 400 && resp.StatusCode < 500 {
				refused.Add(1)
			} else {
				accepted.Add(1)
			}
		}
	}
	run(func() { attack(bomb, &bombs, &bombsRefused, "application/yaml") })
	run(func() { attack(big, &oversized, &oversizedRefused, "application/json") })

	// Jobs that try to take the control plane down: kill their parent
	// (the in-process agent is the server), and fail, to be retried.
	killers := []string{}
	for i := range 3 {
		id, code := submitJob(t, url, hobbyist, map[string]any{"name": fmt.Sprintf("killer-%d", i),
			"command":   []string{"sh", "-c", "kill -9 $PPID; exit 1"},
			"resources": map[string]any{"gpu_milli": 250, "gpu_models": []string{"T4"}},
			"retry":     map[string]any{"max_retries": 3}})
		if code != http.StatusCreated {
			t.Fatalf("submit killer job: %d", code)
		}
		killers = append(killers, id)
	}

	// Ordinary tenants' work: every acknowledged job must survive.
	var mu sync.Mutex
	acked := map[string]string{} // id -> name
	var submitErrs atomic.Int64
	run(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			name := fmt.Sprintf("steady-%d", n)
			id, code := submitJob(t, url, copilot, map[string]any{"name": name, "command": []string{"true"},
				"resources": map[string]any{"gpu_milli": 250, "gpu_models": []string{"T4"}}})
			if code != http.StatusCreated {
				submitErrs.Add(1)
				continue
			}
			mu.Lock()
			acked[id] = name
			mu.Unlock()
		}
	})

	// Peak memory, from the server's own process metrics.
	var peakRSS float64
	for time.Now().Before(deadline) {
		if rss, ok := residentBytes(url); ok {
			peakRSS = max(peakRSS, rss)
		}
		time.Sleep(time.Second)
	}
	close(done)
	wg.Wait()

	t.Logf("%s of abuse: %d probes (worst %s, %d over 100 ms, %d failed); %d trickling connections opened; "+
		"%d alias bombs (%d refused); %d oversized bodies (%d refused); %d jobs acknowledged (%d submits refused); peak RSS %.0f MiB",
		*abuseFor, probes.Load(), time.Duration(worstNs.Load()), slow.Load(), failed.Load(), opened.Load(),
		bombs.Load(), bombsRefused.Load(), oversized.Load(), oversizedRefused.Load(), len(acked), submitErrs.Load(), peakRSS/(1<<20))
	// The minute-long run (-abuse 60s, on a machine doing nothing else)
	// allows no slow probe. The short run in CI shares two cores with the
	// other packages' tests, whose CPU the server does not control: there
	// one probe in forty may be slow, none may fail. (One in a hundred
	// failed once: 5 of 309 over 100 ms, the worst 194 ms, while
	// internal/sim/frag's tests ran beside it; a server that the abuse
	// stalls is slow on most probes, or fails them.)
	allowed := int64(0)
	if *abuseFor < time.Minute {
		allowed = probes.Load() / 40
	}
	if failed.Load() > 0 || slow.Load() > allowed {
		t.Errorf("/healthz: %d of %d probes failed and %d took over 100 ms (worst %s; %d allowed in a run of %s)",
			failed.Load(), probes.Load(), slow.Load(), time.Duration(worstNs.Load()), allowed, *abuseFor)
	}
	if accepted.Load() > 0 || bombsRefused.Load() != bombs.Load() || oversizedRefused.Load() != oversized.Load() {
		t.Errorf("alias bombs refused %d of %d, oversized bodies %d of %d, %d answered 2xx or 5xx; want every one refused",
			bombsRefused.Load(), bombs.Load(), oversizedRefused.Load(), oversized.Load(), accepted.Load())
	}
	if peakRSS > 2<<30 {
		t.Errorf("server peak RSS %.0f MiB, want under 2 GiB", peakRSS/(1<<20))
	}
	if len(acked) == 0 {
		t.Fatalf("no ordinary job was acknowledged in %s (%d refused)", *abuseFor, submitErrs.Load())
	}
	// Every acknowledged job is there, as submitted (one list request:
	// the tenant's rate limit would refuse hundreds of single reads).
	code, body := send(t, url, "GET", "/v1/jobs", copilot, nil)
	var list struct {
		Jobs []struct{ ID, Name, State string }
	}
	if err := json.Unmarshal(body, &list); code != 200 || err != nil {
		t.Fatalf("list copilot's jobs: %d %v", code, err)
	}
	have := map[string]string{}
	for _, j := range list.Jobs {
		have[j.ID] = j.Name
	}
	ids := make([]string, 0, len(acked))
	for id := range acked {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if have[id] != acked[id] {
			t.Errorf("acknowledged job %s (%s) is missing or changed: %q", id, acked[id], have[id])
		}
	}
	// The killers harmed nobody but themselves.
	for _, id := range killers {
		code, body := send(t, url, "GET", "/v1/jobs/"+id, hobbyist, nil)
		if code != 200 {
			t.Errorf("killer job %s: %d %s", id, code, body)
		}
	}
	if os.Geteuid() != 0 {
		t.Log("not root: jobs ran as this user, so the killer jobs could signal the server; run as root for the isolation under test")
	}
	if code, _ := send(t, url, "GET", "/healthz", "", nil); code != 200 {
		t.Errorf("/healthz after the abuse: %d", code)
	}
}

// trickle holds connection c open the way a slow attacker does: with body
// set, a POST with a wrong token announcing a 100 KB body, then a byte every
// half second; without, header lines that never end.
func trickle(c net.Conn, body bool, done <-chan struct{}) {
	w := bufio.NewWriter(c)
	if body {
		fmt.Fprintf(w, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer not-a-token\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
	} else {
		fmt.Fprintf(w, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\n")
	}
	if w.Flush() != nil {
		return
	}
	for i := 0; ; i++ {
		select {
		case <-done:
			return
		case <-time.After(500 * time.Millisecond):
		}
		var err error
		if body {
			_, err = c.Write([]byte(" "))
		} else {
			_, err = fmt.Fprintf(c, "X-Slow-%d: 1\r\n", i)
		}
		if err != nil {
			return
		}
	}
}

// aliasBomb is a job document of about 700 KB whose env values all alias
// one 200 KB string: 2,500 aliases expand it to 500 MB.
func aliasBomb() []byte {
	var b strings.Builder
	b.WriteString("name: bomb\ncommand: [\"true\"]\nresources: {gpu_milli: 250}\nenv:\n  K0: &big \"")
	b.WriteString(strings.Repeat("A", 200<<10))
	b.WriteString("\"\n")
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&b, "  K%d: *big\n", i)
	}
	return []byte(b.String())
}

// submitJob posts a job document and returns its ID and the status.
func submitJob(t *testing.T, url, token string, doc map[string]any) (string, int) {
	body, _ := json.Marshal(doc)
	req, err := http.NewRequest("POST", url+"/v1/jobs", bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return "", 0
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return "", 0
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var v struct{ ID string }
	_ = json.Unmarshal(data, &v)
	return v.ID, resp.StatusCode
}

// residentBytes reads process_resident_memory_bytes from the server's
// /metrics.
func residentBytes(url string) (float64, bool) {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(url + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "process_resident_memory_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}
