package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The attack tests run a tenant's job as hostile code against the agent
// and check that what it tries has no effect: reading the agent's or the
// server's credentials, writing another job's checkpoint marker, planting
// a pid file, outliving its agent, killing the server.

// startVirtual runs 'allot server --agents virtual' on the agent fleet and
// returns a lab without external agents (its log holds the server's).
func startVirtual(t *testing.T) *agentLab {
	t.Helper()
	return startVirtualWith(t, filepath.Join(root, "internal/e2e/testdata/agent-tenants.yaml"))
}

// startVirtualWith is startVirtual with the tenants file tenants and the
// server's extra flags; its tenant token is team's.
func startVirtualWith(t *testing.T, tenants string, extra ...string) *agentLab {
	t.Helper()
	needServer(t)
	dir := t.TempDir()
	lab := &agentLab{dir: dir, log: &syncBuffer{}}
	data := filepath.Join(dir, "data")
	args := append([]string{"server", "--data", data, "--listen", "127.0.0.1:0",
		"--fleet", filepath.Join(root, "internal/e2e/testdata/agent-fleet.yaml"), "--tenants", tenants,
		"--agents", "virtual", "--tick", "500ms", "--rate-limit", "0"}, extra...)
	url, admin, stop, err := startServerArgs(data, lab.log, args...)
	if err != nil {
		t.Fatalf("start server: %v\n%s", err, lab.log.String())
	}
	t.Cleanup(func() {
		stop()
		// The virtual agents' work directory is outside the data directory.
		if m := regexp.MustCompile(`virtual agents .*work=(\S+)`).FindStringSubmatch(lab.log.String()); m != nil {
			os.RemoveAll(m[1])
		}
		if t.Failed() {
			t.Logf("server log (last 12 KiB):\n%s", tail(lab.log.String(), 12<<10))
		}
	})
	lab.url, lab.admin = url, admin
	lab.team = strings.TrimSpace(lab.must(t, admin, "token", "create", "--tenant", "team"))
	return lab
}

// as is the lab seen with token instead of the team's.
func (l *agentLab) as(token string) *agentLab {
	return &agentLab{url: l.url, admin: l.admin, team: token, dir: l.dir, work: l.work, log: l.log}
}

// registered counts the times node's external agent said it registered.
func (l *agentLab) registered(node string) int {
	n := 0
	for _, line := range strings.Split(l.log.String(), "\n") {
		if strings.HasPrefix(line, "[agent "+node+"] ") && strings.Contains(line, "msg=registered") {
			n++
		}
	}
	return n
}

