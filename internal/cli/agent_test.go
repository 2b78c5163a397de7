package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAgentToken(t *testing.T) {
	file := filepath.Join(t.TempDir(), "node-token")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		flag, file string
		env        string
		want       string
		fails      string // in the error
	}{
		{name: "FlagRefused", flag: "on-the-command-line", env: "from-env", fails: "/proc/PID/cmdline"},
		{name: "File", file: file, env: "from-env", want: "from-file"},
		{name: "Env", env: "from-env", want: "from-env"},
		{name: "EmptyFile", file: empty, fails: "empty"},
		{name: "MissingFile", file: filepath.Join(t.TempDir(), "none"), fails: "--token-file"},
		{name: "None", fails: "no token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir())
			t.Setenv("ALLOT_CONFIG", "")
			t.Setenv("ALLOT_TOKEN", tc.env)
			_, tok, err := agentToken(&connection{token: tc.flag}, agentFlags{tokenFile: tc.file})
			if tc.fails != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fails) {
					t.Fatalf("err %v, want one saying %q", err, tc.fails)
				}
				return
			}
			if err != nil || tok != tc.want {
				t.Fatalf("token %q, %v; want %q", tok, err, tc.want)
			}
			if _, set := os.LookupEnv("ALLOT_TOKEN"); set {
				t.Error("ALLOT_TOKEN still in the agent's environment, where its jobs' parent could leak it")
			}
		})
	}
}

func TestAgentHelpHidesToken(t *testing.T) {
	cmd := newAgentCmd()
	if f := cmd.Flags().Lookup("token"); f == nil || !f.Hidden {
		t.Fatal("--token should exist (to explain why it is refused) and be hidden")
	}
	for _, name := range []string{"token-file", "work", "uid-range", "run-as", "node-timeout"} {
		if cmd.Flags().Lookup(name) == nil {
			t.Errorf("no --%s", name)
		}
	}
}

func TestJobUsers(t *testing.T) {
	if _, _, err := jobUsers(agentFlags{uidRange: "10-20"}); err == nil {
		t.Error("a uid range among the system's accepted")
	}
	if _, _, err := jobUsers(agentFlags{uidRange: "1879048192-2013265919", runAs: "root"}); err == nil {
		t.Error("--run-as root accepted")
	}
	r, c, err := jobUsers(agentFlags{uidRange: "1879048192-2013265919", runAs: "nobody"})
	if err != nil {
		t.Skipf("no user nobody here: %v", err)
	}
	if r.First != 1879048192 || c == nil || c.Uid == 0 {
		t.Errorf("range %v credential %+v", r, c)
	}
}

// --keep-job-files 0 keeps job files for ever; a negative one is a usage
// error naming the flag.
func TestAgentKeepJobFiles(t *testing.T) {
	if got := off(time.Duration(0)); got >= 0 {
		t.Errorf("--keep-job-files 0 is %v, want negative (for ever)", got)
	}
	if got := off(48 * time.Hour); got != 48*time.Hour {
		t.Errorf("--keep-job-files 48h is %v", got)
	}
	isolate(t)
	t.Setenv("ALLOT_TOKEN", "tok")
	_, errOut, code := runCLI(t, "agent", "--node", "n1", "--gpus", "virtual:1xT4", "--data", t.TempDir(), "--keep-job-files", "-1h")
	if code != ExitUsage || !strings.Contains(errOut, "--keep-job-files -1h0m0s: want 0 (for ever) or more") {
		t.Errorf("exit %d, %q", code, errOut)
	}
}

// --health-check-every and --health-check-timeout must be above 0.
func TestAgentHealthCheckFlags(t *testing.T) {
	isolate(t)
	for _, flag := range []string{"--health-check-every", "--health-check-timeout"} {
		t.Setenv("ALLOT_TOKEN", "tok") // the agent takes it out of its environment
		_, errOut, code := runCLI(t, "agent", "--node", "n1", "--gpus", "virtual:1xT4", "--data", t.TempDir(), "--health-check", "true", flag, "0s")
		if code != ExitUsage || !strings.Contains(errOut, "want durations above 0") {
			t.Errorf("%s 0s: exit %d, %q", flag, code, errOut)
		}
	}
}

func TestParseJobEnv(t *testing.T) {
	lookup := func(name string) (string, bool) {
		if name == "LD_LIBRARY_PATH" {
			return "/usr/local/nvidia/lib64", true
		}
		return "", false
	}
	got, err := parseJobEnv([]string{"LD_LIBRARY_PATH", "PATH=/opt/conda/bin:/usr/bin", "EMPTY="}, lookup)
	if err != nil || len(got) != 3 || got["LD_LIBRARY_PATH"] != "/usr/local/nvidia/lib64" || got["PATH"] != "/opt/conda/bin:/usr/bin" || got["EMPTY"] != "" {
		t.Fatalf("parseJobEnv: %v, %v", got, err)
	}
	for arg, want := range map[string]string{
		"ALLOT_TOKEN=x":          "allot sets it",
		"ALLOT_TOKEN":            "allot sets it",
		"CUDA_VISIBLE_DEVICES=0": "allot sets it",
		"NCCL_DEBUG":             "not set in the agent's environment",
		"1X=2":                   "want NAME=VALUE or NAME",
		"=x":                     "want NAME=VALUE or NAME",
	} {
		if _, err := parseJobEnv([]string{arg}, lookup); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--job-env %s: %v, want an error saying %q", arg, err, want)
		}
	}
}

func FuzzParseJobEnv(f *testing.F) {
	for _, s := range []string{"LD_LIBRARY_PATH", "PATH=/usr/bin", "ALLOT_TOKEN=x", "=", "A=B=C", "é=1"} {
		f.Add(s)
	}
	lookup := func(string) (string, bool) { return "v", true }
	f.Fuzz(func(t *testing.T, arg string) {
		env, err := parseJobEnv([]string{arg}, lookup)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--job-env ") {
				t.Fatalf("error %q does not name the flag", err)
			}
			return
		}
		for name := range env {
			if strings.HasPrefix(name, "ALLOT_") || !envName.MatchString(name) {
				t.Fatalf("%q accepted as %q", arg, name)
			}
		}
	})
}
