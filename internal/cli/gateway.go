package cli

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/gateway"
)

func newGatewayCmd() *cobra.Command {
	conn := &connection{}
	var listen, tokenFile, logLevel string
	cfg := gateway.Config{}
	cmd := &cobra.Command{
		Use:   "gateway --server URL --listen ADDR [--token-file FILE]",
		Short: "Route callers' requests to the replicas of inference endpoints",
		Long: `gateway is the address of allot's inference endpoints: a request for
http://LISTEN/NAME/PATH goes to a ready replica of endpoint NAME as /PATH
(with --domain D, a request for host NAME.D too, its path unchanged). It
learns the replicas from the API with a watch (GET /v1/routes, a long
poll), never per request, and keeps no state of its own: run several
behind DNS or a load balancer. 'allot up' runs one.

Each request goes to the ready replica with the fewest requests in flight
(below --replica-concurrency when set); a connection that fails before
the request was sent is retried on another replica. A replica gets
requests once its readiness check (the endpoint's readiness: {path,
timeout}) passes, and none once the server takes it out of the route to
stop it; the server waits for its requests in flight to end first.
Responses stream (token streaming). Callers may speak HTTP/1.1 or HTTP/2.

An endpoint with access: tenant (the default) takes only bearer tokens of
its tenant; access: public takes anyone. The Authorization header is never
forwarded to a replica. Unknown endpoint: 404; body over --max-body: 413;
no ready replica: 503 with Retry-After; a replica that fails the request
after it was sent: 502.

Every --report-every the gateway posts what it measured (requests,
errors, in flight, latency to the first byte and of the whole request, per
replica) to the server, which the autoscaler plans from and 'allot
endpoint show' prints; /-/metrics serves the same as Prometheus series,
/-/healthz says ok.

The token is a gateway token (allot token create --gateway), from
--token-file or $ALLOT_TOKEN, never the command line. It prints
"listening on http://ADDR" once it serves and stops on SIGTERM or Ctrl-C.`,
		Example: `  allot token create --gateway > /etc/allot/gateway-token   # on the control plane, mode 0600
  allot gateway --server http://10.0.0.1:8080 --token-file /etc/allot/gateway-token --listen 0.0.0.0:8000`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			server, token, err := daemonToken(conn, tokenFile, "a gateway token: allot token create --gateway")
			if err != nil {
				return err
			}
			cl, err := conn.newClient(server, token, os.Getenv)
			if err != nil {
				return err
			}
			cl.HTTP.Timeout = gateway.DefaultWait + 15*time.Second
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return Usage(fmt.Errorf("--log-level: %w", err))
			}
			if cfg.Name == "" {
				host, _ := os.Hostname()
				cfg.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
			}
			cfg.Source = cl
			cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			g, err := gateway.New(cfg)
			if err != nil {
				return Usage(err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("gateway: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			fmt.Fprintf(cmd.OutOrStdout(), "listening on %s\n", selfURL(ln.Addr(), false))
			return g.Serve(ctx, ln)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&conn.server, "server", "", "API server URL, or several comma-separated, tried in turn (default $ALLOT_SERVER, else "+DefaultServer+")")
	fl.StringVar(&conn.token, "token", "", "refused: use $ALLOT_TOKEN or --token-file")
	fl.StringVar(&tokenFile, "token-file", "", "file holding the gateway token (mode 0600)")
	fl.StringVar(&conn.ca, "ca-file", "", "PEM file of the authority an https server's certificate must chain to (default $ALLOT_CA, else the system's)")
	fl.StringVar(&listen, "listen", "127.0.0.1:8000", "address to serve callers on (port 0 picks a free one)")
	fl.StringVar(&cfg.Name, "name", "", "this gateway's name in its reports (default HOST-PID)")
	fl.StringVar(&cfg.Domain, "domain", "", "also route a request for host NAME.DOMAIN to endpoint NAME")
	fl.Int64Var(&cfg.MaxBody, "max-body", gateway.DefaultMaxBody, "largest request body, in bytes (413 over it)")
	fl.IntVar(&cfg.ReplicaConcurrency, "replica-concurrency", 0, "requests in flight on one replica at most; past it on every replica, 503 (0: no bound)")
	fl.DurationVar(&cfg.ReportEvery, "report-every", gateway.DefaultReportEvery, "interval of the reports to the server")
	fl.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return cmd
}
