package cli

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/allot-dev/allot/internal/store/etcd"
	"github.com/allot-dev/allot/internal/store/etcd/etcdtest"
)

func TestParseStoreFlag(t *testing.T) {
	for _, tc := range []struct {
		flag, boltDir, prefix, err string
	}{
		{flag: "", boltDir: "DATA"},
		{flag: "bolt:/var/lib/allot", boltDir: "/var/lib/allot"},
		{flag: "etcd://127.0.0.1:2379/prod", prefix: "/prod/"},
		{flag: "etcd://a:1,b:2", prefix: etcd.DefaultPrefix},
		{flag: "bolt:", err: "bolt: needs a directory"},
		{flag: "etcd://a", err: "store.endpoints[0]"},
		{flag: "consul://a:1", err: "want bolt:DIR or etcd://"},
		{flag: "/var/lib/allot", err: "want bolt:DIR or etcd://"},
	} {
		w, err := parseStoreFlag(tc.flag, "DATA")
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--store") {
				t.Errorf("%q: err %v, want --store and %q", tc.flag, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.flag, err)
		case w.boltDir != tc.boltDir || (tc.prefix == "") != (w.etcd == nil) || (w.etcd != nil && w.etcd.Prefix != tc.prefix):
			t.Errorf("%q: got %+v", tc.flag, w)
		}
	}
}

// FuzzStoreFlag: any --store value is accepted or refused with an error
// that names the flag; never a panic, and exactly one kind of store.
func FuzzStoreFlag(f *testing.F) {
	for _, s := range []string{"", "bolt:/d", "etcd://h:1/p", "etcd://h:1,h:2", "bolt:", "etcd://", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, flag string) {
		w, err := parseStoreFlag(flag, "DATA")
		if err != nil {
			if !strings.Contains(err.Error(), "--store") {
				t.Fatalf("%q: error %q does not name --store", flag, err)
			}
			return
		}
		if (w.boltDir == "") == (w.etcd == nil) {
			t.Fatalf("%q: %+v is not exactly one store", flag, w)
		}
	})
}

// allot server --store etcd://… starts on an embedded etcd, serves
// /healthz, keeps its state under the prefix, and stops cleanly.
func TestServerOnEtcd(t *testing.T) {
	c := etcdtest.Start(t, 1)
	data := t.TempDir()
	out, errOut, stop := startServer(t, data, "--store", "etcd://"+strings.Join(c.HostPorts(), ",")+"/cli-test")
	addr := waitFor(t, out, regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`))[1]
	resp, err := http.Get(addr + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	got, err := cli.Get(t.Context(), "/cli-test/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || got.Count == 0 {
		t.Fatalf("keys under /cli-test/: %v %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(data, "allot.db")); !os.IsNotExist(err) {
		t.Errorf("a bolt file was made beside the etcd store: %v", err)
	}
	if c := stop(); c != ExitOK {
		t.Errorf("server exit %d: %s", c, errOut.String())
	}
	if !strings.Contains(errOut.String(), "kind=etcd") {
		t.Errorf("no store line in the log:\n%s", errOut.String())
	}
}

// An unreachable etcd fails the start with an error naming it, in bounded
// time.
func TestServerOnEtcdUnreachable(t *testing.T) {
	start := time.Now()
	_, errOut, code := run(t, "server", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--agents", "simulated",
		"--fleet", "../../examples/fleet.yaml", "--tenants", "../../examples/tenants.yaml", "--store", "etcd://127.0.0.1:1")
	if code == ExitOK || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("gave up after %v", d)
	}
}

// A server whose output is not a terminal (a log file, the journal) writes
// its new admin token to DATA/admin-token only, never into that output.
func TestServerKeepsTheTokenOutOfItsLog(t *testing.T) {
	data := t.TempDir()
	out, errOut, stop := startServer(t, data)
	waitFor(t, out, regexp.MustCompile(`admin token created in .*admin-token \(printed only to a terminal\)`))
	stop()
	token, err := os.ReadFile(filepath.Join(data, "admin-token"))
	if err != nil || len(strings.TrimSpace(string(token))) < 32 {
		t.Fatalf("admin-token: %q %v", token, err)
	}
	// The key that seals registry credentials: made once, 0600, never
	// printed; a second start reads it, a key file others may read is
	// refused.
	keyPath := filepath.Join(data, "secret-key")
	key, err := os.ReadFile(keyPath)
	if st, serr := os.Stat(keyPath); err != nil || serr != nil || st.Mode().Perm() != 0o600 || len(strings.TrimSpace(string(key))) != 64 {
		t.Fatalf("secret-key: %q %v %v", key, err, serr)
	}
	for name, s := range map[string]string{"output": out.String(), "log": errOut.String()} {
		if strings.Contains(s, strings.TrimSpace(string(token))) {
			t.Errorf("the admin token is in the server's %s:\n%s", name, s)
		}
		if strings.Contains(s, strings.TrimSpace(string(key))) {
			t.Errorf("the secret key is in the server's %s:\n%s", name, s)
		}
	}
	_, _, stop = startServer(t, data)
	stop()
	if again, _ := os.ReadFile(keyPath); string(again) != string(key) {
		t.Errorf("a second start changed the secret key")
	}
	if err := os.Chmod(keyPath, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut2, code := run(t, "server", "--data", data, "--listen", "127.0.0.1:0", "--agents", "simulated",
		"--fleet", "../../examples/fleet.yaml", "--tenants", "../../examples/tenants.yaml")
	if code == ExitOK || !strings.Contains(errOut2, "chmod 600") {
		t.Errorf("a secret key others may read: exit %d: %s", code, errOut2)
	}
}

// startServer runs 'allot server' on data with the example fleet, simulated
// agents and extra, in the background; stop stops it and returns its exit
// code, failing the test when it does not stop within 15 s.
func startServer(t *testing.T, data string, extra ...string) (out, errOut *syncBuffer, stop func() int) {
	t.Helper()
	out, errOut = &syncBuffer{}, &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	code := make(chan int, 1)
	args := append([]string{"server", "--data", data, "--listen", "127.0.0.1:0", "--agents", "simulated",
		"--fleet", "../../examples/fleet.yaml", "--tenants", "../../examples/tenants.yaml"}, extra...)
	go func() { code <- Run(ctx, args, out, errOut) }()
	return out, errOut, func() int {
		t.Helper()
		cancel()
		select {
		case c := <-code:
			return c
		case <-time.After(15 * time.Second):
			t.Fatal("server did not stop")
			return -1
		}
	}
}
