package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
)

// TrustPEM makes the client verify an https server against the
// certificates in pemData (a private authority, or the server's own
// self-signed certificate) instead of the system's roots. It fails when
// pemData holds no certificate.
func (c *Client) TrustPEM(pemData []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		return errors.New("no PEM certificate in it")
	}
	c.Trust(pool)
	return nil
}

// Trust makes the client verify an https server against the certificates
// in pool instead of the system's roots.
func (c *Client) Trust(pool *x509.CertPool) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	c.HTTP.Transport = t
}
