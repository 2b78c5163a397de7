package etcdtest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/allot-dev/allot/internal/store"
)

// readyWithin bounds the wait for members to serve.
const readyWithin = 30 * time.Second

// Cluster is a running set of embedded etcd members.
type Cluster struct {
	t         testing.TB
	mu        sync.Mutex // guards the etcd field of members
	members   []*member
	clientTLS *transport.TLSInfo // nil: plain http for clients
	fsync     bool               // members fsync their log and backend (Fsync)
}

// Option changes how Start runs the members.
type Option func(*Cluster)

// Fsync makes members fsync their write-ahead log and backend before they
// answer, as a production etcd does, instead of running with
// UnsafeNoFsync: for benchmarks of durable writes.
func Fsync() Option { return func(c *Cluster) { c.fsync = true } }

// TLS names the PEM files members serve clients with: their certificate
// and key, and the authority a client's certificate must chain to.
type TLS struct {
	CertFile, KeyFile, CAFile string
}

type member struct {
	name    string
	dir     string
	client  url.URL
	peer    url.URL
	initial string      // the --initial-cluster of every member
	etcd    *embed.Etcd // nil while stopped
}

// Start runs an n-member cluster until the test ends.
func Start(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	return start(t, n, nil, opts...)
}

// StartTLS runs an n-member cluster that serves clients over https only
// and requires a client certificate signed by tls.CAFile (etcd's
// --client-cert-auth); members talk to each other in plain http.
func StartTLS(t testing.TB, n int, tls TLS) *Cluster {
	t.Helper()
	return start(t, n, &transport.TLSInfo{CertFile: tls.CertFile, KeyFile: tls.KeyFile, TrustedCAFile: tls.CAFile, ClientCertAuth: true})
}

func start(t testing.TB, n int, clientTLS *transport.TLSInfo, opts ...Option) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("etcdtest: %d members", n)
	}
	base := t.TempDir()
	c := &Cluster{t: t, clientTLS: clientTLS}
	for _, o := range opts {
		o(c)
	}
	scheme := "http"
	if clientTLS != nil {
		scheme = "https"
	}
	t.Cleanup(c.close)
	// A port free a moment ago may be taken by another test before the
	// member binds it: then the cluster starts again on other ports.
	for try := 1; ; try++ {
		err := c.startNew(filepath.Join(base, fmt.Sprintf("try%d", try)), n, scheme)
		if err == nil {
			return c
		}
		c.close()
		if !errors.Is(err, syscall.EADDRINUSE) || try == portTries {
			t.Fatalf("etcdtest: %v", err)
		}
	}
}

// portTries bounds the starts of a new cluster that lost a port to
// another test.
const portTries = 5

// startNew starts n new members under dir on ports free a moment ago and
// waits until all serve.
func (c *Cluster) startNew(dir string, n int, scheme string) error {
	c.mu.Lock()
	c.members = nil
	c.mu.Unlock()
	var initial []string
	for i := range n {
		m := &member{name: fmt.Sprintf("m%d", i), dir: filepath.Join(dir, fmt.Sprintf("m%d", i))}
		m.client = url.URL{Scheme: scheme, Host: freeAddr(c.t)}
		m.peer = url.URL{Scheme: "http", Host: freeAddr(c.t)}
		initial = append(initial, m.name+"="+m.peer.String())
		c.mu.Lock()
		c.members = append(c.members, m)
		c.mu.Unlock()
	}
	for _, m := range c.members {
		m.initial = strings.Join(initial, ",")
	}
	// Members of a new cluster wait for each other: start all, then wait.
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range c.members {
		wg.Go(func() { errs[i] = c.start(i) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("start member %d: %w", i, err)
		}
	}
	return nil
}

// freeAddr returns a loopback address with a port free a moment ago (a
// variable for the test that makes it lose the race).
var freeAddr = func(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// config is member m's embed configuration.
func (c *Cluster) config(m *member) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenClientUrls = []url.URL{m.client}
	cfg.AdvertiseClientUrls = []url.URL{m.client}
	cfg.ListenPeerUrls = []url.URL{m.peer}
	cfg.AdvertisePeerUrls = []url.URL{m.peer}
	cfg.InitialCluster = m.initial
	cfg.InitialClusterToken = "allot-etcdtest"
	cfg.ClusterState = embed.ClusterStateFlagNew // ignored once the data dir exists
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.LogLevel = "error"
	cfg.MaxTxnOps = store.MaxTxnOps
	cfg.MaxRequestBytes = 4 << 20
	cfg.UnsafeNoFsync = !c.fsync
	cfg.TickMs, cfg.ElectionMs = 50, 500
	if c.clientTLS != nil {
		cfg.ClientTLSInfo = *c.clientTLS
	}
	return cfg
}

func (c *Cluster) start(i int) error {
	m := c.members[i]
	e, err := embed.StartEtcd(c.config(m))
	if err != nil {
		return err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return err
	case <-time.After(readyWithin):
		e.Close()
		return fmt.Errorf("not ready within %v", readyWithin)
	}
	c.mu.Lock()
	m.etcd = e
	c.mu.Unlock()
	return nil
}

// Endpoints returns every member's client URL, stopped ones included.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.client.String()
	}
	return out
}

// HostPorts returns every member's client address as HOST:PORT, the form
// an etcd:// store URL takes.
func (c *Cluster) HostPorts() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.client.Host
	}
	return out
}

// Stop stops member i as a crash would, without handing its leadership
// over first (a graceful stop of a leader waits for the transfer, seconds);
// its data stays for Restart.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	e := c.members[i].etcd
	c.members[i].etcd = nil
	c.mu.Unlock()
	if e == nil {
		c.t.Fatalf("etcdtest: member %d is not running", i)
	}
	e.Server.HardStop()
	e.Close()
}

// Restart starts stopped member i again on its ports and data.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if err := c.start(i); err != nil {
		c.t.Fatalf("etcdtest: restart member %d: %v", i, err)
	}
}

func (c *Cluster) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.members {
		if m.etcd != nil {
			m.etcd.Close()
			m.etcd = nil
		}
	}
}

// Rev returns the cluster's revision, read linearizably through any
// member.
func (c *Cluster) Rev() int64 { return c.rev(c.Endpoints(), false) }

// MemberRev returns the revision member i has applied, as it answers
// alone (a serializable read): behind the cluster's while it catches up.
func (c *Cluster) MemberRev(i int) int64 { return c.rev(c.Endpoints()[i:i+1], true) }

func (c *Cluster) rev(endpoints []string, serializable bool) int64 {
	c.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, TLS: c.clientTLSConfig(),
		Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatalf("etcdtest: %v", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithCountOnly()}
	if serializable {
		opts = append(opts, clientv3.WithSerializable())
	}
	resp, err := cli.Get(ctx, "/", opts...)
	if err != nil {
		c.t.Fatalf("etcdtest: read revision: %v", err)
	}
	return resp.Header.Revision
}

// clientTLSConfig is what a client of a StartTLS cluster presents: the
// members' own certificate; nil for a plain cluster.
func (c *Cluster) clientTLSConfig() *tls.Config {
	if c.clientTLS == nil {
		return nil
	}
	cfg, err := c.clientTLS.ClientConfig()
	if err != nil {
		c.t.Fatalf("etcdtest: client TLS: %v", err)
	}
	return cfg
}
