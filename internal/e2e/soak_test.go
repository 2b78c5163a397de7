package e2e

import (
	"context"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/netfault"
)

// TestSoak runs three servers on a three-member etcd under a steady
// submit load for $ALLOT_SOAK (a duration, e.g. 10m; skipped when unset),
// injecting a random fault every few seconds: the leader killed or
// stalled, an etcd member stopped, the leader partitioned from etcd, slow
// links, dropped connections. Each fault is healed before the next, and a
// job must start after it. At the end it prints the history checker's
// verdict and its counts (scripts/soak.sh runs it). $ALLOT_SOAK_SEED
// picks the faults' order (default: the time).
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("ALLOT_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set ALLOT_SOAK to a duration (scripts/soak.sh 10m)")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("ALLOT_SOAK_SEED"); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("ALLOT_SOAK_SEED %q: %v", s, err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	l := newHALab(t, 3)
	stop := l.load()
	faults := map[string]int{}
	start := time.Now()
	t.Logf("soak: %v with seed %d", d, seed)
	for n := 1; time.Since(start) < d; n++ {
		time.Sleep(time.Duration(1000+rng.IntN(3000)) * time.Millisecond)
		kind := []string{"kill-leader", "stall-leader", "stop-etcd-member", "partition-leader", "slow-links", "drop-connections"}[rng.IntN(6)]
		faults[kind]++
		at := time.Now()
		leader := l.waitLeader(20 * time.Second)
		switch kind {
		case "kill-leader":
			l.servers[leader].kill()
			next := l.waitLeader(20*time.Second, leader)
			l.probe("soak-"+strconv.Itoa(n), next, at, 20*time.Second)
			l.start(leader)
		case "stall-leader":
			_ = l.servers[leader].cmd.Process.Signal(syscall.SIGSTOP)
			next := l.waitLeader(20*time.Second, leader)
			l.probe("soak-"+strconv.Itoa(n), next, at, 20*time.Second)
			_ = l.servers[leader].cmd.Process.Signal(syscall.SIGCONT)
		case "stop-etcd-member":
			m := rng.IntN(3)
			l.etcd.Stop(m)
			l.probe("soak-"+strconv.Itoa(n), leader, at, 20*time.Second)
			l.etcd.Restart(m)
		case "partition-leader":
			for _, p := range l.servers[leader].proxies {
				p.Set(netfault.Blackhole, 0)
			}
			next := l.waitLeader(20*time.Second, leader)
			l.probe("soak-"+strconv.Itoa(n), next, at, 20*time.Second)
			for _, p := range l.servers[leader].proxies {
				p.Heal()
			}
		case "slow-links":
			delay := time.Duration(10+rng.IntN(90)) * time.Millisecond
			for _, s := range l.servers {
				for _, p := range s.proxies {
					p.Set(netfault.Delay, delay)
				}
			}
			l.probe("soak-"+strconv.Itoa(n), leader, at, 20*time.Second)
			for _, s := range l.servers {
				for _, p := range s.proxies {
					p.Heal()
				}
			}
		case "drop-connections":
			for _, p := range l.servers[rng.IntN(len(l.servers))].proxies {
				p.Set(netfault.Drop, 0)
				p.Heal()
			}
			l.probe("soak-"+strconv.Itoa(n), leader, at, 20*time.Second)
		}
		// Settle: one server leads (a stalled or cut-off one has stepped
		// down) before the next fault.
		time.Sleep(4 * time.Second)
		l.waitLeader(20 * time.Second)
	}
	stop()
	time.Sleep(3 * time.Second) // the last two-second jobs end
	r := l.check()
	jobs, err := l.cl.ListJobs(context.Background(), client.JobFilter{State: "Succeeded"})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	total := 0
	for k, n := range faults {
		kinds = append(kinds, k+" "+strconv.Itoa(n))
		total += n
	}
	sort.Strings(kinds)
	verdict := "PASS"
	if !r.OK() {
		verdict = "FAIL"
	}
	t.Logf("soak: ran %v, seed %d", time.Since(start).Round(time.Second), seed)
	t.Logf("soak: faults injected %d (%s)", total, strings.Join(kinds, ", "))
	t.Logf("soak: jobs acknowledged %d, completed %d, lost %d", r.Acked, len(jobs), len(r.Lost))
	t.Logf("soak: double-bound GPUs %d, partly bound gangs %d, reruns of stopped attempts %d, plans outside the leader's term %d",
		r.DoubleBound, r.PartialGangs, r.Reruns, r.StalePlans)
	t.Logf("soak: leader terms %d, plan commits %d, revisions %d", r.Leaders, r.Commits, r.Revisions)
	t.Logf("soak: verdict %s", verdict)
}
