package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Serve serves g to callers on ln, HTTP/1.1 and HTTP/2 without TLS (h2c),
// and runs its watch and reports, until ctx ends; requests in flight then
// get 10 s to finish. It is how allot gateway and allot bench gateway
// serve.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true) // h2c: HTTP/2 without TLS, for callers that speak it
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, Protocols: &protocols}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- g.Run(runCtx) }()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	shut, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	_ = srv.Shutdown(shut)
	cancel()
	<-ran
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
