package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
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

// readmeJobs is the state each job file the README's "Try it" submits must
// reach under 'allot up' (before the commands after the submit run): a file
// the README submits without an entry here fails the test, so that the
// README and this list change together.
var readmeJobs = map[string]string{
	"examples/jobs/copilot-chat.yaml": "Running", // allot demo serve: it serves until cancelled
}

// TestReadmeTryIt runs every command of README.md's "Try it" section as a
// person pasting it would, with the allot binary for 'go run ./cmd/allot'
// and a free port for 8080, in a directory holding the repository's
// examples and data. Each command must exit 0; commands that stream (-f,
// --watch) are interrupted (SIGINT) after a few seconds and must exit 0
// too. Every job submitted must reach its state in readmeJobs, and
// stopping 'allot up' (the README's kill %1) must end it with status 0
// and leave none of its jobs' processes behind.
func TestReadmeTryIt(t *testing.T) {
	needServer(t)
	text, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := tryItBlocks(string(text))
	if len(blocks) == 0 {
		t.Fatal(`README.md has no sh blocks under "## Try it"`)
	}
	work := t.TempDir()
	for _, d := range []string{"examples", "data"} {
		if err := os.Symlink(filepath.Join(root, d), filepath.Join(work, d)); err != nil {
			t.Fatal(err)
		}
	}
	tmp := workDir(t) // the jobs' files: none may remain in use once up stops
	for i, b := range blocks {
		t.Run(fmt.Sprintf("block%d", i+1), func(t *testing.T) { runReadmeBlock(t, work, tmp, b) })
	}
}

