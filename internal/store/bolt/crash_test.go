package bolt

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/allot-dev/allot/internal/store"
)

// crashDirEnv tells the re-executed test binary to act as the crash child.
const crashDirEnv = "ALLOT_BOLT_CRASH_DIR"

const crashWriters = 16

// TestCrashSafety kills a writing process with SIGKILL at random points and
// checks, after each reopen, that every acknowledged Txn is there and no Txn
// is there in part. Each writer owns two keys that every Txn sets to the same
// counter value, so a partial Txn shows as two different values.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "allot.db")
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 5 {
		acked := crashRound(t, path, 1+rng.IntN(2000))
		s, err := Open(path, nil)
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		for g := range crashWriters {
			a, errA := s.Get(t.Context(), fmt.Sprintf("/crash/%d/a", g))
			b, errB := s.Get(t.Context(), fmt.Sprintf("/crash/%d/b", g))
			if errA != nil || errB != nil {
				if acked[g] > 0 {
					t.Fatalf("round %d writer %d: acked %d but keys missing: %v %v", round, g, acked[g], errA, errB)
				}
				continue
			}
			if string(a.Value) != string(b.Value) || a.ModRev != b.ModRev {
				t.Fatalf("round %d writer %d: partial txn: a=%s@%d b=%s@%d", round, g, a.Value, a.ModRev, b.Value, b.ModRev)
			}
			n, _ := strconv.Atoi(string(a.Value))
			// The newest value is the last acked one, or one more that was
			// committed but not yet acknowledged when the kill came.
			if n != acked[g] && n != acked[g]+1 {
				t.Fatalf("round %d writer %d: value %d, last acked %d", round, g, n, acked[g])
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// crashRound runs the child on path, kills it after it has acknowledged
// kill Txns, and returns the highest acknowledged counter per writer.
func crashRound(t *testing.T, path string, kill int) map[int]int {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[int]int{}
	sc := bufio.NewScanner(out)
	n := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "ack" {
			continue
		}
		g, _ := strconv.Atoi(f[1])
		v, _ := strconv.Atoi(f[2])
		acked[g] = max(acked[g], v)
		if n++; n == kill {
			cmd.Process.Kill() // lines already written stay readable
		}
	}
	cmd.Wait()
	if n < kill {
		t.Fatalf("child exited after %d acks, before the kill at %d", n, kill)
	}
	return acked
}

// TestCrashChild is the writer that TestCrashSafety kills. Each writer
// continues its counter from the value on disk and prints "ack <writer>
// <value>" only after Txn returns.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashDirEnv)
	if path == "" {
		t.Skip("run by TestCrashSafety")
	}
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // serialises writes to stdout
	var wg sync.WaitGroup
	for g := range crashWriters {
		wg.Go(func() {
			ka, kb := fmt.Sprintf("/crash/%d/a", g), fmt.Sprintf("/crash/%d/b", g)
			var n int
			var rev int64
			if kv, err := s.Get(t.Context(), ka); err == nil {
				n, _ = strconv.Atoi(string(kv.Value))
				rev = kv.ModRev
			}
			for {
				n++
				v := []byte(strconv.Itoa(n))
				r, err := s.Txn(t.Context(), store.Txn{
					If:   []store.Cond{store.ModRevIs(ka, rev)},
					Then: []store.Op{store.PutOp(ka, v), store.PutOp(kb, v)},
				})
				if err != nil {
					t.Errorf("writer %d: %v", g, err)
					return
				}
				rev = r
				mu.Lock()
				fmt.Fprintf(os.Stdout, "ack %d %d\n", g, n)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
