package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/history"
	"github.com/allot-dev/allot/internal/netfault"
	"github.com/allot-dev/allot/internal/store/etcd/etcdtest"
)

// haServer is one `allot server` process of a group sharing an etcd
// prefix. It reaches etcd through proxies of its own (one per member), so
// that a test can cut it off alone.
type haServer struct {
	data, listen, url string
	proxies           []*netfault.Proxy
	cmd               *exec.Cmd
	exited            chan struct{}
	log               syncBuffer
}

// haLab is a three-member etcd, servers on one prefix, and an agent with
// virtual GPUs for each of the lab fleet's three nodes (internal/e2e
// testdata/agent-fleet.yaml), all given every server's URL, and a client
// that knows every server.
type haLab struct {
	t       *testing.T
	etcd    *etcdtest.Cluster
	prefix  string
	dir     string
	servers []*haServer
	token   string
	cl      *client.Client
	agents  []*exec.Cmd
	log     syncBuffer // the agents' output

	mu      sync.Mutex
	acked   []string // submits acknowledged
	refused []error  // submits that failed
}

func newHALab(t *testing.T, servers int) *haLab {
	t.Helper()
	needServer(t)
	if !strings.Contains(serverHelp, "--advertise-url") {
		t.Skip("allot server has no leader election")
	}
	l := &haLab{t: t, etcd: etcdtest.Start(t, 3), prefix: "/ha", dir: t.TempDir()}
	for i := range servers {
		s := &haServer{data: filepath.Join(l.dir, fmt.Sprintf("s%d", i)), listen: "127.0.0.1:0"}
		for _, hp := range l.etcd.HostPorts() {
			p, err := netfault.Listen(hp)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			s.proxies = append(s.proxies, p)
		}
		l.servers = append(l.servers, s)
		l.start(i)
		if i == 0 {
			l.waitLeader(15 * time.Second)
		}
	}
	tok, err := os.ReadFile(filepath.Join(l.servers[0].data, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	l.token = strings.TrimSpace(string(tok))
	t.Cleanup(func() {
		if t.Failed() {
			for i, s := range l.servers {
				t.Logf("server %d's log (last 6 KiB):\n%s", i, tail(s.log.String(), 6<<10))
			}
		}
	})
	var urls []string
	for _, s := range l.servers {
		urls = append(urls, s.url)
	}
	if l.cl, err = client.New(strings.Join(urls, ","), l.token); err != nil {
		t.Fatal(err)
	}
	l.startAgents(strings.Join(urls, ","))
	return l
}

// startAgents runs an agent for each lab node, given every server, and
// waits until the nodes are Ready.
func (l *haLab) startAgents(servers string) {
	t := l.t
	t.Helper()
	work := workDir(t)
	for _, n := range labNodes {
		tok := strings.TrimSpace(allotMust(t, l.servers[0].url, l.token, "token", "create", "--node", n))
		l.agents = append(l.agents, runAgent(t, servers, n, tok, filepath.Join(l.dir, "agent-"+n), work, haNodeTimeout, &l.log))
	}
	t.Cleanup(func() {
		stopAgents(l.agents, 10*time.Second)
		if t.Failed() {
			t.Logf("agents' log (last 8 KiB):\n%s", tail(l.log.String(), 8<<10))
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		nodes, err := l.cl.Nodes(context.Background())
		ready := 0
		for _, n := range nodes {
			if n.Health == "Ready" {
				ready++
			}
		}
		if err == nil && ready == len(labNodes) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d lab nodes Ready after 30s (%v)\n%s", ready, len(labNodes), err, tail(l.log.String(), 4096))
		}
	}
}

// haNodeTimeout is the servers' and agents' --node-timeout: longer than a
// failover, so that agents keep their jobs through one.
const haNodeTimeout = "15s"

// start runs server i (again: on the port it had) and waits until it
// serves.
func (l *haLab) start(i int) {
	t, s := l.t, l.servers[i]
	t.Helper()
	var eps []string
	for _, p := range s.proxies {
		eps = append(eps, p.Addr())
	}
	s.cmd = exec.Command(bin, "server", "--data", s.data, "--listen", s.listen, "--agents", "external",
		"--fleet", filepath.Join(root, "internal/e2e/testdata/agent-fleet.yaml"),
		"--tenants", filepath.Join(root, "internal/e2e/testdata/agent-tenants.yaml"), "--node-timeout", haNodeTimeout,
		"--tick", "500ms", "--store", "etcd://"+strings.Join(eps, ",")+l.prefix, "--log-level", "info", "--rate-limit", "0",
		"--check-incremental")
	s.cmd.Dir = root
	pr, pw := io.Pipe()
	s.cmd.Stdout, s.cmd.Stderr = pw, pw
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.exited = make(chan struct{})
	go func() {
		_ = s.cmd.Wait()
		pw.Close()
		close(s.exited)
	}()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.log.WriteString(sc.Text() + "\n")
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case s.url = <-found:
	case <-s.exited:
		t.Fatalf("allot server exited before listening:\n%s", s.log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("allot server did not listen within 30s:\n%s", s.log.String())
	}
	s.listen = strings.TrimPrefix(s.url, "http://")
	t.Cleanup(s.kill)
}

// kill stops the server as a crash would.
func (s *haServer) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies too, but say so
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// running reports whether the server's process is alive.
func (s *haServer) running() bool {
	if s.exited == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// readyz returns the status of the server's /readyz, 0 when it does not
// answer within 3 s.
func (s *haServer) readyz() int {
	hc := http.Client{Timeout: 3 * time.Second}
	resp, err := hc.Get(s.url + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// leads reads the server's allot_server_leader gauge; false when it
// does not answer.
func (s *haServer) leads() bool { return s.metric("allot_server_leader") == 1 }

// metric reads one unlabelled series of the server's /metrics; -1 when
// the server does not answer or has no such series.
func (s *haServer) metric(name string) float64 {
	// A stopped (SIGSTOP) or cut-off server may accept and never answer.
	hc := http.Client{Timeout: time.Second}
	resp, err := hc.Get(s.url + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// waitLeader returns the index of the one server that leads, failing when
// none, or more than one, does for longer than within. Servers in skip
// are not asked (stopped or cut off: they may still believe they lead
// until they notice).
func (l *haLab) waitLeader(within time.Duration, skip ...int) int {
	l.t.Helper()
	deadline := time.Now().Add(within)
	for {
		var leading []int
		for i, s := range l.servers {
			if s.url != "" && s.running() && !slices.Contains(skip, i) && s.leads() {
				leading = append(leading, i)
			}
		}
		if len(leading) == 1 {
			return leading[0]
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("servers leading: %v after %v", leading, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// submit posts a job through the lab's client and records the outcome.
func (l *haLab) submit(ctx context.Context, doc string) (client.Job, error) {
	j, err := l.cl.Submit(ctx, []byte(doc), "application/yaml")
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		l.acked = append(l.acked, j.ID)
	} else if ctx.Err() == nil {
		l.refused = append(l.refused, err)
	}
	return j, err
}

// waitLog waits until job id's log, read through the lab's servers,
// holds want, and returns how long that took; it fails past within.
func (l *haLab) waitLog(id, want string, within time.Duration) time.Duration {
	l.t.Helper()
	start := time.Now()
	for {
		var b strings.Builder
		err := l.cl.Logs(context.Background(), id, 0, false, &b)
		if err == nil && strings.Contains(b.String(), want) {
			return time.Since(start)
		}
		if time.Since(start) > within {
			l.t.Fatalf("job %s's log lacks %q after %v (%v):\n%s", id, want, within, err, tail(b.String(), 2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// load submits a one-GPU job of two seconds every 150 ms (about 13 of the
// lab's 24 GPUs busy) until the returned stop is called.
func (l *haLab) load() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; ctx.Err() == nil; n++ {
			_, _ = l.submit(ctx, fmt.Sprintf("name: ha-%d\ntenant: team\ncommand: [sleep, '2']\nduration: 2s\n"+
				"resources: {gpus_per_instance: 1}\n", n))
			select {
			case <-ctx.Done():
			case <-time.After(150 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// probe submits a job through server via first (the others after it) and
// returns how long after since it was Running, failing past limit. A
// server cut off from etcd still accepts requests and cannot answer them,
// so a probe goes first to one known to be well.
func (l *haLab) probe(name string, via int, since time.Time, limit time.Duration) time.Duration {
	l.t.Helper()
	var urls []string
	for i := range l.servers {
		urls = append(urls, l.servers[(via+i)%len(l.servers)].url)
	}
	cl, err := client.New(strings.Join(urls, ","), l.token)
	if err != nil {
		l.t.Fatal(err)
	}
	cl.HTTP.Timeout = 5 * time.Second
	for {
		j, err := cl.Submit(context.Background(), []byte("name: "+name+"\ntenant: team\ncommand: [sleep, '5']\n"+
			"duration: 5s\npriority: {value: 100}\nresources: {gpus_per_instance: 1}\n"), "application/yaml")
		if err == nil {
			l.mu.Lock()
			l.acked = append(l.acked, j.ID)
			l.mu.Unlock()
			for {
				got, err := cl.GetJob(context.Background(), j.ID)
				// Bound by a committed Plan (Preparing until its agent
				// reports the process started).
				if err == nil && got.State != "Queued" {
					return time.Since(since)
				}
				if time.Since(since) > limit {
					l.t.Fatalf("job %s is %q (%v) %v after %v", j.ID, got.State, err, time.Since(since), since.Format(time.TimeOnly))
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		if time.Since(since) > limit {
			l.t.Fatalf("no submit acknowledged within %v: %v", limit, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// check reads the whole history back from etcd and fails the test on any
// lost job or broken property; it also checks the end state's GPUs.
func (l *haLab) check() history.Report {
	l.t.Helper()
	l.mu.Lock()
	acked := append([]string(nil), l.acked...)
	for _, err := range l.refused {
		var ae *client.APIError
		if errors.As(err, &ae) {
			l.t.Logf("submit refused during a fault: %v", err)
			if ae.Status == http.StatusInternalServerError {
				// A fault of the store or of a server is a 502 or 503
				// that says whether the write may have happened, never
				// an unexplained 500.
				l.t.Errorf("submit answered 500 during a fault: %v", err)
			}
		} else {
			l.t.Logf("submit failed during a fault (never acknowledged): %v", err)
		}
	}
	l.mu.Unlock()
	r := readHistory(l.t, l.etcd, l.prefix, acked)
	l.t.Logf("history: %d revisions, %d jobs, %d acknowledged, %d plan commits, %d terms, %d lost, %d violations",
		r.Revisions, r.Jobs, r.Acked, r.Commits, r.Leaders, len(r.Lost), len(r.Violations))
	if !r.OK() || r.Commits == 0 {
		l.t.Errorf("history check: lost %v, violations:\n%s", r.Lost, strings.Join(r.Violations, "\n"))
	}
	return r
}

// Three servers on a three-member etcd under a steady submit load: the
// leader is killed (SIGKILL) twice and each time another server leads and
// commits a Plan within 5 s while the killed one comes back as a
// follower; a follower passes a submit to the leader; a leader stalled
// (SIGSTOP) past its lease is replaced and steps down when it resumes,
// and a submit a follower passed to it is acknowledged by the next leader
// within 10 s. The history checker then finds nothing lost, no GPU bound twice, no gang
// partly bound and no Plan committed outside the leader's term.
func TestHALeaderKilled(t *testing.T) {
	l := newHALab(t, 3)
	// A job that writes a line before the first failover and goes on
	// writing through it: the new leader must get the early line back
	// from its agent (server.AppendLog's offsets).
	talker, err := l.submit(context.Background(), "name: talker\ntenant: team\nresources: {gpus_per_instance: 1}\n"+
		"command: [sh, -c, 'echo before-failover; i=0; while [ $i -lt 80 ]; do echo \"line $i\"; i=$((i+1)); sleep 0.25; done']\n")
	if err != nil {
		t.Fatal(err)
	}
	l.waitLog(talker.ID, "before-failover", 15*time.Second)
	stop := l.load()
	for round := 1; round <= 2; round++ {
		time.Sleep(2 * time.Second)
		leader := l.waitLeader(10 * time.Second)
		killed := time.Now()
		l.servers[leader].kill()
		next := l.waitLeader(10*time.Second, leader)
		took := l.probe(fmt.Sprintf("probe-%d", round), next, killed, 5*time.Second)
		t.Logf("round %d: killed server %d; server %d leads and committed %v later", round, leader, next, took.Round(time.Millisecond))
		if round == 1 {
			t.Logf("the new leader has the log written before the failover %v after it",
				l.waitLog(talker.ID, "before-failover", 10*time.Second).Round(time.Millisecond))
		}
		l.start(leader) // back, as a follower
		if l.servers[leader].leads() {
			t.Errorf("round %d: restarted server %d leads beside server %d", round, leader, next)
		}
	}

	// A leader that stalls (SIGSTOP) past its lease, as in a long pause or
	// a partition, is replaced; when it resumes it must find its term over
	// and step down rather than commit a stale Plan.
	stalled := l.waitLeader(10 * time.Second)
	_ = l.servers[stalled].cmd.Process.Signal(syscall.SIGSTOP)
	// A submit a follower passes to the stalled leader ends when another
	// server is elected (502 LeaderFailed) and the client's keyed retry
	// lands on the new leader, long before the client's 30 s timeout.
	type submitted struct {
		job  client.Job
		err  error
		took time.Duration
	}
	during := make(chan submitted, 1)
	go func(via string, stoppedAt time.Time) {
		fc, err := client.New(via, l.token)
		if err != nil {
			during <- submitted{err: err}
			return
		}
		j, err := fc.Submit(context.Background(), []byte("name: during-stall\ntenant: team\ncommand: [sleep, '5']\n"+
			"duration: 5s\nresources: {gpus_per_instance: 1}\n"), "application/yaml")
		during <- submitted{j, err, time.Since(stoppedAt)}
	}(l.servers[(stalled+1)%len(l.servers)].url, time.Now())
	next := l.waitLeader(15*time.Second, stalled)
	select {
	case d := <-during:
		if d.err != nil || d.took > 10*time.Second {
			t.Errorf("a submit through a follower while the leader stalled: %v after %v; want a job within 10 s", d.err, d.took)
		} else {
			t.Logf("a submit through a follower while the leader stalled was acknowledged %v after the stall", d.took.Round(time.Millisecond))
			l.mu.Lock()
			l.acked = append(l.acked, d.job.ID)
			l.mu.Unlock()
		}
	case <-time.After(20 * time.Second):
		t.Errorf("a submit through a follower still waits 20 s after the leader stalled")
	}
	_ = l.servers[stalled].cmd.Process.Signal(syscall.SIGCONT)
	time.Sleep(3 * time.Second)
	if got := l.waitLeader(10 * time.Second); got != next {
		t.Errorf("after the stalled server %d resumed, server %d leads, not %d", stalled, got, next)
	}
	if log := l.servers[stalled].log.String(); !strings.Contains(log, "leadership lost") {
		t.Errorf("the resumed server %d did not step down:\n%s", stalled, tail(log, 3000))
	}
	stop()

	// A follower passes writes to the leader and answers reads itself.
	leader := l.waitLeader(10 * time.Second)
	follower := l.servers[(leader+1)%len(l.servers)]
	fc, err := client.New(follower.url, l.token)
	if err != nil {
		t.Fatal(err)
	}
	leaderBefore, followerBefore := l.servers[leader].metric("allot_submits_total"), follower.metric("allot_submits_total")
	j, err := fc.Submit(context.Background(), []byte("name: via-follower\ntenant: team\ncommand: [sleep, '30']\n"+
		"duration: 30s\nresources: {gpus_per_instance: 1}\n"), "application/yaml")
	if err != nil {
		t.Fatalf("submit through follower %s: %v", follower.url, err)
	}
	l.mu.Lock()
	l.acked = append(l.acked, j.ID)
	l.mu.Unlock()
	if lb, fb := l.servers[leader].metric("allot_submits_total"), follower.metric("allot_submits_total"); lb != leaderBefore+1 || fb != followerBefore {
		t.Errorf("a submit through the follower counted %v on the leader and %v on the follower; want 1 and 0 (forwarded)",
			lb-leaderBefore, fb-followerBefore)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got, err := fc.GetJob(context.Background(), j.ID)
		if err == nil && got.State == "Running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s submitted through a follower: %q %v", j.ID, got.State, err)
		}
	}
	if _, err := fc.Alerts(context.Background()); err != nil {
		t.Errorf("alerts through a follower: %v", err)
	}
	if r := l.check(); r.Leaders < 4 {
		t.Errorf("%d terms recorded, want at least 4 (three failovers)", r.Leaders)
	}
}

// The store's faults: an etcd member stops (service goes on) and comes
// back (it catches up); the leader is cut off from etcd by a partition
// that answers nothing (another server leads, the cut-off one steps down
// and never commits); etcd traffic is slowed and connections dropped.
func TestHAEtcdFaults(t *testing.T) {
	l := newHALab(t, 3)
	stop := l.load()
	defer stop()

	// One member of three stops: the majority serves, Plans commit.
	l.etcd.Stop(0)
	l.probe("member-down", 0, time.Now(), 10*time.Second)
	l.etcd.Restart(0)
	l.probe("member-back", 0, time.Now(), 10*time.Second)

	// The leader is partitioned from etcd: its connections stay open and
	// carry nothing.
	time.Sleep(time.Second)
	leader := l.waitLeader(10 * time.Second)
	for _, p := range l.servers[leader].proxies {
		p.Set(netfault.Blackhole, 0)
	}
	cut := time.Now()
	next := l.waitLeader(15*time.Second, leader)
	took := l.probe("partitioned", next, cut, 15*time.Second)
	t.Logf("leader %d cut off from etcd; server %d leads and committed %v later", leader, next, took.Round(time.Millisecond))
	if code := l.servers[leader].readyz(); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz of the server cut off from etcd: %d, want 503", code)
	}
	for _, p := range l.servers[leader].proxies {
		p.Heal()
	}
	time.Sleep(4 * time.Second)
	if code := l.servers[leader].readyz(); code != http.StatusOK {
		t.Errorf("/readyz after the partition healed: %d, want 200", code)
	}
	if got := l.waitLeader(10 * time.Second); got != next {
		t.Errorf("after the partition healed server %d leads, not %d", got, next)
	}
	if log := l.servers[leader].log.String(); !strings.Contains(log, "leadership lost") {
		t.Errorf("the cut-off server %d did not step down:\n%s", leader, tail(log, 3000))
	}

	// Slow links and dropped connections everywhere: service goes on.
	for _, s := range l.servers {
		for _, p := range s.proxies {
			p.Set(netfault.Delay, 30*time.Millisecond)
		}
	}
	l.probe("slow", next, time.Now(), 15*time.Second)
	for _, s := range l.servers {
		for _, p := range s.proxies {
			p.Set(netfault.Drop, 0)
			p.Heal()
		}
	}
	l.probe("dropped", next, time.Now(), 15*time.Second)
	stop()

	// The restarted member has caught up: it answers, on its own, at the
	// cluster's revision.
	head := l.etcd.Rev()
	for deadline := time.Now().Add(10 * time.Second); l.etcd.MemberRev(0) < head; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("restarted member at revision %d, cluster at %d", l.etcd.MemberRev(0), head)
		}
	}
	l.check()
}