// tryItBlocks returns the ```sh blocks of the "## Try it" section.
func tryItBlocks(readme string) []string {
	_, sec, ok := strings.Cut(readme, "\n## Try it\n")
	if !ok {
		return nil
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	var out []string
	for {
		_, rest, ok := strings.Cut(sec, "```sh\n")
		if !ok {
			return out
		}
		body, after, ok := strings.Cut(rest, "```")
		if !ok {
			return out
		}
		out = append(out, body)
		sec = after
	}
}

// readmeCommands joins continued lines and drops comments and blank lines.
func readmeCommands(block string) []string {
	var cmds []string
	cur := ""
	for _, line := range strings.Split(block, "\n") {
		line = stripComment(line)
		if strings.HasSuffix(line, `\`) {
			cur += strings.TrimSuffix(line, `\`) + " "
			continue
		}
		cur += line
		if c := strings.TrimSpace(cur); c != "" {
			cmds = append(cmds, strings.Join(strings.Fields(c), " "))
		}
		cur = ""
	}
	return cmds
}

// stripComment drops a " # comment" outside quotes.
func stripComment(line string) string {
	quote := rune(0)
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return strings.TrimRight(line[:i], " \t")
		}
	}
	return line
}

var (
	goRun       = regexp.MustCompile(`\bgo run \./cmd/allot\b`)
	placeholder = regexp.MustCompile(`<ID>|<id>`)
)

// readmeScript turns a block into a bash script that runs each command,
// reports the first that fails with its status, captures the IDs a submit
// prints (for <ID>) and, after a submit, waits while the test checks the
// jobs (CHECK-JOBS on stdout, a line on stdin), and checks that 'allot up'
// exits 0 where the block stops it (kill %1) or at the block's end.
func readmeScript(cmds []string, port int) string {
	var b strings.Builder
	b.WriteString("set -u\nfail() { echo \"README command failed (exit $2): $1\" >&2; exit 1; }\nUP=\nID=\n")
	for _, c := range cmds {
		run := goRun.ReplaceAllLiteralString(c, `"$ALLOT"`)
		run = strings.ReplaceAll(run, "127.0.0.1:8080", "127.0.0.1:"+strconv.Itoa(port))
		run = placeholder.ReplaceAllLiteralString(run, `"$ID"`)
		q := shellQuote(c)
		switch {
		case strings.HasSuffix(run, "&"):
			run = strings.TrimSpace(strings.TrimSuffix(run, "&"))
			if strings.Contains(run, " up") && !strings.Contains(run, "--listen") {
				run += " --listen 127.0.0.1:" + strconv.Itoa(port)
			}
			if goRun.MatchString(c) {
				// As 'go run' does, a parent process runs the binary: a
				// signal to the shell's job reaches the parent only, but
				// Ctrl-C (SIGINT to the terminal's group) reaches both.
				run = "bash -c " + shellQuote("trap 'kill -INT $c 2>/dev/null' INT; "+run+" & c=$!; wait $c; wait $c")
			}
			fmt.Fprintf(&b, "echo %s >&2\n%s &\nUP=$!\n", shellQuote("+ "+c), run)
		case strings.HasPrefix(c, "kill %1") || strings.HasSuffix(c, "allot down") || strings.Contains(c, "allot down "):
			fmt.Fprintf(&b, "echo %s >&2\n%s || fail %s $?\n", shellQuote("+ "+c), run, q)
			fmt.Fprintf(&b, "wait \"$UP\"; rc=$?; [ $rc -eq 0 ] || fail %s $rc\nUP=\n", shellQuote("allot up (after "+c+")"))
		case strings.Contains(run, " job submit "):
			fmt.Fprintf(&b, "echo %s >&2\nout=$(%s) || fail %s $?\nprintf '%%s\\n' \"$out\" | tee -a \"$IDS\"\nID=${out%%%%$'\\n'*}\necho CHECK-JOBS; read -r _\n",
				shellQuote("+ "+c), run, q)
		case strings.Contains(run, " -f") || strings.Contains(run, "--watch"):
			fmt.Fprintf(&b, "echo %s >&2\ntimeout --preserve-status -s INT 4 %s || fail %s $?\n", shellQuote("+ "+c), run, q)
		default:
			fmt.Fprintf(&b, "echo %s >&2\n%s || fail %s $?\n", shellQuote("+ "+c), run, q)
		}
	}
	b.WriteString("if [ -n \"$UP\" ]; then kill -INT \"$UP\"; wait \"$UP\"; rc=$?; " +
		"[ $rc -eq 0 ] || fail 'allot up (interrupted)' $rc; fi\n")
	return b.String()
}

func runReadmeBlock(t *testing.T, work, tmp, block string) {
	cmds := readmeCommands(block)
	var port int
	for try := 1; ; try++ {
		out, stderr, p, err := runReadmeScript(t, work, tmp, cmds)
		port = p
		// The port was free when chosen; another test may have taken it
		// before 'allot up' bound it.
		if err != nil && try < 3 && strings.Contains(stderr, "address already in use") {
			t.Logf("try %d: the chosen port was taken meanwhile; again on another", try)
			continue
		}
		if err != nil {
			t.Fatalf("README block %v\ncommands:\n  %s\nstdout (tail):\n%s\nstderr (tail; each command is echoed as it begins):\n%s", err,
				strings.Join(cmds, "\n  "), tail(out, 4096), tail(stderr, 6144))
		}
		break
	}
	t.Logf("ran %d commands", len(cmds))
	if strings.Contains(readmeScript(cmds, 0), "\nUP=$!") {
		checkNoJobProcesses(t, tmp)
		checkPortFree(t, port)
	}
}

// checkPortFree fails t unless port on loopback can be bound: nothing of
// the run still serves there.
func checkPortFree(t *testing.T, port int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Errorf("after the block, port %d is still taken: %v", port, err)
		return
	}
	ln.Close()
}

// readmeBlockTimeout bounds one block: the offline blocks replay months of
// traces on two cores in a minute or so; a command that hangs then fails
// the block, naming itself, well before the package's own timeout.
const readmeBlockTimeout = 4 * time.Minute

// runReadmeScript runs the commands of one block as readmeScript makes
// them, on a port free a moment ago, and returns its stdout and stderr.
// On the timeout it kills the script's whole process group (the commands
// it started in the background too), so that the pipes close.
func runReadmeScript(t *testing.T, work, tmp string, cmds []string) (stdout, stderr string, port int, err error) {
	port = freePort(t)
	ids := filepath.Join(t.TempDir(), "ids")
	ctx, cancel := context.WithTimeout(context.Background(), readmeBlockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", readmeScript(cmds, port))
	cmd.Dir = work
	cmd.Env = append(cleanEnv(), "HOME="+home, "ALLOT="+bin, "IDS="+ids, "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errBuf syncBuffer
	cmd.Stderr = writerFunc(func(p []byte) (int, error) { errBuf.WriteString(string(p)); return len(p), nil })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		line := sc.Text()
		if line != "CHECK-JOBS" {
			out.WriteString(line + "\n")
			continue
		}
		checkReadmeJobs(t, work, port, cmds, ids)
		if _, err := io.WriteString(stdin, "\n"); err != nil {
			t.Error(err)
		}
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v (%v): the last command echoed on stderr did not end", readmeBlockTimeout, err)
	}
	return out.String(), errBuf.String(), port, err
}

// checkReadmeJobs waits until every job the block submitted reaches the
// state readmeJobs gives its file.
func checkReadmeJobs(t *testing.T, work string, port int, cmds []string, idsFile string) {
	t.Helper()
	want := ""
	for _, c := range cmds {
		if _, f, ok := strings.Cut(c, " job submit -f "); ok {
			f = strings.Fields(f)[0]
			s, ok := readmeJobs[f]
			if !ok {
				t.Errorf("README submits %s: add the state its jobs must reach to readmeJobs", f)
				continue
			}
			if want != "" && want != s {
				t.Errorf("README submits files with different expected states; keep one per block")
			}
			want = s
		}
	}
	data, _ := os.ReadFile(idsFile)
	ids := strings.Fields(string(data))
	if want == "" || len(ids) == 0 {
		return
	}
	tok, err := os.ReadFile(filepath.Join(work, "allot-data", "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	admin := strings.TrimSpace(string(tok))
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for {
			var j job
			if err := json.Unmarshal([]byte(allotAtMust(t, url, admin, "job", "show", id, "-o", "json")), &j); err != nil {
				t.Fatal(err)
			}
			if j.State == want {
				t.Logf("job %s is %s", id, j.State)
				break
			}
			if time.Now().After(deadline) || (j.State != "Queued" && j.State != "Preparing") {
				t.Errorf("job %s is %s (%s: %s), want %s; its log:\n%s", id, j.State, j.Reason, j.Detail, want,
					allotAt(t, url, admin, "job", "logs", id).out)
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// checkNoJobProcesses fails when a process still works in dir: allot up
// must stop its jobs before it exits.
func checkNoJobProcesses(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := processesIn(dir)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("after allot up exited, processes still run in %s: %v", dir, left)
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// processesIn lists the processes whose working directory is under dir.
func processesIn(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			out = append(out, pid)
		}
	}
	return out
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// shellQuote quotes s for bash as one word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestReadmeCommandsParse(t *testing.T) {
	block := "go run ./cmd/allot plan      # the example\ngo run ./cmd/allot plan --fleet a \\\n    --jobs b\n\n" +
		"export A=1 B=$(cat 'x # y')\ngo run ./cmd/allot job why <ID>\n"
	got := readmeCommands(block)
	want := []string{"go run ./cmd/allot plan", "go run ./cmd/allot plan --fleet a --jobs b", "export A=1 B=$(cat 'x # y')",
		"go run ./cmd/allot job why <ID>"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("readmeCommands = %q, want %q", got, want)
	}
	s := readmeScript(got, 9999)
	if !strings.Contains(s, `"$ALLOT" job why "$ID"`) || strings.Contains(s, "\ngo run") {
		t.Errorf("script does not substitute the binary and <ID>:\n%s", s)
	}
}

// TestReadmeWaitEndsWhenUpFails runs the README's wait for the admin token
// after an 'allot up' that exited without writing it (its port taken, say):
// the wait must end, so that the next command shows the failure, instead
// of spinning for ever.
func TestReadmeWaitEndsWhenUpFails(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	wait := ""
	for _, b := range tryItBlocks(string(text)) {
		for _, c := range readmeCommands(b) {
			if strings.HasPrefix(c, "until ") && strings.Contains(c, "admin-token") {
				wait = c
			}
		}
	}
	if wait == "" {
		t.Fatal(`README.md's "Try it" has no "until ... admin-token" wait`)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "false &\n"+wait)
	cmd.Dir = t.TempDir()
	if out, err := cmd.CombinedOutput(); ctx.Err() != nil {
		t.Fatalf("%s\nstill waits 10 s after up exited (%v): %s", wait, err, out)
	}
}
