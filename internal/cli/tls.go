package cli

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// tlsFlags are the certificate flags of allot server: the API's own
// certificate, and the client certificate and authority for etcd.
type tlsFlags struct {
	cert, key                 string // --tls-cert, --tls-key
	etcdCert, etcdKey, etcdCA string // --etcd-cert, --etcd-key, --etcd-ca
}

func (f *tlsFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.cert, "tls-cert", "", "PEM certificate (chain) to serve the API over https with; needs --tls-key")
	fl.StringVar(&f.key, "tls-key", "", "PEM private key of --tls-cert")
	fl.StringVar(&f.etcdCA, "etcd-ca", "", "PEM authority the etcd members' certificates must chain to (turns on TLS to etcd)")
	fl.StringVar(&f.etcdCert, "etcd-cert", "", "PEM client certificate to present to etcd (with --etcd-key; for etcd's --client-cert-auth)")
	fl.StringVar(&f.etcdKey, "etcd-key", "", "PEM private key of --etcd-cert")
}

// api returns the API's TLS configuration, nil when --tls-cert and
// --tls-key are both empty, and the certificates of --tls-cert: the
// in-process agents of allot up trust exactly those (certPool), and so do
// endpoint replicas, which are given them as PEM (certPEM).
func (f tlsFlags) api() (*tls.Config, []*x509.Certificate, error) {
	if f.cert == "" && f.key == "" {
		return nil, nil, nil
	}
	if f.cert == "" || f.key == "" {
		return nil, nil, errors.New("--tls-cert and --tls-key go together: give both or neither")
	}
	pair, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		return nil, nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	certs := make([]*x509.Certificate, len(pair.Certificate))
	for i, der := range pair.Certificate {
		if certs[i], err = x509.ParseCertificate(der); err != nil {
			return nil, nil, fmt.Errorf("--tls-cert %s: %w", f.cert, err)
		}
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	return cfg, certs, nil
}

// certPool returns a pool of certs; nil for none (the system's roots).
func certPool(certs []*x509.Certificate) *x509.CertPool {
	if len(certs) == 0 {
		return nil
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool
}

// certPEM returns certs PEM-encoded, "" for none.
func certPEM(certs []*x509.Certificate) string {
	var b strings.Builder
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}) // a strings.Builder does not fail
	}
	return b.String()
}

// etcd returns the TLS configuration of the connections to etcd, nil when
// no --etcd-* flag is given.
func (f tlsFlags) etcd() (*tls.Config, error) {
	if f.etcdCA == "" && f.etcdCert == "" && f.etcdKey == "" {
		return nil, nil
	}
	if (f.etcdCert == "") != (f.etcdKey == "") {
		return nil, errors.New("--etcd-cert and --etcd-key go together: give both or neither")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.etcdCA != "" {
		data, err := os.ReadFile(f.etcdCA)
		if err != nil {
			return nil, fmt.Errorf("--etcd-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("--etcd-ca %s: no PEM certificate in it", f.etcdCA)
		}
	}
	if f.etcdCert != "" {
		pair, err := tls.LoadX509KeyPair(f.etcdCert, f.etcdKey)
		if err != nil {
			return nil, fmt.Errorf("--etcd-cert/--etcd-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