// restartAgent SIGKILLs node's agent, starts it again and waits until it
// has registered (it adopts what the killed one left that the server
// still runs there, and kills the rest).
func (l *agentLab) restartAgent(t *testing.T, node string) {
	t.Helper()
	before := l.registered(node)
	l.killAgent(t, node)
	l.startAgent(t, node)
	deadline := time.Now().Add(15 * time.Second)
	for l.registered(node) == before {
		if time.Now().After(deadline) {
			t.Fatalf("agent %s did not register again within 15s", node)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pidAlive reports whether pid is a live process; a zombie waiting for a
// parent that does not reap is not.
func pidAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z")
}

// logPid is the number after "name=" in the job's log.
func logPid(t *testing.T, log, name string) int {
	t.Helper()
	m := regexp.MustCompile(name + `=(\d+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no %s= in the log:\n%s", name, log)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// snoop is a job that looks for credentials where the agent's and the
// server's used to be within its reach; it is bounded to a few seconds.
const snoop = `name: snoop
tenant: team
command: ["sh", "-c", 'env; echo; tr "\0" " " < /proc/$PPID/cmdline; echo; tr "\0" "\n" < /proc/$PPID/environ; echo;
  for up in ../.. ../../.. ../../../.. ../../../../.. ../../../../../..; do cat $up/admin-token $up/data/admin-token 2>/dev/null; echo; done;
  timeout 5 find /tmp / -xdev -maxdepth 7 -name admin-token 2>/dev/null | head -50 | while read -r f; do cat "$f" 2>/dev/null; echo; done;
  echo snoop-done']
resources: {gpus_per_instance: 1}
`

func TestAttackJobReadsAdminToken(t *testing.T) {
	check := func(t *testing.T, l *agentLab, secrets map[string]string) {
		t.Helper()
		id := l.submit(t, snoop)
		l.waitState(t, id, "Succeeded", 20*time.Second)
		out := l.waitLog(t, id, 1, "snoop-done", 5*time.Second)
		for what, s := range secrets {
			if s != "" && strings.Contains(out, s) {
				t.Errorf("the job's log holds the %s", what)
			}
		}
		if strings.Contains(out, "ALLOT_TOKEN=") {
			t.Errorf("the job's environment has ALLOT_TOKEN:\n%s", out)
		}
	}
	t.Run("ExternalAgent", func(t *testing.T) {
		l := startLab(t)
		secrets := map[string]string{"admin token": l.admin, "team's token": l.team}
		for n, tok := range l.tokens {
			secrets["node token of "+n] = tok
		}
		check(t, l, secrets)
	})
	t.Run("VirtualAgents", func(t *testing.T) {
		l := startVirtual(t)
		check(t, l, map[string]string{"admin token": l.admin, "team's token": l.team})
	})
}

func TestAttackCheckpointTampering(t *testing.T) {
	l := startLab(t)
	// The victim checkpoints, then waits for the test's go to fail once;
	// its retry must resume from its own checkpoint.
	victim := l.submit(t, `name: victim
tenant: team
command: ["sh", "-c", 'if [ -n "$ALLOT_RESUME_FROM" ]; then echo "resumed from $ALLOT_RESUME_FROM"; exit 0; fi;
  echo state > "$ALLOT_CHECKPOINT_DIR/ckpt-b"; echo "$ALLOT_CHECKPOINT_DIR/ckpt-b" > "$ALLOT_CHECKPOINT_DIR/CHECKPOINT";
  while [ ! -e "$ALLOT_CHECKPOINT_DIR/go" ]; do sleep 0.1; done; exit 1']
resources: {gpus_per_instance: 4}
retry: {max_retries: 1}
`)
	defer l.cancelAll(t, victim)
	v := l.wait(t, victim, "Running with a checkpoint", 20*time.Second, func(j labJob) bool {
		return j.State == "Running" && j.CheckpointPath != ""
	})
	own := v.CheckpointPath
	// The attacker, another tenant, points the victim's marker at its own
	// file (where the marker is now, and where it was before), and its
	// own marker at the victim's checkpoint.
	rival := strings.TrimSpace(l.must(t, l.admin, "token", "create", "--tenant", "rival"))
	path := writeFile(t, "attacker.yaml", `name: attacker
tenant: rival
command: ["sh", "-c", 'echo evil > "$ALLOT_CHECKPOINT_DIR/evil";
  for m in "$ALLOT_CHECKPOINT_DIR/../../$0/checkpoints/CHECKPOINT" "$ALLOT_CHECKPOINT_DIR"/../../../*/checkpoints/"$0"/CHECKPOINT; do
    if echo "$ALLOT_CHECKPOINT_DIR/evil" > "$m"; then echo "tampered with $m"; fi; done;
  echo "../../$0/checkpoints/ckpt-b" > "$ALLOT_CHECKPOINT_DIR/CHECKPOINT"; sleep 1.5; echo attacker-done', '`+victim+`']
resources: {gpus_per_instance: 4}
`)
	out := l.must(t, rival, "job", "submit", "-f", path, "-o", "json")
	attacker := regexp.MustCompile(`"id":\s*"([^"]+)"`).FindStringSubmatch(out)
	if attacker == nil {
		t.Fatalf("job submit printed %q", out)
	}
	defer l.as(rival).cancelAll(t, attacker[1])
	a := l.as(rival).waitState(t, attacker[1], "Succeeded", 20*time.Second)
	alog := l.must(t, rival, "job", "logs", attacker[1])
	if strings.Contains(alog, "tampered with") {
		t.Errorf("the attacker wrote the victim's marker:\n%s", alog)
	}
	if a.CheckpointPath != "" {
		t.Errorf("the attacker's marker outside its checkpoint directory was reported: %q", a.CheckpointPath)
	}
	time.Sleep(1500 * time.Millisecond) // a checkpoint check of the victim's agent
	if err := os.WriteFile(filepath.Join(filepath.Dir(own), "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	v = l.waitState(t, victim, "Succeeded", 20*time.Second)
	if v.CheckpointPath != own {
		t.Errorf("victim's checkpoint %q, want its own %q", v.CheckpointPath, own)
	}
	l.waitLog(t, victim, 2, "resumed from "+own, 5*time.Second)
}

func TestAttackPlantedPIDFile(t *testing.T) {
	l := startLab(t)
	// A process of someone else's, in a group of its own.
	victim := exec.Command("sleep", "60")
	victim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	go victim.Wait()
	defer victim.Process.Kill()
	pid := victim.Process.Pid
	id := l.submit(t, `name: planter
tenant: team
command: ["sh", "-c", 'for d in "$ALLOT_CHECKPOINT_DIR/../../run" "$HOME/../../../run" "$HOME/../run" ../run; do
  echo $0 > "$d/planted.1.0.pid" 2>/dev/null && echo "planted in $d"; done; echo planted-done; exec sleep 60', '`+strconv.Itoa(pid)+`']
resources: {gpus_per_instance: 1}
checkpoint: {grace: 1s}
`)
	defer l.cancelAll(t, id)
	j := l.waitState(t, id, "Running", 20*time.Second)
	l.waitLog(t, id, 1, "planted-done", 10*time.Second)
	l.restartAgent(t, j.Allocations[0].Node)
	time.Sleep(200 * time.Millisecond)
	if !pidAlive(pid) {
		t.Fatalf("the restarted agent killed process %d, named by a pid file a job planted", pid)
	}
}

// A job whose agent was SIGKILLed and stayed away past the node timeout
// has been requeued by the server: the restarted agent kills everything
// of it, its setsid child included, though nothing else did (its agent
// runs with --node-timeout 0, so its supervisor never fences it).
func TestAttackAgentRestartFencing(t *testing.T) {
	l := startLab(t)
	for _, n := range labNodes {
		l.stopAgent(t, n)
		l.startAgent(t, n, "--node-timeout", "0")
	}
	l.waitNodesReady(t, labNodes...)
	id := l.submit(t, `name: stayer
tenant: team
command: ["sh", "-c", '(setsid sh -c "echo child=\$\$; exec sleep 60" &); echo leader=$$; exec sleep 60']
resources: {gpus_per_instance: 1}
checkpoint: {grace: 1s}
`)
	defer l.cancelAll(t, id)
	j := l.waitState(t, id, "Running", 20*time.Second)
	out := l.waitLog(t, id, 1, "child=", 10*time.Second)
	out = l.waitLog(t, id, 1, "leader=", 5*time.Second)
	child, leader := logPid(t, out, "child"), logPid(t, out, "leader")
	defer syscall.Kill(child, syscall.SIGKILL)
	defer syscall.Kill(leader, syscall.SIGKILL)
	if !pidAlive(child) || !pidAlive(leader) {
		t.Fatalf("job's processes %d and %d not running", leader, child)
	}
	node := j.Allocations[0].Node
	l.killAgent(t, node)
	l.wait(t, id, "requeued after the node timeout", 20*time.Second, func(j labJob) bool {
		return len(j.AttemptHistory) > 0 && j.AttemptHistory[0].Reason == "NodeLost"
	})
	if !pidAlive(child) || !pidAlive(leader) {
		t.Fatal("the job's processes died without an agent: the test shows nothing")
	}
	l.startAgent(t, node, "--node-timeout", "0")
	deadline := time.Now().Add(10 * time.Second)
	for pidAlive(child) || pidAlive(leader) {
		if time.Now().After(deadline) {
			t.Fatalf("the job's processes (leader %d alive %v, setsid child %d alive %v) outlived the restarted agent's fencing by 10s",
				leader, pidAlive(leader), child, pidAlive(child))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestAttackJobKillsServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only a server run as root gives its in-process agents' jobs uids of their own; otherwise they run as its user and may signal it (documented)")
	}
	l := startVirtual(t)
	id := l.submit(t, `name: killer
tenant: team
command: ["sh", "-c", 'kill -9 $PPID; echo "kill exit $?"']
resources: {gpus_per_instance: 1}
`)
	l.waitState(t, id, "Succeeded", 20*time.Second)
	l.waitLog(t, id, 1, "kill exit", 5*time.Second)
	resp, err := http.Get(l.url + "/healthz")
	if err != nil {
		t.Fatalf("server gone after a job ran kill -9 $PPID: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz %d after a job ran kill -9 $PPID", resp.StatusCode)
	}
}
