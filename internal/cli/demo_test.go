package cli

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/demo"
	"github.com/allot-dev/allot/internal/syncbuf"
)

// syncBuffer is a log or output sink goroutines write while the test reads it.
type syncBuffer = syncbuf.Buffer

// waitFor polls out until re matches, and returns the match.
func waitFor(t *testing.T, out *syncBuffer, re *regexp.Regexp) []string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m
		}
	}
	t.Fatalf("no %s in the output:\n%s", re, out.String())
	return nil
}

// allot demo serve listens, answers, and stops with its context; allot
// demo load drives it and prints what it achieved.
func TestDemoServeAndLoad(t *testing.T) {
	var out, errOut syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() {
		code <- Run(ctx, []string{"demo", "serve", "--service-time", "5ms", "--concurrency", "4", "--report-every", "100ms"}, &out, &errOut)
	}()
	addr := waitFor(t, &out, regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+) \(replica local, service time 5ms, concurrency 4, `))[1]
	resp, err := http.Get(addr + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /healthz: %v %v", resp, err)
	}
	resp.Body.Close()

	lout, lerr, lcode := run(t, "demo", "load", "--url", addr+"/", "--rps", "50", "--duration", "1s")
	if lcode != 0 || !regexp.MustCompile(`sent \d+ \(\d+\.\d requests/s\), ok \d+, failed 0, dropped 0\nlatency p50 [\d.]+ms`).MatchString(lout) {
		t.Errorf("demo load: exit %d\n%s%s", lcode, lout, lerr)
	}
	waitFor(t, &out, regexp.MustCompile(`requests/s [1-9][\d.]*  p95 [\d.]+ ms  utilisation`))
	cancel()
	select {
	case c := <-code:
		if c != ExitOK {
			t.Errorf("demo serve exit %d: %s", c, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("demo serve did not stop")
	}

	if _, _, c := run(t, "demo", "load", "--url", addr); c != ExitUsage {
		t.Errorf("demo load without --rps: exit %d, want %d", c, ExitUsage)
	}
	if _, _, c := run(t, "demo", "serve", "--concurrency", "0"); c != ExitUsage {
		t.Errorf("demo serve --concurrency 0: exit %d, want %d", c, ExitUsage)
	}
}

// allot demo train under the agent's environment: it checkpoints into
// $ALLOT_CHECKPOINT_DIR, resumes from $ALLOT_RESUME_FROM, and on SIGTERM
// writes a last checkpoint and exits 143.
func TestDemoTrain(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("ALLOT_CHECKPOINT_DIR", dir)
	t.Setenv("ALLOT_JOB_ID", "j-7")
	t.Setenv("ALLOT_ATTEMPT", "2")
	t.Setenv("ALLOT_RESUME_FROM", "")
	out, errOut, code := run(t, "demo", "train", "--steps", "4", "--step-time", "1ms", "--checkpoint-every", "2")
	if code != ExitOK || !strings.Contains(out, "training j-7.2: 4 steps") || !strings.Contains(out, "done: 4 steps") {
		t.Fatalf("demo train: exit %d\n%s%s", code, out, errOut)
	}
	marker, err := os.ReadFile(filepath.Join(dir, "CHECKPOINT"))
	if err != nil || strings.TrimSpace(string(marker)) != "step-00000002.json" {
		t.Fatalf("marker %q (%v), want step-00000002.json", marker, err)
	}

	t.Setenv("ALLOT_RESUME_FROM", filepath.Join(dir, "step-00000002.json"))
	var sout, serr syncBuffer
	code2 := make(chan int, 1)
	go func() {
		code2 <- Run(context.Background(), []string{"demo", "train", "--steps", "100000", "--step-time", "5ms", "--checkpoint-every", "0"}, &sout, &serr)
	}()
	waitFor(t, &sout, regexp.MustCompile(`resuming from step 2 [^\n]*\nstep 3/100000[^\n]*\nstep 4/100000`))
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var c int
	select {
	case c = <-code2:
	case <-time.After(10 * time.Second):
		t.Fatal("demo train did not stop on SIGTERM")
	}
	if c != 143 || !strings.Contains(serr.String(), "stopped by SIGTERM after step") {
		t.Fatalf("demo train on SIGTERM: exit %d, want 143\n%s%s", c, sout.String(), serr.String())
	}
	marker, _ = os.ReadFile(filepath.Join(dir, "CHECKPOINT"))
	step, err := demo.ReadCheckpoint(filepath.Join(dir, strings.TrimSpace(string(marker))))
	if err != nil || step < 4 {
		t.Errorf("last checkpoint at step %d (%v), want the step SIGTERM came at (4 or later)", step, err)
	}
}

// demo load --trace replays the repository's Azure trace as the
// simulator does: at the rate asked for, with the trace's token counts;
// bad names, scales and sizes are refused naming the flag.
func TestReadTrace(t *testing.T) {
	dir := "../../data/traces/azure-llm"
	reqs, err := readTrace(dir, "azure-code", 50, 1, time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	var span time.Duration
	for _, r := range reqs {
		span += r.Gap
		if r.Context < 1 || r.Gap < 0 {
			t.Fatalf("request %+v", r)
		}
	}
	if n := len(reqs); n < 2000 || n > 4000 || span > time.Minute { // bursts: the rate holds over minutes, not within one
		t.Errorf("%d requests over %s at 50 requests/s for a minute, want about 3,000", n, span)
	}
	scaled, err := readTrace(dir, "azure-conv", 0, 10, time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(scaled); n < 2400 || n > 4200 { // 10 × the conversation trace's 5.4 requests/s
		t.Errorf("%d requests at 10 times the conversation trace's rate for a minute", n)
	}
	for _, tc := range []struct {
		name       string
		rps, scale float64
		d          time.Duration
		want       string
	}{{"azure-nope", 1, 1, time.Second, "--trace"}, {"azure-conv", 0, 0, time.Second, "--rate-scale"},
		{"azure-conv", 0, -1, time.Second, "--rate-scale"}, {"azure-code", 1e6, 1, time.Hour, "--duration"}} {
		if _, err := readTrace(dir, tc.name, tc.rps, tc.scale, tc.d, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("readTrace(%s, %g, %g, %s): %v, want an error naming %s", tc.name, tc.rps, tc.scale, tc.d, err, tc.want)
		}
	}
}
