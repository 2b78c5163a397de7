package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/api"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/store/bolt"
)

// serveFlags are the flags shared by allot server and allot up.
type serveFlags struct {
	data, listen, fleet, tenants string
	tick                         time.Duration
	rate                         float64
	burst                        int
	logLevel                     string
}

func (f *serveFlags) register(cmd *cobra.Command, dataDefault string) {
	fl := cmd.Flags()
	fl.StringVar(&f.data, "data", dataDefault, "directory of the store and the admin token")
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to serve the API on (port 0 picks a free one)")
	fl.StringVar(&f.fleet, "fleet", "examples/fleet.yaml", "fleet file")
	fl.StringVar(&f.tenants, "tenants", "examples/tenants.yaml", "tenants, partitions, quotas and reservations file")
	fl.DurationVar(&f.tick, "tick", server.DefaultTick, "interval of scheduling cycles when nothing happens")
	fl.Float64Var(&f.rate, "rate-limit", api.DefaultRate, "requests per second per tenant (0: no limit)")
	fl.IntVar(&f.burst, "rate-burst", api.DefaultBurst, "requests a tenant may make at once")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
}

func newServerCmd() *cobra.Command {
	f := serveFlags{}
	cmd := &cobra.Command{
		Use:   "server --data DIR --listen ADDR --fleet F --tenants T",
		Short: "Run the allot control plane",
		Long: `server runs allot's control plane on an embedded store in --data: the HTTP
API (docs/api.md), the scheduling loop and /metrics. On its first start it
creates an admin token, prints it once and writes it to DATA/admin-token
(mode 0600). Nodes are simulated: every fleet node is as healthy as the
fleet file says, and a running job with a duration succeeds after it.

It prints "listening on http://HOST:PORT" once it serves, and shuts down
cleanly on SIGINT or SIGTERM.`,
		Example: `  allot server --data /var/lib/allot --listen 0.0.0.0:8080 \
      --fleet examples/fleet.yaml --tenants examples/tenants.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, false)
		},
	}
	f.register(cmd, "")
	_ = cmd.MarkFlagRequired("data")
	return cmd
}

// serve runs the control plane until ctx ends. With up set it also prints
// what to try next.
func serve(ctx context.Context, out, errOut io.Writer, f serveFlags, up bool) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return Usage(fmt.Errorf("--log-level: %w", err))
	}
	log := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: level}))
	fleet, err := spec.ReadFleet(f.fleet)
	if err != nil {
		return Usage(err)
	}
	tenancy, err := spec.ReadTenancy(f.tenants, fleet)
	if err != nil {
		return Usage(err)
	}
	if err := os.MkdirAll(f.data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	st, err := bolt.Open(filepath.Join(f.data, "allot.db"), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	srv, err := server.New(ctx, server.Config{Store: st, Fleet: fleet, Tenancy: tenancy, Tick: f.tick, Logger: log})
	if err != nil {
		return err
	}
	tokenPath := filepath.Join(f.data, "admin-token")
	token, created, err := srv.EnsureAdminToken(ctx, tokenPath)
	if err != nil {
		return err
	}
	rate := f.rate
	if rate == 0 {
		rate = -1 // no limit
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{
		Handler:           api.New(api.Config{Server: srv, Rate: rate, Burst: f.burst, Logger: log}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	runErr := make(chan error, 1)
	go func() { runErr <- srv.Run(runCtx) }()
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()

	url := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "listening on %s\n", url)
	if created {
		fmt.Fprintf(out, "admin token (shown once; also in %s): %s\n", tokenPath, token)
	} else {
		fmt.Fprintf(out, "admin token: in %s\n", tokenPath)
	}
	if up {
		fmt.Fprintf(out, `
Try next, in another shell:
  export ALLOT_SERVER=%s ALLOT_TOKEN=$(cat %s)
  allot job submit -f examples/jobs/copilot-chat.yaml
  allot job list
  allot job why <id>
Metrics: %s/metrics   API: %s/v1/openapi.json   Stop: Ctrl-C
`, url, shellQuote(tokenPath), url, url)
	}

	var failed error
	select {
	case <-ctx.Done():
	case err := <-runErr:
		failed = err
		runErr <- nil
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			failed = fmt.Errorf("serve: %w", err)
		}
	}
	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutCtx)
	stop()
	if err := <-runErr; err != nil && failed == nil {
		failed = err
	}
	if err := st.Close(); err != nil && failed == nil {
		failed = fmt.Errorf("close store: %w", err)
	}
	return failed
}

func shellQuote(s string) string {
	for _, r := range s {
		if !(r == '/' || r == '.' || r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return "'" + s + "'"
		}
	}
	return s
}
