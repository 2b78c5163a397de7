package cli

import (
	"context"
	"crypto/x509"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/store/etcd/etcdtest"
	"github.com/allot-dev/allot/internal/tlstest"
)

// allot server --tls-cert/--tls-key serves the API over https only, on a
// three-member etcd that requires client certificates: its in-process
// agents register over https, a client that names the authority gets
// answers, one that does not (or that speaks http) gets none.
func TestServerTLS(t *testing.T) {
	certs := tlstest.Write(t, t.TempDir())
	c := etcdtest.StartTLS(t, 3, etcdtest.TLS{CertFile: certs.Cert, KeyFile: certs.Key, CAFile: certs.CA})
	data := t.TempDir()
	// The virtual agents' work directories: jobs run as other users must
	// be able to enter them.
	work := t.TempDir()
	for _, d := range []string{filepath.Dir(work), work} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", work)
	var out, errOut syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	// fatal stops the server before failing, so its log is complete.
	fatal := func(format string, args ...any) {
		t.Helper()
		cancel()
		select {
		case <-code:
		case <-time.After(20 * time.Second):
		}
		t.Fatalf(format+"\nserver log:\n%s", append(args, errOut.String())...)
	}
	go func() {
		code <- Run(ctx, []string{"server", "--data", data, "--listen", "127.0.0.1:0", "--agents", "virtual",
			"--fleet", "../../examples/fleet.yaml", "--tenants", "../../examples/tenants.yaml",
			"--tls-cert", certs.Cert, "--tls-key", certs.Key,
			"--store", "etcd://" + strings.Join(c.HostPorts(), ",") + "/tls-test",
			"--etcd-ca", certs.CA, "--etcd-cert", certs.Cert, "--etcd-key", certs.Key}, &out, &errOut)
	}()
	var addr string
	re := regexp.MustCompile(`listening on (https://127\.0\.0\.1:\d+)`)
	for deadline := time.Now().Add(30 * time.Second); addr == ""; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		} else if time.Now().After(deadline) {
			fatal("no %s within 30s:\n%s", re, out.String())
		}
	}
	token := readAdminToken(t, data)

	// The in-process agents trust the server's own certificate: their
	// nodes turn Ready.
	ready := regexp.MustCompile(`(?m)^eastus-h100-01\s.*\sReady\s`)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		o, e, code := run(t, "node", "list", "--server", addr, "--token", token, "--ca-file", certs.CA)
		if code != ExitOK {
			fatal("node list with --ca-file: exit %d: %s", code, e)
		}
		if ready.MatchString(o) {
			break
		}
		if time.Now().After(deadline) {
			fatal("nodes not Ready over https within 20s:\n%s", o)
		}
	}
	t.Setenv("ALLOT_CA", certs.CA)
	if _, e, code := run(t, "job", "list", "--server", addr, "--token", token); code != ExitOK {
		t.Errorf("job list with $ALLOT_CA: exit %d: %s", code, e)
	}
	t.Setenv("ALLOT_CA", "")
	if _, e, code := run(t, "job", "list", "--server", addr, "--token", token); code == ExitOK || !strings.Contains(e, "certificate") {
		t.Errorf("job list without the authority: exit %d: %s", code, e)
	}
	plain := strings.Replace(addr, "https://", "http://", 1)
	if _, e, code := run(t, "job", "list", "--server", plain, "--token", token); code == ExitOK {
		t.Errorf("job list over http to an https server: exit %d: %s", code, e)
	}
	cancel()
	select {
	case c := <-code:
		if c != ExitOK {
			t.Errorf("server exit %d: %s", c, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("server did not stop")
	}
}

// Certificate flags that cannot work are refused before anything starts,
// naming the flag; an etcd that wants a client certificate refuses a
// server without one, in bounded time.
func TestServerTLSFlags(t *testing.T) {
	certs := tlstest.Write(t, t.TempDir())
	base := []string{"server", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--agents", "simulated",
		"--fleet", "../../examples/fleet.yaml", "--tenants", "../../examples/tenants.yaml"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", certs.Cert}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-cert", certs.Cert, "--tls-key", certs.CA}, "--tls-cert/--tls-key"},
		{[]string{"--etcd-ca", certs.CA}, "need --store etcd://"},
		{[]string{"--store", "etcd://127.0.0.1:1", "--etcd-cert", certs.Cert}, "--etcd-cert and --etcd-key go together"},
		{[]string{"--store", "etcd://127.0.0.1:1", "--etcd-ca", certs.Key}, "--etcd-ca"},
	} {
		_, e, code := run(t, append(base[:len(base):len(base)], tc.args...)...)
		if code != ExitUsage || !strings.Contains(e, tc.want) {
			t.Errorf("%v: exit %d, want %d and %q: %s", tc.args, code, ExitUsage, tc.want, e)
		}
	}
	c := etcdtest.StartTLS(t, 1, etcdtest.TLS{CertFile: certs.Cert, KeyFile: certs.Key, CAFile: certs.CA})
	start := time.Now()
	_, e, code := run(t, append(base[:len(base):len(base)], "--store", "etcd://"+c.HostPorts()[0], "--etcd-ca", certs.CA)...)
	if code == ExitOK || !strings.Contains(e, c.HostPorts()[0]) {
		t.Errorf("etcd without a client certificate: exit %d: %s", code, e)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("gave up after %v", d)
	}
}

// readAdminToken reads the token allot server wrote into its data
// directory.
func readAdminToken(t *testing.T, data string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// The certificates of --tls-cert, as PEM, are what endpoint replicas are
// given to check the server by: they hold the whole chain and verify the
// server's certificate for its loopback name.
func TestCertPEMVerifiesTheServer(t *testing.T) {
	certs := tlstest.Write(t, t.TempDir())
	_, chain, err := tlsFlags{cert: certs.Cert, key: certs.Key}.api()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(certPEM(chain))) {
		t.Fatal("certPEM holds no certificate")
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("the server's certificate does not verify against certPEM: %v", err)
	}
	if certPEM(nil) != "" || certPool(nil) != nil {
		t.Error("no TLS: want no PEM and the system's roots")
	}
}
