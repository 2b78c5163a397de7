package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"

	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/store"
	"github.com/allot-dev/allot/internal/store/etcd"
)

// etcdElection is package etcd's Election as the server's.
type etcdElection struct{ e *etcd.Election }

func (x etcdElection) Campaign(ctx context.Context, url string) (server.Term, error) {
	t, err := x.e.Campaign(ctx, url)
	if err != nil {
		return nil, err
	}
	return etcdTerm{t}, nil
}

func (x etcdElection) Leader(ctx context.Context) (string, error) { return x.e.Leader(ctx) }

func (x etcdElection) Observe(ctx context.Context) <-chan string { return x.e.Observe(ctx) }

// etcdTerm is an etcd.Term whose fenced store is a store.Store.
type etcdTerm struct{ *etcd.Term }

func (t etcdTerm) Store() store.Store { return t.Term.Store() }

// forwardTransport is how a server that does not lead reaches the leader:
// plain http, or https trusting the system's authorities and every
// certificate in this server's own --tls-cert file (its chain, or the
// self-signed certificate the servers share).
func (f tlsFlags) forwardTransport() (http.RoundTripper, error) {
	if f.cert == "" {
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	data, err := os.ReadFile(f.cert)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert: %w", err)
	}
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert %s: %w", f.cert, err)
		}
		pool.AddCert(c)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}
